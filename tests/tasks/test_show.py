"""`python -m tasks.show` and the task config group."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks import FAMILIES, generate, size_schema
from tasks.show import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("family", FAMILIES)
def test_show_prints_plan_invariants_traps_and_drift(family, capsys):
    assert main([family, "3"]) == 0
    out = capsys.readouterr().out
    spec = generate(family, 3)
    for needle in (f"[task:{spec.task_id}]", "INVARIANTS", "PLAN", "TRAPS", "DRIFT", "FINAL CHECK", "SIZES"):
        assert needle in out
    assert all(f"[step:{s.id}]" in out and s.check in out for s in spec.steps)
    assert all(f"[inv:{i.id}]" in out for i in spec.all_invariants())
    assert all(f"[trap:{t.id}]" in out for t in spec.traps)
    assert all(f"before {d.before_step}" in out and d.kind in out for d in spec.drift)


def test_show_knobs_files_and_errors(capsys):
    assert main(["config_rename", "1", "steps=7", "--file", "pytest.ini"]) == 0
    out = capsys.readouterr().out
    assert "[task:config_rename/1/steps=7]" in out and "===== pytest.ini" in out
    assert main(["config_rename", "1", "steps=40"]) == 2
    assert "task.size.steps: Input should be less than or equal to 16, got 40" in capsys.readouterr().err


def test_show_runs_as_a_module():
    proc = subprocess.run(
        [sys.executable, "-m", "tasks.show", "signature_migration", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.startswith("[task:signature_migration/0]")


@pytest.mark.parametrize("family", FAMILIES)
def test_task_config_group(family):
    from bench.config import compose
    from bench.core.knobs import defaults

    conf = yaml.safe_load((ROOT / "conf" / "task" / f"{family}.yaml").read_text())
    assert (conf["family"], conf["seed"]) == (family, 0)
    # The size knobs are stated once, by the family's schema, whose defaults the YAML extends.
    assert conf["defaults"] == [f"/knobs/task/{family}@size", "_self_"] and "size" not in conf
    size = compose([f"task={family}"]).task.size
    assert dict(size) == defaults(size_schema(family))  # every knob there, so task.size.X=... overrides work
    given = {k: v for k, v in size.items() if v is not None}  # null: seed-dependent
    assert generate(family, conf["seed"], **given).task_id == f"{family}/0"
