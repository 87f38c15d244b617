"""A study's budget: `study.budget_usd` and/or `study.budget_tokens` (docs/scaling.md §3).

The spend is kept in one ledger per study, `<results>/budget/<study>.json`, read and written
under a file lock (filelock) by every worker on this machine. At multirun start the study callback seeds it
from MLflow with what the study's earlier invocations spent (every trial run, whatever its
status: a failed run was paid for too), and prints the estimate. Before a trial creates its
MLflow run, `Gate.admit()` reserves what one trial is expected to cost:

- the mean spend of the trials that ended so far (earlier invocations included: a pilot);
- before any has ended, `study.trial_estimate_usd` / `study.trial_estimate_tokens` (e.g. from
  the sim priced like the model, docs/real_models.md §2);
- without either, the first trial runs alone, as the pilot, and the others wait for it.

When the spend, the reservations of the trials in flight and this one's estimate would exceed
the budget, the trial does not start (`budget_exhausted`: no MLflow run, so a rerun starts it),
and from then on no trial of this invocation starts. After the trial, `settle()` replaces the
reservation by what it really cost. Reservations of processes that died are dropped.

A budget changes no result: `study` is outside the config hash, so a rerun with a larger budget
resumes the same trials. Launchers spread over several machines keep one ledger per machine.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from bench.core import procs

ADMITTED, REFUSED, WAIT = "admitted", "refused", "wait"
BUDGET_EXHAUSTED = "budget_exhausted"
PILOT_POLL_S = 0.5


class BudgetError(ValueError):
    """A `study.budget_*` value is wrong; the message names the key and the fix."""


@dataclass(frozen=True)
class Budget:
    usd: float | None = None
    tokens: float | None = None
    trial_usd: float | None = None  # the estimate per trial before any trial has ended
    trial_tokens: float | None = None

    @classmethod
    def from_study(cls, study: Mapping[str, Any]) -> Budget | None:
        """The study's budget, or None when it has none."""
        keys = {
            "usd": "budget_usd",
            "tokens": "budget_tokens",
            "trial_usd": "trial_estimate_usd",
            "trial_tokens": "trial_estimate_tokens",
        }
        values: dict[str, float | None] = {}
        for field_, key in keys.items():
            v = study.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0):
                raise BudgetError(f"study.{key} must be a number >= 0 (or null), got {v!r}")
            values[field_] = None if v is None else float(v)
        budget = cls(**values)
        return budget if budget.usd is not None or budget.tokens is not None else None

    def estimate(self, state: Mapping[str, Any]) -> tuple[float, float] | None:
        """(usd, tokens) one more trial is expected to cost, or None: no estimate yet."""
        if state.get("ended", 0) > 0:
            return state["spent_usd"] / state["ended"], state["spent_tokens"] / state["ended"]
        if self.trial_usd is not None or self.trial_tokens is not None:
            return self.trial_usd or 0.0, self.trial_tokens or 0.0
        return None

    def exceeded(self, usd: float, tokens: float) -> bool:
        return (self.usd is not None and usd > self.usd + 1e-12) or (
            self.tokens is not None and tokens > self.tokens
        )


def ledger_path(results_dir: str | Path, study: str) -> Path:
    return Path(results_dir) / "budget" / f"{study}.json"


_EMPTY: dict[str, Any] = {
    "spent_usd": 0.0,
    "spent_tokens": 0.0,
    "ended": 0,
    "reserved": {},
    "exhausted": False,
    "refused": 0,
}
_local = threading.Lock()


def update(path: Path, change: Any) -> Any:
    """Apply `change(state)` to the ledger under its lock; returns what `change` returns. The lock
    is a file of its own, and the ledger is replaced whole, so a kill mid-write loses no spend."""
    with _local:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(path.with_suffix(".lock"), mode=0o644, poll_interval=0.005):
            state = {**_EMPTY, **(json.loads(path.read_text()) if path.exists() else {})}
            state["reserved"] = {
                k: v
                for k, v in state["reserved"].items()
                if procs.alive(int(v[2]), v[3] if len(v) > 3 else None)
            }
            out = change(state)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(state, sort_keys=True))
            os.replace(tmp, path)
            return out


def seed(path: Path, spent_usd: float, spent_tokens: float, ended: int) -> dict[str, Any]:
    """At multirun start: what earlier invocations spent, from MLflow; nothing reserved, not exhausted."""

    def reset(state: dict[str, Any]) -> dict[str, Any]:
        state.clear()
        state.update(
            {
                **_EMPTY,
                "reserved": {},
                "spent_usd": float(spent_usd),
                "spent_tokens": float(spent_tokens),
                "ended": int(ended),
            }
        )
        return dict(state)

    return dict(update(path, reset))


