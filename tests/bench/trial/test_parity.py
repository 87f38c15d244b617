"""Information parity, end to end: the fact only a drift commit's message states (keep the new
`legacy_*` helper) reaches raw through its own `git log`, and reaches ledger only through its
TREE/drift-note channels or its own looks. Whole sim trials through the real config, local
sandbox, a short task whose new trap lands before s03 and is invited at s03."""

from __future__ import annotations

import tasks
from bench.config import compose, load
from bench.trial.runner import run
from ctxlog.reader import Log

SHORT = [
    "task=signature_migration",
    "task.seed=3",
    "task.size.steps=7",
    "model=sim",
    "sandbox=local",
    "arm=drift",
    "arm.drift_kinds=[new_trap]",
    "model.mechanisms.competence=false",
]
NO_LOOKS = [
    "model.params.p_look_history=0",
    "model.params.p_check_changes=0",
    "model.params.p_reread_before_edit=0",
]


def _trap_key() -> str:
    task = tasks.generate("signature_migration", 3, steps=7)
    return next(t.cleanup for t in task.traps if t.drift == "d-legacy")


def _protection(tmp_path, monkeypatch, *overrides: str) -> list[float]:
    """q of every temptation decision on the planted trap."""
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    result = run(load(compose([*SHORT, *overrides])))
    key = _trap_key()
    qs = [
        d["q"]
        for r in Log.from_path(result.events_path).records()
        if r["kind"] == "model_call"
        for d in r.get("decisions", ())
        if d["key"].startswith(key)
    ]
    assert qs, "the trap was never invited: the scenario changed, pick another seed"
    return qs


def test_raw_reaches_the_commit_message_by_looking_at_the_history(tmp_path, monkeypatch):
    blind = _protection(tmp_path / "a", monkeypatch, "strategy=raw", *NO_LOOKS)
    looks = _protection(
        tmp_path / "b", monkeypatch, "strategy=raw", *NO_LOOKS, "model.params.p_look_history=1"
    )
    assert max(blind) == 0.0 and min(looks) > 0.5


def test_ledger_has_it_only_through_its_channels_or_its_own_looks(tmp_path, monkeypatch):
    bare = ["strategy=ledger", "strategy.tree=false", "strategy.drift_note=false"]
    assert max(_protection(tmp_path / "a", monkeypatch, *bare, *NO_LOOKS)) == 0.0
    assert min(_protection(tmp_path / "b", monkeypatch, "strategy=ledger", *NO_LOOKS)) > 0.5
    assert (
        min(_protection(tmp_path / "c", monkeypatch, *bare, *NO_LOOKS, "model.params.p_look_history=1")) > 0.5
    )
