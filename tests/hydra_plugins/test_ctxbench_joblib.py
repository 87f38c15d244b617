"""hydra/launcher=ctxbench_joblib: Hydra's joblib launcher, but a worker installs the launch's
singleton state (and rescans Hydra's plugins) once per launch, not once per job, freezes its heap
after its first job, and sends back a job's status and return value without its configs. That
the trials it runs are the same as the threads launcher's is tests/bench/study/test_threads_launcher.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from bench.config import ROOT
from hydra_plugins.ctxbench_joblib.launcher import for_the_launcher

# A Hydra app whose job notes, on the Plugins singleton of its process, how many jobs saw it.
APP = """
import gc, os, hydra
from hydra.core.plugins import Plugins

FROZEN = gc.get_freeze_count
ASKED = [0]  # how often anything but this app asked for the frozen count (CPython walks the list)


def counted():
    ASKED[0] += 1
    return FROZEN()


@hydra.main(config_path=None, config_name=None, version_base="1.3")
def main(cfg):
    gc.get_freeze_count = counted
    p = Plugins.instance()
    seen = getattr(p, "ctxbench_jobs_seen", 0)
    p.ctxbench_jobs_seen = seen + 1
    with open(cfg.out, "a") as f:
        f.write(f"{os.getpid()} {cfg.x} {seen} {int(FROZEN() > 0)} {ASKED[0]}\\n")

if __name__ == "__main__":
    main()
"""


def _sweep(tmp_path: Path, launcher: str) -> list[list[str]]:
    app, out = tmp_path / "app.py", tmp_path / f"{launcher}.txt"
    app.write_text(APP)
    proc = subprocess.run(
        [
            sys.executable,
            str(app),
            "-m",
            "+x=1,2,3,4",
            f"+out={out}",
            f"hydra/launcher={launcher}",
            "hydra.launcher.n_jobs=2",
            f"hydra.searchpath=[file://{ROOT / 'conf'}]",
            f"hydra.sweep.dir={tmp_path / launcher}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return [line.split() for line in out.read_text().splitlines()]


@pytest.mark.timeout(300)
def test_a_worker_keeps_its_singletons_across_jobs(tmp_path):
    rows = _sweep(tmp_path, "ctxbench_joblib")
    assert sorted(r[1] for r in rows) == ["1", "2", "3", "4"]
    workers = {r[0] for r in rows}
    assert max(sum(r[0] == pid for r in rows) for pid in workers) >= 2, rows  # 4 jobs, 2 workers
    for pid in workers:  # one Plugins singleton per worker: scanned once, seen by each of its jobs
        assert sorted(int(r[2]) for r in rows if r[0] == pid) == list(range(sum(r[0] == pid for r in rows)))
        # its first job runs before the worker's heap is frozen, every later one after
        assert sorted((int(r[2]), r[3]) for r in rows if r[0] == pid) == [(0, "0")] + [
            (n, "1") for n in range(1, sum(r[0] == pid for r in rows))
        ]
    # whether it froze is remembered, not asked of the collector after every job (an O(heap) walk)
    assert {r[4] for r in rows} == {"0"}, rows
    # Hydra's own launcher, the same sweep: a new Plugins singleton (a rescan) for every job.
    assert [int(r[2]) for r in _sweep(tmp_path, "joblib")] == [0, 0, 0, 0]


def test_the_launcher_gets_status_and_value_not_configs():
    done = JobReturn(
        overrides=["+x=1"],
        cfg=OmegaConf.create({"x": 1}),
        hydra_cfg=OmegaConf.create({"h": 1}),
        working_dir="/w",
        task_name="app",
        status=JobStatus.COMPLETED,
        _return_value=42,
    )
    slim = for_the_launcher(done)
    assert (slim.cfg, slim.hydra_cfg) == (None, None)
    assert (slim.overrides, slim.working_dir, slim.task_name, slim.return_value) == (
        ["+x=1"],
        "/w",
        "app",
        42,
    )
    failed = for_the_launcher(
        JobReturn(
            overrides=["+x=2"],
            cfg=OmegaConf.create({}),
            status=JobStatus.FAILED,
            _return_value=ValueError("seed 2 broke"),
        )
    )
    with pytest.raises(ValueError, match="seed 2 broke"):  # what BasicSweeper.sweep re-raises
        _ = failed.return_value
