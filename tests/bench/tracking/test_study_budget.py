"""The study budget's ledger and gate (bench/tracking/study_budget.py): estimates, reservations of
trials in flight, the pilot, refusals that stick, dead workers' reservations, validation."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.core import procs
from bench.tracking.study_budget import (
    ADMITTED,
    REFUSED,
    WAIT,
    Budget,
    BudgetError,
    Gate,
    describe,
    ledger_path,
    read,
    seed,
)


def gate(tmp_path, **study):
    return Gate.for_trial(study, tmp_path, "s")


def test_no_budget_admits_everything_and_writes_nothing(tmp_path):
    g = gate(tmp_path, budget_usd=None, trial_estimate_usd=3)
    assert g.budget is None and g.admit() == ADMITTED
    g.settle(5.0, 100)
    assert not ledger_path(tmp_path, "s").exists()


@pytest.mark.parametrize(
    ("study", "message"),
    [
        ({"budget_usd": -1}, r"study.budget_usd must be a number >= 0"),
        ({"budget_tokens": "many"}, r"study.budget_tokens must be a number"),
        ({"budget_usd": 1, "trial_estimate_usd": True}, r"study.trial_estimate_usd must be a number"),
    ],
)
def test_bad_budget_values_name_the_key(study, message):
    with pytest.raises(BudgetError, match=message):
        Budget.from_study(study)


def test_reservations_of_trials_in_flight_count_and_a_refusal_sticks(tmp_path):
    study = {"budget_usd": 2.5, "trial_estimate_usd": 1.0}
    a, b, c = gate(tmp_path, **study), gate(tmp_path, **study), gate(tmp_path, **study)
    assert a.admit() == ADMITTED and b.admit() == ADMITTED  # 1 + 1 reserved
    assert c.admit() == REFUSED  # 1 + 1 + 1 > 2.5
    a.settle(0.1, 10)
    b.settle(0.1, 10)
    assert gate(tmp_path, **study).admit() == REFUSED  # room again, but the study has ended: no new trial
    state = read(ledger_path(tmp_path, "s"))
    assert state["spent_usd"] == pytest.approx(0.2) and state["ended"] == 2 and state["refused"] == 2
    assert state["reserved"] == {}


def test_after_the_pilot_the_estimate_is_the_mean_so_far(tmp_path):
    study = {"budget_usd": 1.0}
    pilot, other = gate(tmp_path, **study), gate(tmp_path, **study)
    assert pilot.admit() == ADMITTED and other.admit() == WAIT  # no estimate: the pilot runs alone
    pilot.settle(0.3, 1000)
    assert other.admit() == ADMITTED  # 0.3 + 0.3 <= 1
    assert gate(tmp_path, **study).admit() == ADMITTED  # 0.3 spent + 0.3 held + 0.3 = 0.9 <= 1
    assert gate(tmp_path, **study).admit() == REFUSED  # 0.3 + 0.6 + 0.3 > 1


def test_tokens_budget(tmp_path):
    study = {"budget_tokens": 2500, "trial_estimate_tokens": 1000}
    a, b = gate(tmp_path, **study), gate(tmp_path, **study)
    assert a.admit() == ADMITTED and b.admit() == ADMITTED and gate(tmp_path, **study).admit() == REFUSED
    s = describe(a.budget, read(ledger_path(tmp_path, "s")), 3)
    assert "0 of 2500 tokens, projected 3000" in s


def test_a_dead_workers_reservation_is_dropped_and_seed_starts_over(tmp_path):
    path = ledger_path(tmp_path, "s")
    study = {"budget_usd": 1.5, "trial_estimate_usd": 1.0}
    code = (
        "from bench.tracking.study_budget import Gate; import sys; "
        f"g = Gate.for_trial({study!r}, sys.argv[1], 's'); print(g.admit())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ADMITTED  # and then that process exited without settling
    assert gate(tmp_path, **study).admit() == ADMITTED  # its 1.0 no longer held
    seed(path, 0.5, 100, 1)
    state = read(path)
    assert (
        state["reserved"] == {}
        and state["spent_usd"] == 0.5
        and state["ended"] == 1
        and not state["exhausted"]
    )
    assert gate(tmp_path, **study).admit() == ADMITTED  # 0.5 spent + the mean, 0.5 <= 1.5
    assert gate(tmp_path, **study).admit() == ADMITTED  # 0.5 + 0.5 held + 0.5 = 1.5, exactly the budget
    assert gate(tmp_path, **study).admit() == REFUSED  # 2.0 > 1.5


def test_waiting_for_the_pilot_ends_when_it_settles(tmp_path):
    import threading

    pilot, other = gate(tmp_path, budget_usd=1.0), gate(tmp_path, budget_usd=1.0)
    assert pilot.admit() == ADMITTED and other.admit() == WAIT
    done = threading.Event()
    t = threading.Thread(target=lambda: (other.wait(poll_s=0.01), done.set()))
    t.start()
    assert not done.wait(0.2)  # the pilot is still running
    pilot.settle(0.2, 10)
    assert done.wait(5) and other.admit() == ADMITTED
    t.join()


def test_a_reservation_whose_pid_was_reused_is_dropped(tmp_path):
    # pid_max is 32,768 here: a dead worker's pid soon names another process. A reservation
    # keeps its process's start time, so the newcomer does not hold the dead worker's money.
    path = ledger_path(tmp_path, "s")
    study = {"budget_usd": 1.5, "trial_estimate_usd": 1.0}
    assert gate(tmp_path, **study).admit() == ADMITTED  # this process holds 1.0
    state = read(path)
    ((ticket, held),) = state["reserved"].items()
    assert held[2] == os.getpid() and held[3] == procs.start_ticks(os.getpid())
    state["reserved"][ticket] = [held[0], held[1], held[2], held[3] + 1]  # "started" at another time
    path.write_text(json.dumps(state))
    assert gate(tmp_path, **study).admit() == ADMITTED  # 1.0 no longer held: 1.0 <= 1.5
    assert procs.alive(os.getpid()) and not procs.alive(os.getpid(), held[3] + 1)
