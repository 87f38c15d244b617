from bench.core.toolspecs import TOOLS
from bench.core.types import Message, request_hash, sha256_text
from bench.eventlog.verify import main, verify
from bench.eventlog.writer import EventLog
from ctxlog import events as ev


def _log(path, digest=True):
    log = EventLog(path)
    log.append(ev.TrialStart(seed=7, max_output=100, schema=ev.SCHEMA))
    ctx = (Message("system", "sys"), Message("user", "task [task:x/1]"))
    log.context(0, ctx, tokens=5, stable=2)
    log.append(ev.ModelCall(turn=0, purpose="turn", request_hash=request_hash(ctx, TOOLS, 100, 7)))
    ctx2 = ctx + (Message("assistant", "reading"),)
    log.context(1, ctx2, tokens=7, stable=2)
    log.append(ev.TrialEnd(turn=1, success=True))
    log.close()
    if digest:
        path.with_name(path.name + ".sha256").write_text(sha256_text(path.read_text()) + "\n")
    return path


def test_verify_passes_on_an_intact_log(tmp_path):
    rebuilt, problems = verify(_log(tmp_path / "events.jsonl"))
    assert (rebuilt, problems) == (2, [])
    assert main([str(tmp_path / "events.jsonl")]) == 0


def test_flipping_one_byte_anywhere_fails(tmp_path):
    path = _log(tmp_path / "events.jsonl")
    data = path.read_bytes()
    # Flip a letter inside each record in turn: every position class must be caught.
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]
    for start in starts:
        target = data.index(b'"kind"', start) + 2  # a byte inside the record's JSON
        flipped = bytearray(data)
        flipped[target] ^= 0x01
        path.write_bytes(bytes(flipped))
        _, problems = verify(path, expected_digest=None)
        assert problems, f"flip at byte {target} went unnoticed"
    path.write_bytes(data)


def test_tampered_message_content_is_caught_even_with_chain_rewritten(tmp_path):
    path = _log(tmp_path / "events.jsonl")
    text = path.read_text().replace('"task [task:x/1]"', '"task [task:x/2]"')
    path.write_text(text)
    _, problems = verify(path)
    assert any("sha" in p or "chain" in p or "digest" in p for p in problems)


def test_chain_alone_catches_a_flip_in_an_earlier_record(tmp_path):
    path = _log(tmp_path / "events.jsonl", digest=False)
    lines = path.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"seed":7', '"seed":8')
    path.write_text("".join(lines))
    _, problems = verify(path)
    assert any("chain" in p for p in problems)
