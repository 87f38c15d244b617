"""Constraint statements: sentences with a keep cue, outside file bodies, covering anchors."""

from __future__ import annotations

from bench.core.render import file_block
from ctxlog.statements import covers, marked, normal, statements, words


def test_sentences_with_a_keep_cue_split_at_lines_sentences_and_markers():
    text = (
        "Goal: move fetch. The shim stays until s08.\n"
        "s03: done. For later steps: [inv:a] _send stays. [inv:b] never fold ORDERS_TIMEOUT.\n"
        "- Keep the fallback in lookup for good."
    )
    got = [s for _, s in statements(text)]
    assert got == [
        "The shim stays until s08.",
        "[inv:a] _send stays.",
        "[inv:b] never fold ORDERS_TIMEOUT.",
        "Keep the fallback in lookup for good.",
    ]
    for off, s in statements(text):
        assert text[off : off + len(s)] == s  # offsets index the original text


def test_file_bodies_and_code_state_nothing():
    text = "Read it:\n" + file_block("a.py", "# keep this shim until s08\nx = 1\n") + "\nDone."
    assert statements(text) == []
    calls = [
        ("write_file", {"path": "a.py", "content": "# never delete this\n"}),
        (
            "submit_step",
            {"notes": "s01: edited a.py. For later steps: a.py keeps x.", "invariants": ["x stays."]},
        ),
    ]
    assert [s for _, s in statements(words("", calls))] == ["For later steps: a.py keeps x.", "x stays."]


def test_marked_normal_and_covers():
    s = "[inv:compat-form] fetch keeps accepting the legacy form until s12."
    assert marked(s) and not marked("fetch keeps the legacy form.")
    assert normal(s) == normal("fetch  keeps accepting the legacy form until s12.")
    assert covers(s, ("fetch", "legacy form")) and covers(s, ("FETCH",))
    assert not covers(s, ("fetch_all",)) and not covers("prefetch keeps it.", ("fetch",))
    assert not covers(s, ()) and covers("_send stays", ("_send",)) and not covers("x_send stays", ("_send",))


def test_a_text_is_read_once_and_each_caller_gets_its_own_list():
    """Both readers (the sim, the recall measure) ask of the same texts: kept by text, handed out
    as a new list, so one caller's change never reaches another."""
    from ctxlog import statements as module

    text = "Keep the retry guard. Nothing else.\nThe export stays in euros."
    module._statements.cache_clear()
    first = statements(text)
    first.append((0, "forged"))
    assert statements(text) == [(0, "Keep the retry guard."), (36, "The export stays in euros.")]
    assert module._statements.cache_info().misses == 1
