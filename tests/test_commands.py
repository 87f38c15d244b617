"""The console commands pyproject.toml declares ([project.scripts]) are the `python -m` commands
by another name: each loads, answers `--help` with its usage, and `ctxbench-run` hands its argv
to the same preflight and Hydra as `python -m bench`. The installed scripts are checked too when
the environment was installed from this pyproject (`make venv` reinstalls when it changes)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
# Each command and the `python -m` form it stands for (README.md's commands).
MODULE = {
    "ctxbench-run": "bench",
    "ctxbench-report": "analysis.report",
    "ctxbench-diff": "analysis.diff",
    "ctxbench-power": "analysis.power",
    "ctxbench-verify": "bench.eventlog.verify",
    "ctxbench-task": "tasks.show",
}


def test_every_user_facing_command_has_one_name_with_one_prefix():
    assert SCRIPTS.keys() == MODULE.keys()
    for name, target in SCRIPTS.items():
        module, _, func = target.partition(":")
        assert module in (MODULE[name], MODULE[name] + ".__main__"), (name, target)


@pytest.mark.parametrize("name", sorted(set(MODULE) - {"ctxbench-run"}))
def test_help_of_each_argparse_command(name, capsys):
    main = metadata.EntryPoint(name, SCRIPTS[name], "console_scripts").load()
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m {MODULE[name]}"), out[:200]


def test_run_passes_argv_to_preflight_then_hydra(monkeypatch, capsys):
    from bench import preflight

    cli = metadata.EntryPoint("ctxbench-run", SCRIPTS["ctxbench-run"], "console_scripts").load()
    import bench.__main__ as entry

    seen, built = [], object()
    monkeypatch.setattr(preflight, "check", lambda argv: seen.append(list(argv)) or built)
    monkeypatch.setattr(entry, "_prepared", None)
    monkeypatch.setattr(sys, "argv", ["ctxbench-run", "--help"])
    with pytest.raises(SystemExit) as exit_:
        cli()
    assert exit_.value.code == 0 and seen == [["--help"]]
    assert entry._prepared is built  # what preflight built is what the trial gets (bench.trial.runner.run)
    out = capsys.readouterr().out
    assert "strategy: " in out and "arm: baseline" in out  # Hydra's help lists the config groups

    monkeypatch.undo()  # the real preflight now: bad input is one line and exit 2, before Hydra runs
    monkeypatch.setattr(sys, "argv", ["ctxbench-run", "strategy=nonesuch"])
    with pytest.raises(SystemExit) as exit_:
        cli()
    assert exit_.value.code == 2
    assert "nonesuch" in capsys.readouterr().err


def test_installed_scripts_answer_help():
    try:
        installed = {
            ep.name: ep.value
            for ep in metadata.distribution("ctxbench").entry_points
            if ep.group == "console_scripts"
        }
    except metadata.PackageNotFoundError:
        installed = {}
    if installed != SCRIPTS:
        problem = (
            f"the installed ctxbench declares {sorted(installed)} but pyproject.toml {sorted(SCRIPTS)}; "
            "reinstall it (make venv, or pip install -e .)"
        )
        if os.environ.get("CTXBENCH_REQUIRE_DOCKER") == "1":
            pytest.fail(problem, pytrace=False)
        pytest.skip(problem)
    bindir = Path(sys.executable).parent
    for name in SCRIPTS:
        done = subprocess.run(
            [str(bindir / name), "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, (name, done.stderr[-2000:])
        assert "usage:" in done.stdout or "powered by Hydra" in done.stdout, (name, done.stdout[:300])