def read(path: Path) -> dict[str, Any]:
    return dict(update(path, lambda state: dict(state))) if path.exists() else dict(_EMPTY)


class Gate:
    """One trial's passage through the budget: admit, then settle (or release)."""

    def __init__(self, budget: Budget | None, path: Path) -> None:
        self.budget, self.path = budget, path
        self.ticket: str | None = None

    @classmethod
    def for_trial(cls, study_cfg: Mapping[str, Any], results_dir: str | Path, study: str) -> Gate:
        return cls(Budget.from_study(study_cfg), ledger_path(results_dir, study))

    def admit(self) -> str:
        if self.budget is None:
            return ADMITTED
        budget, ticket = self.budget, uuid.uuid4().hex

        def decide(state: dict[str, Any]) -> str:
            if state["exhausted"]:
                state["refused"] += 1
                return REFUSED
            est = budget.estimate(state)
            if est is None:  # no estimate yet: the first trial is the pilot, alone
                if state["reserved"]:
                    return WAIT
                est = (0.0, 0.0)
            held_usd = sum(v[0] for v in state["reserved"].values())
            held_tokens = sum(v[1] for v in state["reserved"].values())
            if budget.exceeded(
                state["spent_usd"] + held_usd + est[0], state["spent_tokens"] + held_tokens + est[1]
            ):
                state["exhausted"] = True
                state["refused"] += 1
                return REFUSED
            state["reserved"][ticket] = [est[0], est[1], os.getpid(), procs.start_ticks(os.getpid())]
            return ADMITTED

        verdict = str(update(self.path, decide))
        if verdict == ADMITTED:
            self.ticket = ticket
        return verdict

    def wait(self, poll_s: float = PILOT_POLL_S) -> None:
        """Until the pilot has ended (or died): reads only the ledger, so waiting trials cost
        neither the host's trial lock nor MLflow queries."""
        assert self.budget is not None
        while True:
            state = read(self.path)
            if state["exhausted"] or self.budget.estimate(state) is not None or not state["reserved"]:
                return
            time.sleep(poll_s)

    def settle(self, usd: float, tokens: float) -> None:
        """The trial ended: its reservation becomes what it cost."""
        if self.ticket is None:
            return
        ticket, self.ticket = self.ticket, None

        def spend(state: dict[str, Any]) -> None:
            state["reserved"].pop(ticket, None)
            state["spent_usd"] += float(usd)
            state["spent_tokens"] += float(tokens)
            state["ended"] += 1

        update(self.path, spend)

    def release(self) -> None:
        """The trial never ran (skipped, or failed before its run existed): nothing was spent."""
        if self.ticket is None:
            return
        ticket, self.ticket = self.ticket, None
        update(self.path, lambda state: state["reserved"].pop(ticket, None))


def spent_so_far(uri: str, experiment: str, study: str) -> tuple[float, float, int]:
    """(USD, tokens, trials) the study's trial runs in MLflow have cost, whatever their status."""
    from bench.tracking.runs import _client

    client = _client(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return 0.0, 0.0, 0
    runs = client.search_runs(
        [exp.experiment_id],
        filter_string=(f"tags.study = '{study}' and tags.`ctxbench.kind` = 'trial'"),
        max_results=50000,
    )
    usd = sum(r.data.metrics.get("cost_usd", 0.0) for r in runs)
    tokens = sum(
        r.data.metrics.get("tokens_input_total", 0.0) + r.data.metrics.get("tokens_output_total", 0.0)
        for r in runs
    )
    return float(usd), float(tokens), sum(1 for r in runs if "cost_usd" in r.data.metrics)


def describe(budget: Budget, state: Mapping[str, Any], remaining: int | None) -> str:
    """`budget $B: spent $S; next trial ~$e (from ...); projected $P` for the log and progress line."""
    est = budget.estimate(state)
    source = (
        f"mean of {state['ended']} ended"
        if state.get("ended")
        else "study.trial_estimate_*"
        if est is not None
        else "none yet: the first trial is the pilot"
    )
    parts = []
    if budget.usd is not None:
        proj = (
            ""
            if est is None or remaining is None
            else f", projected ${state['spent_usd'] + est[0] * remaining:.4f}"
        )
        each = "" if est is None else f" (~${est[0]:.4f}/trial, {source})"
        parts.append(f"spent ${state['spent_usd']:.4f} of ${budget.usd:.4f}{each}{proj}")
    if budget.tokens is not None:
        proj = (
            ""
            if est is None or remaining is None
            else f", projected {state['spent_tokens'] + est[1] * remaining:.0f}"
        )
        parts.append(f"{state['spent_tokens']:.0f} of {budget.tokens:.0f} tokens{proj}")
    if est is None and budget.usd is None:
        parts.append(source)
    return "budget: " + "; ".join(parts)
