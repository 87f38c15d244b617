"""One adversary trial through the real Docker sandbox, and what it left, observed the same way
whoever runs it: the test process (root or not), or another uid running this file as a script
(`python -m tests.bench.trial.adversary_run RESULTS [--agent NAME] [--unguarded] ATTACK...`
prints one JSON line per attack; test_adversary.py runs it as a non-root user,
attack_table.py for the outcome tables). `--agent mini_swe_agent` plays the attack's model behind
mini-swe-agent (its one `bash` tool, bench/sim/dialects/mini_bash.py); `--unguarded` plays each
attack with its guard removed (unguard.py)."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

from bench.config import compose, load
from bench.providers.attacks import ATTACKS
from bench.trial.runner import run

PR_SET_CHILD_SUBREAPER = 36
ROOT = Path(__file__).resolve().parents[3]


def as_user(uid: int, gid: int) -> list[str]:
    """setpriv to `uid` with the Docker socket's group (whatever its name) and no capability:
    how the harness runs when it is not root."""
    sock = os.stat("/var/run/docker.sock").st_gid
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", f"--groups={sock}", "--inh-caps=-all"]


def interpreter(user: list[str], env: dict[str, str]) -> list[str] | None:
    """An interpreter `user` can run with this venv's packages: the venv's own, or (its base under
    an unreadable /root, say) the system's python of the same minor version. Sets env's PYTHONPATH."""
    site = [p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *site])
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for exe in (sys.executable, shutil.which(minor, path="/usr/local/bin:/usr/bin") or ""):
        if (
            exe
            and subprocess.run(
                [*user, exe, "-c", "import bench, mlflow, docker"], env=env, capture_output=True, cwd=ROOT
            ).returncode
            == 0
        ):
            return [exe]
    return None


def adopt_orphans(on: bool = True) -> None:
    """Make this process the subreaper of everything it starts (or no longer): a host process that
    detaches (setsid, a double fork) is reparented here instead of to init, so `_host_processes`
    still sees it (prctl(2), Linux only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _host_processes() -> list[str]:
    """This process's live descendants (host git, a local server, an agent's driver...): none may
    outlive a trial."""
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{proc.pid} {proc.name()}")
        except psutil.NoSuchProcess:
            pass
    return out


def play(attack: str, results: Path, *overrides: str) -> dict[str, Any]:
    os.environ["CTXBENCH_RESULTS"] = str(results)
    tcfg = load(
        compose(
            [
                "model=adversary",
                f"model.attack={attack}",
                "task.size.steps=6",
                f"limits.max_turns_per_step={len(ATTACKS[attack]) + 1}",
                f"study.name=adv-{attack}",
                "resume=false",
                *overrides,
            ]
        )
    )
    before = set(_host_processes())
    result = run(tcfg)
    left_procs = [p for p in _host_processes() if p not in before]
    from mlflow.tracking import MlflowClient

    mrun = MlflowClient(tcfg.tracking.uri).get_run(result.run_id)
    m, tags = mrun.data.metrics, mrun.data.tags
    records = [json.loads(line) for line in result.events_path.read_text().splitlines()]
    violations = [r["detail"] for r in records if r["kind"] == "policy_violation"]
    output = "\n".join(str(r.get("output", "")) for r in records if r["kind"] in ("tool_result", "check"))
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=ctxbench.run_id={result.run_id}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        "attack": attack,
        "uid": os.getuid(),
        "agent": (tcfg.agent or {}).get("name", "own"),
        "mlflow_status": mrun.info.status,
        "outcome_class": tags.get("outcome_class"),
        "success": m.get("success"),
        "failure_reason": tags.get("failure_reason"),
        "policy_violations": m.get("policy_violations"),
        "violation_events": len(violations),
        "violations": violations[:30],
        "errors": [r.get("detail", "")[:300] for r in records if r["kind"] == "error"],
        "metrics": {k: m.get(k, 0.0) for k in ("processes_killed", "tool_errors")},
        "containers_left": left,
        "output": output,
        "events": str(result.events_path),
        "host_processes_left": left_procs,
        "agent_turns": sum(r["kind"] == "agent_turn" for r in records),
        "checks_passed": [r.get("step") for r in records if r["kind"] == "check" and r.get("passed")],
        "scratch_left": sorted(p.name for p in Path(tempfile.gettempdir()).glob("ctxbench-sbx-*")),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.trial.adversary_run")
    parser.add_argument("results", type=Path)
    parser.add_argument("attacks", nargs="+")
    parser.add_argument(
        "--agent", default="own", help="conf/agent/ name: own (ctxbench's loop) or mini_swe_agent"
    )
    parser.add_argument(
        "--unguarded", action="store_true", help="each attack with its guard removed (unguard.py)"
    )
    args = parser.parse_args(argv)
    adopt_orphans()
    overrides = [] if args.agent == "own" else [f"agent={args.agent}"]
    scratch = Path(tempfile.mkdtemp(prefix="ctxbench-adv-"))
    for name in args.attacks:
        tempfile.tempdir = tempfile.mkdtemp(prefix=f"{name}-", dir=scratch)  # this trial's scratch dirs only
        try:
            with contextlib.ExitStack() as stack:
                guard = ""
                if args.unguarded:
                    from tests.bench.trial.unguard import removed

                    guard = stack.enter_context(removed(name))
                obs = play(name, args.results, *overrides)
                from tests.bench.trial.unguard import won

                obs["guard_removed"], obs["won"] = guard, won(name, obs)
        except Exception as exc:  # reported, so the table names the attack that broke the harness
            obs = {
                "attack": name,
                "uid": os.getuid(),
                "crash": f"{type(exc).__name__}: {exc}"[:2000],
                "host_processes_left": _host_processes(),
            }
        print(json.dumps(obs), flush=True)


if __name__ == "__main__":
    main()
