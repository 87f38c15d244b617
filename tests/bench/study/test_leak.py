"""Containers never leak: a SIGKILLed harness leaves its container behind, and the sweep a
study runs at its start removes it (and its working copy) -- but only containers whose
creating process is dead: other studies running at the same time keep theirs."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from bench.config import ROOT
from bench.sandbox import sweep
from bench.sandbox.docker import _client, owner_labels

pytestmark = pytest.mark.docker


def _ids(tag: str) -> set[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", "--filter", f"label=ctxbench.leaktest={tag}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def _start(image: str, tag: str, labels: dict[str, str]) -> str:
    c = _client().containers.run(
        image,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        init=True,
        labels={"ctxbench": "1", "ctxbench.leaktest": tag, **labels},
    )
    return c.id


def test_orphan_sweep_removes_only_containers_of_dead_processes(sandbox_cfg, docker_ready):
    tag = uuid.uuid4().hex[:8]
    dead = subprocess.Popen(["true"])
    dead.wait()
    mine = owner_labels()
    try:
        gone_pid = _start(sandbox_cfg.image, tag, {**mine, "ctxbench.pid": str(dead.pid)})
        reused_pid = _start(sandbox_cfg.image, tag, {**mine, "ctxbench.pid_start": "1"})  # pid reused since
        live = _start(sandbox_cfg.image, tag, mine)  # this test process: a study running right now
        foreign = _start(sandbox_cfg.image, tag, {**mine, "ctxbench.host": "another-host"})
        unlabelled = _start(sandbox_cfg.image, tag, {})  # made before owner labels existed
        # Not how many this sweep counts: any study starting on this engine meanwhile (another
        # helper's, or test_sigkilled_harness... in another xdist worker) sweeps orphans too and may
        # remove these two first (this test once saw `0 >= 2` in the full suite). What is left is
        # the claim: whichever sweep ran, the orphans are gone and the others kept.
        sweep(orphans_only=True)
        assert _ids(tag) == {live, foreign, unlabelled}
        assert gone_pid not in _ids(tag) and reused_pid not in _ids(tag)
    finally:
        sweep({"ctxbench.leaktest": tag})  # by label: only this test's containers
    assert _ids(tag) == set()


HARNESS = textwrap.dedent("""
    import sys, time
    from bench.sandbox import SandboxConfig, create
    from bench.config import compose
    cfg = SandboxConfig.from_dict(compose(["sandbox=docker"]).sandbox)
    sb = create(cfg, {"a.py": "x = 1\\n"}, "leak-" + sys.argv[1], labels={"ctxbench.leaktest": sys.argv[1]})
    print(sb.container_id, sb.workdir, flush=True)
    time.sleep(600)
""")


def test_sigkilled_harness_leaks_then_study_start_sweep_removes_container_and_workdir(
    tmp_path, monkeypatch, docker_ready
):
    from hydra import compose, initialize_config_dir

    from bench.study.callback import StudyCallback

    tag = uuid.uuid4().hex[:8]
    proc = subprocess.Popen([sys.executable, "-c", HARNESS, tag], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line, "the harness did not start its sandbox"
        cid, workdir = line.split()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert _ids(tag) == {cid} and Path(workdir).exists()  # SIGKILL: nothing could clean up

        # A study starting now (the real callback hook, on the real grid config) sweeps it.
        monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            cfg = compose(
                "config",
                overrides=[
                    "experiment=grid",
                    "task=config_rename",
                    "task.seed=0",
                    f"study.name=leak-{tag}",
                    f"hydra.sweep.dir={tmp_path}/sweep",
                ],
                return_hydra_config=True,
            )
        cb = StudyCallback()
        monkeypatch.setenv("CTXBENCH_STUDY", f"leak-{tag}")  # what the callback sets: undone after the test
        t0 = time.monotonic()
        cb.on_multirun_start(cfg)
        assert _ids(tag) == set(), "the study-start sweep must remove the dead harness's container"
        assert not Path(workdir).parent.exists(), "and its working copy"
        assert cb.total == 16  # a slice of the grid: 4 strategies x 4 arms, one family, one seed
        assert cb.parent_run_id
        # catches a sweep that hangs; not a speed target (it took 32 s at load 10)
        assert time.monotonic() - t0 < 120
    finally:
        if proc.poll() is None:
            proc.kill()
        sweep({"ctxbench.leaktest": tag})
