"""Hidden checks (issue 42, item 3): each family's final acceptance includes tests the agent
never sees, so that code that special-cases the visible tests (their inputs are in the
repository) fails them.

A family's `hidden.py` builds one test file from the task's names and its seed alone (a pure
function: the same task gives the same file), with inputs drawn from a stream of their own
(`rng`: the task's own draws are unchanged) and outside the ranges the repository uses; the
expected values are computed here, on the host, from the family's own model of the behaviour.
The file and its command are `TaskSpec.hidden` / `hidden_check`. The harness holds them: they
are never in the working copy or a step check's copy; certify.py writes them into the judge's
copy of the final acceptance only (under the protected `tools/`, so nothing of the agent's is
read in their place) and removes them right after, and records their verdict apart
(`check.hidden`), so success can be computed with and without them.
"""

from __future__ import annotations

import random

from tasks.common.run_tests import RUN_TESTS

HIDDEN_PATH = "tools/hidden/test_hidden.py"
HIDDEN_CHECK = f"{RUN_TESTS} {HIDDEN_PATH}"

Hidden = tuple[tuple[tuple[str, str], ...], str]  # (files, the command that runs them)


def rng(family: str, seed: int) -> random.Random:
    """The hidden checks' own stream (a string seed is hashed the same way on every machine)."""
    return random.Random(f"hidden/{family}/{seed}")


def word(r: random.Random, n: int = 6) -> str:
    """A made-up lower-case word: no repository of ours holds it."""
    return "".join(r.choice("bcdfghjklmnpqrstvwxz" if i % 2 == 0 else "aeiou") for i in range(n))


def hidden(header: str, body: str) -> Hidden:
    """The one hidden test file and the command that runs it (the shipped fast runner)."""
    text = f'"""Hidden checks (held by the harness; never in the repository)."""\n\n{header}\n\n\n{body}'
    return ((HIDDEN_PATH, text),), HIDDEN_CHECK
