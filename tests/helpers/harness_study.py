"""A small study written by the harness itself, for the analysis tests.

`write_study(root)` runs the study the way a user does, through the command line:

    python -m bench -m study.name=demo strategy=raw,compaction
        arm=baseline,drift_compaction task.seed=0,1 rep=0,1 task.size.steps=6 sandbox=local
        hydra/launcher=ctxbench_joblib hydra.launcher.n_jobs=2

(16 sim trials of the shortest signature_migration task, sandboxed as host subprocesses so a
trial takes seconds; two joblib workers, as `experiment=grid` runs a study, so that the 2-core
CI machine runs two trials at a time: what a sim trial records does not depend on the launcher,
tests/bench/study/test_threads_launcher.py), then, in one more process
(`python -m tests.helpers.harness_study`), what real studies accumulate besides, each through
the same entry point (`bench.__main__`):

- a rerun of one trial with `resume=false`, which leaves an older duplicate;
- a trial whose provider fails (`model=replay` on an empty cassette): FAILED, provider_error;
- a second study `other` with two trials: one that succeeds, and one past its wall-clock limit
  (`limits.trial_timeout_s=1`): FINISHED, `timeout`, an agent failure the analysis counts;
- a study `broken` whose only trial FAILED.

What the harness logs is then read back from MLflow and checked against this design, so a
test that uses the study fails loudly when the harness did not produce it. Not produced
here: a KILLED run (the analysis treats it like FAILED; tests/bench/study covers the kill).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.config import ROOT

STRATEGIES = ("raw", "compaction")
ARMS = ("baseline", "drift_compaction")
SEEDS = (0, 1)
REPS = (0, 1)
SHRINK = ["task=signature_migration", "task.size.steps=6", "sandbox=local"]
LAUNCHER = ["hydra/launcher=ctxbench_joblib", "hydra.launcher.n_jobs=2"]
STUDY = "demo"
DUPLICATE = ("raw", "baseline", 0, 0)  # rerun with resume=false: its first run becomes the older duplicate
EXTRAS = [  # (overrides, MLflow status, failure_reason) of the trials added after the study
    (
        [f"study.name={STUDY}", "strategy=raw", "arm=baseline", "task.seed=0", "rep=0", "resume=false"],
        "FINISHED",
        None,
    ),
    (
        [
            f"study.name={STUDY}",
            "strategy=raw",
            "arm=drift_compaction",
            "task.seed=1",
            f"rep={len(REPS)}",
            "model=replay",
            "model.cassette={cassette}",
        ],
        "FAILED",
        "provider_error",
    ),
    (["study.name=other", "strategy=raw", "arm=baseline", "task.seed=0", "rep=0"], "FINISHED", None),
    (
        [
            "study.name=other",
            "strategy=raw",
            "arm=drift_compaction",
            "task.seed=1",
            "rep=0",
            "limits.trial_timeout_s=1",
        ],
        "FINISHED",
        "timeout",
    ),
    (
        [
            "study.name=broken",
            "strategy=raw",
            "arm=baseline",
            "task.seed=0",
            "rep=0",
            "model=replay",
            "model.cassette={cassette}",
        ],
        "FAILED",
        "provider_error",
    ),
]


@dataclass
class HarnessStudy:
    uri: str
    experiment: str
    study: str
    parent_run_id: str
    root: Path
    strategies: tuple[str, ...] = STRATEGIES
    arms: tuple[str, ...] = ARMS
    seeds: int = len(SEEDS)
    reps: int = len(REPS)
    finished: int = 0  # FINISHED, newest of their identity: what the analysis must keep
    excluded: int = 0  # in study `demo`: the older duplicate and the FAILED trial
    # study `demo`: (strategy, arm, seed, rep, status) -> run id
    run_ids: dict[tuple, str] = field(default_factory=dict)


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "CTXBENCH_RESULTS": str(root), "PYTHONPATH": str(ROOT)}


def _bench(args: list[str], root: Path, timeout: float = 1800) -> None:
    """Run one process to its end. In a session of its own: a timeout, or pytest-timeout's
    interrupt, ends its joblib workers too (killing the launcher alone leaves them running)."""
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed ({proc.returncode}):\n{err[-3000:]}")


def write_study(root: Path) -> HarnessStudy:
    """Run the study into `root` (results dir: mlflow.db, trials/) and describe what it holds."""
    _bench(
        [
            "-m",
            "bench",
            "-m",
            f"study.name={STUDY}",
            f"strategy={','.join(STRATEGIES)}",
            f"arm={','.join(ARMS)}",
            f"task.seed={','.join(map(str, SEEDS))}",
            f"rep={','.join(map(str, REPS))}",
            *SHRINK,
            *LAUNCHER,
        ],
        root,
    )
    _bench(["-m", "tests.helpers.harness_study", str(root)], root)
    return _describe(root)


def _describe(root: Path) -> HarnessStudy:
    from mlflow import MlflowClient

    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ctxbench")
    assert exp is not None, f"the harness wrote no experiment to {uri}"
    runs = client.search_runs([exp.experiment_id], max_results=1000, order_by=["attributes.start_time ASC"])
    (parent,) = [
        r for r in runs if r.data.tags.get("ctxbench.kind") == "study" and r.data.tags["study"] == STUDY
    ]
    out = HarnessStudy(uri, "ctxbench", STUDY, parent.info.run_id, root)
    trials = [r for r in runs if r.data.tags.get("ctxbench.kind") == "trial"]
    demo = [r for r in trials if r.data.tags["study"] == STUDY]
    for r in demo:  # oldest first, so the newest run of an identity wins
        t = r.data.tags
        out.run_ids[(t["strategy"], t["arm"], int(t["task_seed"]), int(t["rep"]), r.info.status)] = (
            r.info.run_id
        )
    main = [r for r in demo if int(r.data.tags["rep"]) in REPS and r.data.tags["model"] == "sim"]
    problems = [
        f"{r.info.run_name}: {r.info.status} {r.data.tags.get('failure_reason')}"
        for r in main
        if r.info.status != "FINISHED"
    ]
    assert not problems, f"the harness did not finish the study's trials: {problems}"
    cells = len(STRATEGIES) * len(ARMS) * len(SEEDS) * len(REPS)
    assert len(main) == cells + 1, f"expected {cells} trials and one rerun, found {len(main)}"
    failed = sorted((r.info.status, r.data.tags["failure_reason"]) for r in demo if r not in main)
    assert failed == [("FAILED", "provider_error")], failed
    other = [r for r in trials if r.data.tags["study"] == "other"]
    late = [
        (r.info.status, r.data.tags["failure_reason"], r.data.tags["outcome_class"])
        for r in other
        if r.data.tags["arm"] == "drift_compaction"
    ]
    assert late == [("FINISHED", "timeout", "agent_failure")], late
    out.finished, out.excluded = cells, 2
    return out


def _extras(root: Path) -> None:
    """The trials added after the study, in one process (python -m tests.helpers.harness_study ROOT)."""
    from bench.__main__ import main
    from bench.config import compose

    cassette = root / "empty-cassette.jsonl"
    cassette.write_text("")
    for overrides, _, _ in EXTRAS:
        try:
            main(compose([o.format(cassette=cassette) for o in overrides] + SHRINK))
        except SystemExit:  # an entry point may exit non-zero on a FAILED trial; _describe checks the run
            pass


if __name__ == "__main__":
    _extras(Path(sys.argv[1]))
