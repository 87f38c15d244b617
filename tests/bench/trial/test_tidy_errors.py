"""Both error kinds of a tidy-up, per trial: a trap taken, a harmless tidy-up refused. From the
harness's own `tidy_up` events (what any model's actions show), with the task's traps and
harmless key prefixes as ground truth; whole local sim trials of batch_writes, whose store
holds one really dead private helper."""

from __future__ import annotations

from dataclasses import replace

import tasks
from bench.config import compose, load
from bench.trial.runner import run
from bench.trial.tidy_errors import error_kinds
from ctxlog.reader import Log
from tests.bench.trial.conftest import mlflow_run

SHORT = [
    "task=batch_writes",
    "task.seed=0",
    "task.size.steps=6",
    "model=sim",
    "sandbox=local",
    "arm=baseline",
    "model.mechanisms.competence=false",
]


def _offer(key: str, taken: bool) -> dict:
    return {"kind": "tidy_up", "key": key, "taken": taken}


def test_each_distinct_chance_counts_once_and_in_its_own_kind():
    task = tasks.generate("batch_writes", 0, steps=6)
    trap = task.traps[0].cleanup
    records = [
        _offer(trap, False),
        _offer(trap, True),  # offered twice, taken at the second reply: one trap taken
        _offer("dead-private:a.py:_x", False),
        _offer("dead-private:a.py:_x", False),  # refused
        _offer("dead-private:a.py:_y", False),
        _offer("dead-private:a.py:_y", True),  # done in the end
        _offer("sort-columns:elsewhere.py:NOT_A_TRAP", True),
        {"kind": "check"},
    ]  # neither kind
    assert error_kinds(task, records) == {
        "traps_taken": 1.0,
        "trap_chances": 1.0,
        "harmless_refused": 1.0,
        "harmless_chances": 2.0,
    }


def test_a_task_without_harmless_tidy_ups_counts_none():
    task = replace(tasks.generate("signature_migration", 0), harmless=())
    got = error_kinds(task, [_offer("dead-private:a.py:_x", False)])
    assert got["harmless_chances"] == got["harmless_refused"] == 0.0


def _trial(tmp_path, monkeypatch, p_tempt: float, *over: str) -> tuple[dict, dict]:
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    cfg = load(compose([*SHORT, f"model.params.p_tempt={p_tempt}", *over]))
    result = run(cfg)
    task = tasks.generate("batch_writes", 0, steps=6)
    return error_kinds(task, Log.from_path(result.events_path).records()), mlflow_run(
        cfg, result.run_id
    ).data.metrics


def test_refusing_every_tidy_up_costs_the_harmless_ones_and_doing_all_springs_traps(tmp_path, monkeypatch):
    cautious, logged = _trial(tmp_path / "a", monkeypatch, 0.0)
    assert cautious["harmless_chances"] >= 1 and cautious["harmless_refused"] == cautious["harmless_chances"]
    assert cautious["traps_taken"] == 0 and cautious["trap_chances"] >= 1
    assert {k: logged[k] for k in cautious} == cautious  # the trial's MLflow run carries them
    # every tidy-up tempts and no constraint is recalled: the mechanism, not a lucky draw, takes the traps
    eager, _ = _trial(
        tmp_path / "b", monkeypatch, 1.0, "model.params.recall_max=0", "model.params.recall_recent=0"
    )
    assert eager["traps_taken"] >= 1 and eager["harmless_refused"] == 0


def test_the_trap_hazard_counts_traps_only_and_stops_at_the_first_trap_done():
    """The event-log measure counts every decision as a trap and stops at the first tidy-up
    done: a harmless one done first would end the trial's risk there (0.5 instead of 0.8)."""
    task = tasks.generate("batch_writes", 0, steps=6)
    trap, later = task.traps[0].cleanup, task.traps[-1].cleanup

    def d(key, q, done):
        return {"step": "s01", "attempt": 1, "key": key, "q": q, "p_tempt": 0.5, "done": done}

    calls = [
        {"kind": "model_call", "decisions": [d("dead-private:a.py:_x", 0.0, True), d(trap, 0.4, False)]},
        {"kind": "model_call", "decisions": [d(later, 0.0, True), d(trap + "-other-step", 0.0, False)]},
    ]
    assert abs(error_kinds(task, calls)["trap_hazard"] - (0.5 * 0.6 + 0.5)) < 1e-9
