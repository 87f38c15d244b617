"""The one reader: turns with their rebuilt contexts, tolerant of torn logs, strict on demand."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from ctxlog import events as ev
from ctxlog.reader import Log


def _log() -> list[dict]:
    sys_, task = {"role": "system", "content": "sys"}, {"role": "user", "content": "task"}
    call = {"id": "c1", "name": "read_file", "args": {"path": "a.py"}}
    out = [
        ev.TrialStart(trial_id="x", schema=ev.SCHEMA),
        ev.Message(sha="m1", message=sys_),
        ev.Message(sha="m2", message=task),
        ev.Context(turn=0, messages=["m1", "m2"], tokens=9),
        ev.ModelCall(turn=0, tool_calls=[call]),
        ev.ToolCall(turn=0, call_id="c1", name="read_file", args={"path": "a.py"}),
        ev.ToolResult(turn=0, call_id="c1", name="read_file", ok=True, output="x"),
        ev.Message(sha="m3", message={"role": "user", "content": "summarise"}),
        ev.Context(turn=1, purpose="compaction", messages=["m1", "m3"]),
        ev.ModelCall(turn=1, purpose="compaction", content="summary"),
        ev.Compaction(turn=1, summary="summary"),
        ev.Context(turn=1, messages=["m1", "m9"]),  # a message the log lacks; no reply (a crash)
    ]
    return [e.record() | {"seq": i} for i, e in enumerate(out)]


def test_turns_carry_their_rebuilt_context_reply_and_tools():
    log = Log.from_records(_log())
    turns = log.turns()
    assert [t.index for t in turns] == [0, 1]
    first = turns[0]
    assert [m["content"] for m in first.call.messages] == ["sys", "task"]
    assert first.call.reply is not None and first.call.reply.tool_calls[0]["id"] == "c1"
    ((call, result),) = first.tools
    assert call.args == {"path": "a.py"} and result is not None and result.ok
    assert turns[1].call.messages is None and turns[1].call.reply is None
    summariser = [c for c in log.calls if c.context.purpose == "compaction"]
    assert [m["content"] for m in summariser[0].messages] == ["sys", "summarise"]
    assert log.context_at(5) is None and log.context_at(0) == first.call.messages
    assert log.schema == ev.SCHEMA and log.start.trial_id == "x"


def test_a_torn_line_is_counted_or_named():
    text = "\n".join(json.dumps(r) for r in _log()) + '\n{"seq": 12, "kind": "mod'
    log = Log.from_text(text)
    assert log.unreadable == 1 and len(log.events) == 12
    with pytest.raises(ValueError, match=r"events.jsonl:13: not a JSON record"):
        Log.from_text(text, strict=True)


# -- every reader goes through this one (issue 40 item 3) ----------------------------------
READERS = ("analysis", "bench", "strategies", "tasks")


def _picks_by_key(node: ast.AST) -> bool:
    """`x["kind"]` or `x.get("kind")`: a record's kind read off a dict."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "kind"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "kind"
    )


def _names_a_kind(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ev.KINDS
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(_names_a_kind(x) for x in node.elts)


def offenders(root: Path, folders: tuple[str, ...] = READERS) -> list[str]:
    """Comparisons of a dict's "kind" with an event kind's name: an event picked by string key
    rather than by its class through the typed reader."""
    out = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Compare):
                    sides = [node.left, *node.comparators]
                    if any(_picks_by_key(s) for s in sides) and any(_names_a_kind(s) for s in sides):
                        out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def test_no_module_picks_events_by_string_key():
    root = Path(__file__).resolve().parents[2]
    assert offenders(root) == [], "pick events by class through ctxlog.reader.Log (log.of(ev.X)), not by key"


def test_a_pick_by_string_key_is_found(tmp_path):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "m.py").write_text(
        'ends = [r for r in records if r.get("kind") == "trial_end"]\n'
        'calls = [r for r in records if r["kind"] in ("model_call", "check")]\n'
        'docker = cfg["kind"] == "docker"\n'
    )  # a sandbox's kind, not an event's: not an offender
    assert offenders(tmp_path, ("analysis",)) == ["analysis/m.py:1", "analysis/m.py:2"]
