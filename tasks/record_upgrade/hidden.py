"""The hidden checks of `record_upgrade` (tasks/common/hidden.py): the format-2 writer and the
reader (both formats) on records the repository never uses."""

from __future__ import annotations

import json

from tasks.common import hidden as H
from tasks.record_upgrade import repo


def checks(n: repo.Names, seed: int) -> H.Hidden:
    r = H.rng("record_upgrade", seed)
    recs = [
        {"id": r.randint(10_000, 99_999), "kind": H.word(r, 5), "amount": r.randint(100, 999_999) / 100}
        for _ in range(3)
    ]
    written = [
        {"v": repo.FORMAT, "id": x["id"], "kind": x["kind"], "amount": repo.cents(x["amount"])} for x in recs
    ]
    v1 = [f"{x['id']}|{x['kind']}|{x['amount']:.2f}" for x in recs]
    body = (
        f"KEYS = ('v',) + {repo.FIELDS!r}\n\n\n"
        f"def test_hidden_writer():\n"
        f"    got = [json.loads({n.codec}.{n.new}(rec)) for rec in {recs!r}]\n"
        f"    assert [{{k: g.get(k) for k in KEYS}} for g in got] == {written!r}, got\n\n\n"
        f"def test_hidden_reader():\n"
        f"    got = [{n.codec}.{n.decode}(line) for line in {v1!r} + {[json.dumps(w) for w in written]!r}]\n"
        f"    assert [{{k: g.get(k) for k in KEYS}} for g in got] == {written + written!r}, got\n"
    )
    return H.hidden(f"import json\n\nfrom {n.core} import {n.codec}", body)
