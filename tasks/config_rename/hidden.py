"""The hidden checks of `config_rename` (tasks/common/hidden.py): the accessor on configurations
and values the repository never uses."""

from __future__ import annotations

from tasks.common import hidden as H
from tasks.config_rename import repo


def checks(n: repo.Names, seed: int) -> H.Hidden:
    r = H.rng("config_rename", seed)
    a, b, c, d = (r.randint(1000, 9999) for _ in range(4))
    other = H.word(r)
    body = (
        f"def test_hidden_fallback():\n"
        f"    assert {n.acc}({{{n.old!r}: {a}}}, {n.new!r}) == {a}\n"
        f"    assert {n.acc}({{}}, {n.new!r}, {d}) == {d}\n\n\n"
        f"def test_hidden_new_key_first():\n"
        f"    assert {n.acc}({{{n.new!r}: {b}, {n.old!r}: {c}}}, {n.new!r}) == {b}\n"
        f"    assert {n.acc}({{{other!r}: {c}}}, {other!r}) == {c}\n"
    )
    return H.hidden(f"from {n.app}.{n.smod} import {n.acc}", body)
