"""The oracle every family shares (tasks/spec.py, `Oracle`; docs/design.md §8): a family's
oracle is its premises, given as hooks, on this one base.

A step's answer is always made the same way: ask to read the files the step needs and has not
seen; then make the edits of the step's kind (the family's hook for that kind: create, compat,
shims, tidy, docs, final, ...); then sweep every file of the step's scope in view (`sweep`: a
batch step's package, every file at the last step). The tidy-ups on view are always the dead
code every family has (tasks/common/cleanups.py) and then, path by path, the family's own
(`invites`). Everything is computed from the perceived text alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from tasks.common import build, cleanups
from tasks.spec import Cleanup, Edit, StepPlan

N = TypeVar("N")  # the family's seeded names
# A step kind's edits: (files in view, the files the step needs) -> edits, in order
KindHook = Callable[[Mapping[str, str], tuple[str, ...]], list[Edit]]


class FamilyOracle(Generic[N]):
    """The Oracle protocol on a family's hooks: `kinds`, `unswept`, `sweep`, `invites`."""

    def __init__(self, n: N, meta: build.Meta):
        self.n, self.meta = n, meta

    def kinds(self) -> Mapping[str, KindHook]:
        """Each step kind's own edits (a batch step usually has none: its sweep is its work)."""
        return {}

    def unswept(self) -> tuple[str, ...]:
        """Files the sweep leaves alone (the kind hooks edit them)."""
        return ()

    def sweep(self, kind: str, path: str, perceived: Mapping[str, str]) -> list[Edit]:
        """The edits of a step of `kind` to `path`, a file of its scope in view."""
        return []

    def invites(self, path: str, text: str, perceived: Mapping[str, str]) -> list[Cleanup]:
        """The family's own tidy-ups that `path` (its text in view) invites."""
        return []

    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        kind, needs, scope = self.meta[step_id]
        reads = build.missing_reads(needs, perceived)
        if reads:
            return reads
        hook = self.kinds().get(kind)
        edits = hook(perceived, needs) if hook else []
        left = self.unswept()
        for path in sorted(p for p in perceived if build.in_scope(p, scope) and p not in left):
            edits += self.sweep(kind, path, perceived)
        return StepPlan(edits=tuple(edits))

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple[Cleanup, ...]:
        out = cleanups.dead_code(perceived, paths)
        for path in paths:
            text = perceived.get(path)
            if text is not None:
                out += self.invites(path, text, perceived)
        return tuple(out)


def add_function(path: str, text: str, name: str, after: str, source: str) -> list[Edit]:
    """Add the function `name` (its `source`) after the top-level `def after` (at the end when that
    is missing), unless the text defines it already."""
    if f"def {name}(" in text:
        return []
    ed = build.FileEditor(path, text)
    at = build.def_span(text, after)
    end = at[1] if at else len(text)
    ed.replace_span(end, end, "\n\n" + source + ("\n\n" if end < len(text) else ""))
    return ed.edits


def adds_function(path: str, name: str, after: str, source: Callable[[], str]) -> KindHook:
    """A step kind whose edit is `add_function` on `path`: the function `name` after `def after`,
    its source rendered when the step is answered."""

    def hook(perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        return add_function(path, perceived[path], name, after, source())

    return hook


def put_section(path: str, text: str, heading: str, section: str) -> list[Edit]:
    """Make the docs end in `section`, from its `heading` on (added at the end when missing)."""
    ed = build.FileEditor(path, text)
    at = ed.text.find(heading)
    if at < 0:
        ed.replace_span(len(ed.text), len(ed.text), "\n" + section)
    elif ed.text[at:] != section:
        ed.replace_span(at, len(ed.text), section)
    return ed.edits
