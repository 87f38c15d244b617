"""The attack suite's outcome table (issue 42, "what must be shown"): every attack of
bench/providers/attacks/ played through the real Docker sandbox by adversary_run.py, as root or
as another uid, by ctxbench's own loop or behind a third-party agent, guarded or with its guard
removed (unguard.py), one row per trial:

    python -m tests.bench.trial.attack_table --uid 1000 --agent own [--unguarded] [ATTACK...]

writes results/attacks/<uid>-<agent>[-unguarded].jsonl (adversary_run's observations) and .md
(the table: MLflow status, outcome class, failure reason, success, violations, containers,
scratch dirs and host processes left, and the verdict: whether the row ended as
docs/threat_model.md says, read by `verdict`). A uid other than 0 runs the harness under `setpriv` with
the Docker socket's group, a HOME, TMPDIR and results folder of its own (as test_adversary.py's
non-root suite does)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.core.outcomes import AGENT
from bench.providers.attacks import ATTACKS
from bench.sandbox.content import remove_tree
from tests.bench.trial.adversary_run import ROOT, as_user, interpreter
from tests.bench.trial.test_adversary import NO_CHECK_PASSES, REASON, check

COLUMNS = (
    "attack",
    "agent",
    "agent turns",
    "uid",
    "guard removed",
    "MLflow status",
    "outcome class",
    "failure reason",
    "success",
    "violations",
    "containers left",
    "scratch dirs left",
    "host processes left",
    "checks passed",
    "attack won",
    "verdict",
)


# behind a third-party agent, large_args's 1 MB write is one shell command in the model's reply,
# past the 1 MiB of text a reply may carry (bench/core/emitted.py MAX_REPLY_CHARS): the model's error
THIRD_PARTY_REASON = {"large_args": ("model_error",)}


def verdict(obs: dict[str, Any]) -> str:
    """ "held" where a guarded attack ended as docs/threat_model.md says (ctxbench's own loop: every
    expectation of test_adversary.check; behind another agent, the ones test_mini_attacks.py keeps:
    the agent's failure, success 0, no harness error, no forged check, nothing left), "won" where an
    unguarded one got what it was after (unguard.won), else what went wrong: a row never reads
    well by default."""
    if "crash" in obs:
        return "CRASH"
    if obs.get("guard_removed"):
        return "won" if obs.get("won") else "NOT WON"
    try:
        if obs["agent"] == "own":
            check(obs["attack"], obs)
        else:
            assert (obs["mlflow_status"], obs["outcome_class"], obs["success"]) == ("FINISHED", AGENT, 0.0), (
                "outcome"
            )
            reasons = {**REASON, **THIRD_PARTY_REASON}.get(
                obs["attack"], ("step_failed", "final_check_failed")
            )
            assert obs["failure_reason"] in reasons, "reason"
            assert obs["errors"] == [], "harness error"
            assert obs["attack"] not in NO_CHECK_PASSES or obs["checks_passed"] == [], "a forged check passed"
            assert obs["containers_left"] == obs["scratch_left"] == obs["host_processes_left"] == [], (
                "left behind"
            )
    except AssertionError as exc:
        return f"NOT HELD: {str(exc).splitlines()[0][:100] if str(exc) else 'an expectation failed'}"
    return "held"


def row(obs: dict[str, Any]) -> list[str]:
    if "crash" in obs:
        return [
            obs["attack"],
            obs.get("agent", "?"),
            "",
            str(obs.get("uid")),
            "",
            "CRASH",
            obs["crash"][:120],
            "",
            "",
            "",
            "",
            "",
            str(len(obs.get("host_processes_left", []))),
            "",
            "crash",
            verdict(obs),
        ]
    # agent_turn events: a third party's only
    turns = str(obs["agent_turns"]) if obs["agent"] != "own" else "-"
    return [
        obs["attack"],
        obs["agent"],
        turns,
        str(obs["uid"]),
        obs.get("guard_removed") or "-",
        obs["mlflow_status"],
        str(obs["outcome_class"]),
        str(obs["failure_reason"]),
        f"{obs['success']:g}",
        f"{obs['violation_events']:d}",
        str(len(obs["containers_left"])),
        str(len(obs["scratch_left"])),
        str(len(obs["host_processes_left"])),
        str(len(obs["checks_passed"])),
        obs.get("won") or "no",
        verdict(obs),
    ]


def table(observations: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row(o)) + " |" for o in observations]
    verdicts = [verdict(o) for o in observations]
    tally = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
    return "\n".join(lines) + f"\n\n{len(observations)} attacks: {tally}.\n"


def play_all(attacks: list[str], uid: int, agent: str, unguarded: bool, out: Path) -> list[dict[str, Any]]:
    """adversary_run.py over `attacks` as `uid`, its JSON lines appended to `out` as they come."""
    home = Path(tempfile.mkdtemp(prefix="ctxbench-attack-table-"))
    os.chmod(home, 0o755)
    for sub in ("tmp", "results"):
        (home / sub).mkdir()
        os.chown(home / sub, uid, uid)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
    }
    if (
        "CTXBENCH_AGENTS" in os.environ or uid == 0
    ):  # mini's venv (bench/agents/install.py), root's by default
        env["CTXBENCH_AGENTS"] = os.environ.get(
            "CTXBENCH_AGENTS", str(Path.home() / ".cache/ctxbench/agents")
        )
    user = [] if uid == 0 else as_user(uid, uid)
    exe = [sys.executable] if uid == 0 else interpreter(user, env)
    if uid == 0:
        env["PYTHONPATH"] = str(ROOT)
    if exe is None:
        raise SystemExit(f"no python uid {uid} can run with this venv's packages ({sys.executable})")
    cmd = [
        *user,
        *exe,
        "-m",
        "tests.bench.trial.adversary_run",
        str(home / "results"),
        "--agent",
        agent,
        *(["--unguarded"] if unguarded else []),
        *attacks,
    ]
    seen: list[dict[str, Any]] = []
    try:
        with (
            subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True) as proc,
            out.open("a") as sink,
        ):
            assert proc.stdout is not None
            for line in proc.stdout:
                obs = json.loads(line)
                sink.write(line)
                sink.flush()
                seen.append(obs)
                print(" | ".join(row(obs)), flush=True)
    finally:
        remove_tree(str(home))
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.trial.attack_table")
    parser.add_argument("attacks", nargs="*")
    parser.add_argument("--uid", type=int, default=0)
    parser.add_argument("--agent", default="own")
    parser.add_argument("--unguarded", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "attacks")
    args = parser.parse_args()
    if args.unguarded:
        from tests.bench.trial.unguard import REMOVALS

        attacks = args.attacks or list(REMOVALS)
    else:
        attacks = args.attacks or list(ATTACKS)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"uid{args.uid}-{args.agent}{'-unguarded' if args.unguarded else ''}"
    jsonl = stem.with_suffix(".jsonl")
    play_all(attacks, args.uid, args.agent, args.unguarded, jsonl)
    every = {o["attack"]: o for o in map(json.loads, jsonl.read_text().splitlines())}  # a rerun's row wins
    stem.with_suffix(".md").write_text(table(list(every.values())))
    print(stem.with_suffix(".md"))


if __name__ == "__main__":
    main()
