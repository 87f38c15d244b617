"""The hidden checks of `batch_writes` (tasks/common/hidden.py): the bulk write on a number of
rows, ids, kinds and quantities the repository never uses, chunked by the backend's limit."""

from __future__ import annotations

from tasks.batch_writes import repo
from tasks.common import hidden as H


def checks(n: repo.Names, seed: int) -> H.Hidden:
    r = H.rng("batch_writes", seed)
    ids = r.sample(range(10_000, 99_999), r.randint(101, 160))
    rows = [{"id": i, "kind": H.word(r, 4), "qty": r.randint(1, 500)} for i in ids]
    want = {row["id"]: list(repo.record(row)) for row in rows}
    body = (
        f"ROWS = {rows!r}\n\n\n"
        f"def test_hidden_bulk():\n    {n.backend}.reset()\n    {n.store}.{n.bulk}(ROWS)\n"
        f"    limit, calls = {n.backend}.LIMIT, list({n.backend}.CALLS)\n"
        f"    got = {{k: list(v) for k, v in dict({n.backend}.ROWS).items()}}\n"
        f"    assert got == {want!r}, 'stored rows differ'\n"
        f"    assert len(calls) == -(-{len(rows)} // limit) and max(calls) <= limit, calls\n"
    )
    return H.hidden(f"from {n.core} import {n.backend}, {n.store}", body)
