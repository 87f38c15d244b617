"""The hidden checks of `extract_module` (tasks/common/hidden.py): every moved helper, imported
from its new package, on texts the repository never uses."""

from __future__ import annotations

from tasks.common import hidden as H
from tasks.extract_module import repo


def checks(n: repo.Names, seed: int) -> H.Hidden:
    r = H.rng("extract_module", seed)
    samples = [
        " " * r.randint(0, 2)
        + (" " * r.randint(1, 3)).join(
            H.word(r, r.randint(3, 8)).capitalize() if r.random() < 0.5 else H.word(r, r.randint(3, 8))
            for _ in range(r.randint(2, 6))
        )
        + " " * r.randint(0, 2)
        for _ in range(3)
    ]
    body = "".join(
        f"def test_hidden_{g}():\n    got = [{g}(s) for s in {samples!r}]\n"
        f"    assert got == {[repo.evaluate(n, f'{g}(s)', s=s) for s in samples]!r}, got\n\n\n"
        for g in n.group
    )
    return H.hidden(f"from {n.app}.{n.grp} import {', '.join(n.group)}", body.rstrip("\n") + "\n")
