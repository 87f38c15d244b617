"""The hidden checks of `signature_migration` (tasks/common/hidden.py): the migrated call and
its `_all` form on urls and (timeout, retries) values the repository never uses."""

from __future__ import annotations

from tasks.common import hidden as H
from tasks.signature_migration import repo


def checks(n: repo.Names, seed: int) -> H.Hidden:
    r = H.rng("signature_migration", seed)
    cases = [
        (f"https://{H.word(r)}.test/{r.randint(1000, 9999)}", r.randint(100, 999), r.randint(7, 40))
        for _ in range(3)
    ]
    want = [repo.sent(n, url, t, k) for url, t, k in cases]
    urls, (_, t, k) = [url for url, _, _ in cases], cases[0]
    body = (
        f"def test_hidden_calls():\n    got = [{n.fn}(url, {n.P}(t, r)) for url, t, r in {cases!r}]\n"
        f"    assert got == {want!r}, got\n\n\n"
        f"def test_hidden_all():\n    got = {n.client}.{n.fn}_all({urls!r}, {n.P}({t}, {k}))\n"
        f"    assert got == {[repo.sent(n, u, t, k) for u in urls]!r}, got\n"
    )
    header = (
        f"from {n.core} import {n.client}\nfrom {n.core}.{n.client} import {n.fn}\n"
        f"from {n.core}.{n.pmod} import {n.P}"
    )
    return H.hidden(header, body)
