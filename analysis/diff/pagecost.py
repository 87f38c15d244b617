"""``python -m analysis.diff.pagecost [TURNS]``: time the diff page of two long trials (run by
``make bench``). Target: a 300-turn pair renders in under a second into a page of a few MB.

The two logs are constructed in the harness's format (messages stored once, contexts as
sha lists, file blocks in tool results) at realistic sizes: three tool calls a turn with
1.5k-character files, a check every fifth turn, a compaction every 40 turns in A, a drift
commit at turn 100, and A's actions parting from B's at turn 150.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

from analysis.diff.html import page
from analysis.diff.trajectory import Trajectory, compare
from analysis.settings import REPO

FILE = "".join(
    f"def helper_{i}(url, deadline, attempts):\n    return submit(url, deadline, attempts)\n\n"
    for i in range(20)
)


def _block(path: str, content: str) -> str:
    return f'<file path="{path}" sha="{hashlib.sha256(content.encode()).hexdigest()[:12]}">\n{content}</file>'


def synthetic(turns: int, side: str) -> str:
    """One trial's events.jsonl text."""
    out: list[str] = []
    known: set[str] = set()

    def add(turn: int, kind: str, **fields) -> None:
        out.append(
            json.dumps({"seq": len(out), "turn": turn, "kind": kind, "prev": "", **fields, "t": {"ts": 0}})
        )

    def msg(turn: int, role: str, content: str) -> str:
        m = {"role": role, "content": content}
        sha = hashlib.sha256(json.dumps(m, sort_keys=True).encode()).hexdigest()
        if sha not in known:
            known.add(sha)
            add(turn, "message", sha=sha, message=m)
        return sha

    add(
        0,
        "trial_start",
        strategy="compaction",
        arm="drift_compaction" if side == "a" else "baseline",
        task_id="signature_migration/4",
        rep=0,
        model="sim",
    )
    head = [
        msg(0, "system", "You are a careful software engineer."),
        msg(
            0, "user", "[task:signature_migration/4]\n" + "\n".join(f"[inv:i{k}] rule {k}" for k in range(8))
        ),
    ]
    history: list[str] = []
    for t in range(turns):
        if side == "a" and t and t % 40 == 0:
            add(
                t,
                "compaction",
                tokens_before=11000,
                tokens_after=3000,
                summary="SUMMARY\n" + FILE[:1500],
                usage={},
            )
            history = [msg(t, "user", f"SUMMARY of turns up to {t}")]
        if t == 100:
            add(
                t,
                "drift",
                drift_id="d1",
                drift_kind="new_caller",
                commit="c0ffee",
                message="add a caller",
                author="Outside <o@x>",
                files=["jobs/routed.py"],
            )
        path = f"pkg{t % 12}/mod.py"
        add(
            t,
            "context",
            purpose="turn",
            messages=head + history,
            sha="x",
            tokens=1000 + 300 * len(history),
            stable=2,
        )
        part = "-alt" if side == "a" and t >= 150 else ""
        calls = [
            ("read_file", {"path": path}, _block(path, FILE)),
            (
                "edit_file",
                {"path": path, "search": "deadline, attempts", "replace": f"CallOptions(){part}"},
                f"edited {path}\n" + _block(path, FILE.replace("deadline", "options")),
            ),
            ("run", {"cmd": "python3 -B tools/run_tests.py tests"}, "." * 400 + "\nok: 120 passed"),
        ]
        add(t, "model_call", purpose="turn", content=f"Editing {path} for the step.", stop_reason="tool_use")
        history.append(msg(t, "assistant", f"turn {t}"))
        for i, (name, args, result) in enumerate(calls):
            add(t, "tool_call", call_id=f"c{t}.{i}", name=name, args=args)
            add(t, "tool_result", call_id=f"c{t}.{i}", name=name, ok=True, output=result)
            history.append(msg(t, "tool", result))
        if t % 5 == 4:
            add(
                t,
                "check",
                step=f"s{t // 5:02d}",
                command="python3 -B tools/check_api.py",
                exit_code=0,
                timed_out=False,
                output="ok: migrated\n",
            )
            add(t, "step_status", step=f"s{t // 5:02d}", status="passed")
    add(
        turns,
        "trial_end",
        success=side == "b",
        status="success" if side == "b" else "failure",
        failure_reason="" if side == "b" else "step_failed",
        steps_passed=turns // 5,
        final_tree_sha=side * 40,
    )
    return "\n".join(out) + "\n"


def measure(turns: int = 300, repeat: int = 3) -> dict[str, float]:
    texts = {s: synthetic(turns, s) for s in ("a", "b")}
    best, html = float("inf"), ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        d = compare(Trajectory.from_text(texts["a"], "A"), Trajectory.from_text(texts["b"], "B"), "baseline")
        html = page(d)
        best = min(best, time.perf_counter() - t0)
    return {
        "turns": turns,
        "log_mb": round(len(texts["a"]) / 1e6, 2),
        "seconds": round(best, 3),
        "page_mb": round(len(html.encode()) / 1e6, 2),
        "diverged_at": d.diverged_at,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    res = measure(int(args[0]) if args else 300)
    print(
        f"analysis.diff.pagecost: {res['turns']}-turn pair ({res['log_mb']} MB log each) -> page "
        f"{res['page_mb']} MB in {res['seconds']:.3f} s (parse + compare + render, best of 3)"
    )
    out = REPO / "results" / "diff_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
