"""One adversary trial through the real Docker sandbox, and what it left, observed the same way
whoever runs it: the test process (root or not), or another uid running this file as a script
(`python -m tests.bench.trial.adversary_run RESULTS ATTACK...` prints one JSON line per
attack; test_adversary.py runs it as a non-root user)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

from bench.config import compose, load
from bench.providers.attacks import ATTACKS
from bench.trial.runner import run


def _host_processes() -> list[str]:
    """This process's live descendants (host git, a local server...): none may outlive a trial."""
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{proc.pid} {proc.name()}")
        except psutil.NoSuchProcess:
            pass
    return out


def play(attack: str, results: Path) -> dict[str, Any]:
    os.environ["CTXBENCH_RESULTS"] = str(results)
    tcfg = load(compose(["model=adversary", f"model.attack={attack}", "task.size.steps=6",
                         f"limits.max_turns_per_step={len(ATTACKS[attack]) + 1}", f"study.name=adv-{attack}",
                         "resume=false"]))
    before = set(_host_processes())
    result = run(tcfg)
    left_procs = [p for p in _host_processes() if p not in before]
    from mlflow.tracking import MlflowClient

    mrun = MlflowClient(tcfg.tracking.uri).get_run(result.run_id)
    m, tags = mrun.data.metrics, mrun.data.tags
    records = [json.loads(line) for line in result.events_path.read_text().splitlines()]
    violations = [r["detail"] for r in records if r["kind"] == "policy_violation"]
    output = "\n".join(str(r.get("output", "")) for r in records if r["kind"] in ("tool_result", "check"))
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=ctxbench.run_id={result.run_id}"],
                          capture_output=True, text=True, check=True).stdout.split()
    return {"attack": attack, "uid": os.getuid(), "mlflow_status": mrun.info.status,
            "outcome_class": tags.get("outcome_class"), "success": m.get("success"),
            "failure_reason": tags.get("failure_reason"), "policy_violations": m.get("policy_violations"),
            "violation_events": len(violations), "violations": violations[:30],
            "errors": [r.get("detail", "")[:300] for r in records if r["kind"] == "error"],
            "metrics": {k: m.get(k, 0.0) for k in ("processes_killed", "tool_errors")},
            "containers_left": left, "output": output, "host_processes_left": left_procs,
            "checks_passed": [r.get("step") for r in records if r["kind"] == "check" and r.get("passed")],
            "scratch_left": sorted(p.name for p in Path(tempfile.gettempdir()).glob("ctxbench-sbx-*"))}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for name in sys.argv[2:]:
        try:
            obs = play(name, out)
        except Exception as exc:  # reported, so the test names the attack that broke the harness
            obs = {"attack": name, "crash": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(obs), flush=True)
