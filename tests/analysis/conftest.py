"""A synthetic ctxbench study written to a temporary sqlite MLflow db, in the harness schema.

Deterministic and with known answers: success is drawn from one shared uniform per
(task seed, rep) (common random numbers), so pairs are monotone; a trial whose
outcome differs from its baseline twin diverges one turn after its latest
compaction / truncation / drift event (turn 2 if it has none), so the attribution
is known in advance (``expected_trigger``).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest

STRATEGIES = ("raw", "compaction", "ledger", "subagent")
ARMS = ("baseline", "compaction", "drift", "drift_compaction")
P_SUCCESS = {
    "raw": (0.80, 0.45, 0.50, 0.30), "compaction": (0.80, 0.60, 0.55, 0.40),
    "ledger": (0.85, 0.80, 0.80, 0.75), "subagent": (0.85, 0.75, 0.70, 0.65),
}
PRESSURE = {"raw": ("context_truncation", 4), "compaction": ("compaction", 4), "ledger": ("compaction", 8)}
DRIFT_TURN = 6


def unit(*key) -> float:
    """A uniform in [0, 1) from a key: the fixture's only source of randomness."""
    h = hashlib.sha256(json.dumps(key).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def triggers(strategy: str, arm: str) -> list[tuple[int, str]]:
    out = []
    if "compaction" in arm and strategy in PRESSURE:
        kind, turn = PRESSURE[strategy]
        out.append((turn, kind))
    if "drift" in arm:
        out.append((DRIFT_TURN, "drift"))
    return sorted(out)


def success(strategy: str, arm: str, seed: int, rep: int) -> int:
    return int(unit("luck", seed, rep) < P_SUCCESS[strategy][ARMS.index(arm)])


def expected_trigger(strategy: str, arm: str, turns: int) -> tuple[str, int]:
    """(trigger, divergence turn) for a trial whose outcome differs from baseline."""
    trig = [t for t in triggers(strategy, arm) if t[0] + 1 < turns]
    return (trig[-1][1], trig[-1][0] + 1) if trig else ("none", 2)


def events(strategy: str, arm: str, seed: int, rep: int, turns: int, diverge_at: int | None) -> list[dict]:
    out: list[dict] = []

    def add(turn: int, kind: str, **fields):
        prev = hashlib.sha256(json.dumps(out[-1], sort_keys=True).encode()).hexdigest()[:16] if out else ""
        out.append({"seq": len(out), "turn": turn, "kind": kind, "prev": prev,
                    "t": {"ts": 1_700_000_000 + len(out), "latency_s": unit("lat", seed, rep, len(out))}, **fields})

    add(0, "trial_start", task_seed=seed, rep=rep)
    trig = dict((t, k) for t, k in triggers(strategy, arm) if t < turns)
    for turn in range(turns):
        if trig.get(turn) == "drift":
            add(turn, "drift", drift_id=f"d{seed}", drift_kind="new_caller", commit="abc", message="caller added")
        elif trig.get(turn):
            add(turn, trig[turn], tokens_before=9000, tokens_after=3000, summary_sha="s", usage={})
        alt = "-alt" if diverge_at is not None and turn >= diverge_at else ""
        add(turn, "model_call", stop_reason="tool_use")
        add(turn, "tool_call", call_id=f"c{turn}a-{strategy}", name="edit_file",
            args={"path": f"src/mod{(seed + turn) % 5}.py", "edit": f"s{turn}{alt}"})
        add(turn, "tool_call", call_id=f"c{turn}b", name="run", args={"cmd": "pytest -q"})
        add(turn, "tool_result", call_id=f"c{turn}b", ok=True)
    add(turns - 1, "trial_end", success=True, failure_reason="")
    return out


def curves(strategy: str, arm: str, seed: int, rep: int, turns: int) -> dict[str, list[float]]:
    tight = "compaction" in arm
    c: dict[str, list[float]] = {k: [] for k in ("prompt_tokens", "cached_tokens", "output_tokens",
                                                  "context_tokens", "cumulative_tokens", "turn_latency_s", "ttft_s")}
    total = 0.0
    for t in range(turns):
        noise = 1 + 0.25 * (unit("tok", strategy, arm, seed, rep, t) - 0.5)
        if strategy in ("raw", "compaction"):
            prompt = 1200 + 700 * t
            if tight:
                prompt = min(prompt, 4000) if strategy == "raw" else (prompt if t < 4 else 1500 + 400 * (t - 4))
            hit = 0.85 if strategy == "raw" else (0.7 if t != 4 else 0.0)
        else:
            prompt, hit = (2600 if strategy == "ledger" else 1800), (0.3 if strategy == "ledger" else 0.2)
        prompt = round(prompt * noise)
        cached = round(prompt * hit) if t > 0 else 0
        out = round(300 * (1 + unit("out", strategy, seed, rep, t)))
        total += prompt + out
        ttft = 0.2 + 0.0002 * (prompt - cached) + 0.00002 * cached
        for k, v in (("prompt_tokens", prompt), ("cached_tokens", cached), ("output_tokens", out),
                     ("context_tokens", prompt), ("cumulative_tokens", total), ("ttft_s", ttft),
                     ("turn_latency_s", ttft + out * 0.004)):
            c[k].append(float(v))
    return c


@dataclass
class Fixture:
    uri: str
    experiment: str
    study: str
    parent_run_id: str
    seeds: int
    reps: int
    root: Path
    finished: int = 0
    excluded: int = 0
    run_ids: dict = field(default_factory=dict)


def build_study(root: Path, *, seeds: int = 2, reps: int = 2, study: str = "demo", experiment: str = "ctxbench",
                with_events: bool = True, extras: bool = True, strategies=STRATEGIES, arms=ARMS,
                status: str = "FINISHED") -> Fixture:
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    root.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(
        experiment, artifact_location=(root / "artifacts").as_uri())
    clock = [1_700_000_000_000]

    def tick() -> int:
        clock[0] += 1000
        return clock[0]

    parent = client.create_run(exp_id, start_time=tick(), run_name=f"study {study}",
                               tags={"ctxbench.kind": "study", "study": study})
    fx = Fixture(uri, experiment, study, parent.info.run_id, seeds, reps, root)

    def trial(strategy, arm, seed, rep, *, status="FINISHED", ok=None, reason="", family="signature_migration"):
        turns = 9 + seed % 2
        ok = success(strategy, arm, seed, rep) if ok is None else ok
        base_ok = success(strategy, "baseline", seed, rep)
        diverge = expected_trigger(strategy, arm, turns)[1] if ok != base_ok else None
        c = curves(strategy, arm, seed, rep, turns)
        ts = tick()
        metrics = [Metric(k, v, ts, step) for k, vals in c.items() for step, v in enumerate(vals)]
        # The harness also logs latency_s per turn, then the final total at step=turns.
        metrics += [Metric("latency_s", v, ts, step) for step, v in enumerate(c["turn_latency_s"])]
        pressure = [k for _, k in triggers(strategy, arm)]
        cin, cread, cout = sum(c["prompt_tokens"]), sum(c["cached_tokens"]), sum(c["output_tokens"])
        final = {"success": ok, "steps_passed": 6 if ok else 3, "first_failed_step": -1 if ok else 3,
                 "turns": turns, "tokens_input_total": cin, "tokens_output_total": cout,
                 "tokens_cache_read_total": cread, "tokens_cache_write_total": cin - cread,
                 "cache_hit_ratio": cread / cin, "cost_usd": (cin - cread) * 3e-6 + cread * 3e-7 + cout * 15e-6,
                 "latency_s": sum(c["turn_latency_s"]), "wall_s": sum(c["turn_latency_s"]) + 5,
                 "compactions": pressure.count("compaction"), "context_truncations": pressure.count("context_truncation"),
                 "output_truncations": 0, "drift_events": pressure.count("drift"),
                 "invariant_violations": 0 if ok else 1, "policy_violations": 0}
        metrics += [Metric(k, float(v), ts + 1, turns if k == "latency_s" else 0) for k, v in final.items()]
        tree = hashlib.sha1(f"{seed}:{ok}:{rep % 2 if strategy in ('raw', 'compaction') else 0}".encode()).hexdigest()
        tags = {"ctxbench.kind": "trial", "study": study, "mlflow.parentRunId": parent.info.run_id,
                "strategy": strategy, "arm": arm, "task_family": family, "task_seed": str(seed), "rep": str(rep),
                "model": "sim", "status": ("success" if ok else "failure") if status == "FINISHED" else "error",
                "failure_reason": reason if status != "FINISHED" else ("" if ok else "final_check_failed"),
                "config_hash": hashlib.sha1(f"{strategy}{arm}{seed}{rep}".encode()).hexdigest()[:12],
                "git_sha": "0" * 40, "final_tree_sha": tree}
        run = client.create_run(exp_id, start_time=ts, tags=tags,
                                run_name=f"{strategy}·{arm}·{family}#{seed}·rep{rep}")
        params = {"strategy.name": strategy, "arm.name": arm, "arm.window": 8000 if "compaction" in arm else 200000,
                  "task.seed": seed, "task.family": family, "model.name": "sim", "rep": rep}
        client.log_batch(run.info.run_id, metrics=metrics, params=[Param(k, str(v)) for k, v in params.items()])
        if with_events:
            text = "\n".join(json.dumps(e) for e in events(strategy, arm, seed, rep, turns, diverge)) + "\n"
            client.log_text(run.info.run_id, text, "events.jsonl")
        client.set_terminated(run.info.run_id, status, end_time=tick())
        fx.run_ids[(strategy, arm, seed, rep, status)] = run.info.run_id
        return run.info.run_id

    if extras:  # an older run of an identity that is re-run below: must be dropped as duplicate
        trial("raw", "baseline", 0, 0, ok=0)
        fx.excluded += 1
    for seed in range(seeds):
        for rep in range(reps):
            for strategy in strategies:
                for arm in arms:
                    trial(strategy, arm, seed, rep, status=status, reason="" if status == "FINISHED" else "timeout")
                    fx.finished += status == "FINISHED"
    if extras:
        trial("ledger", "drift", 0, reps, status="FAILED", reason="sandbox_lost")
        trial("raw", "compaction", 1, reps, status="FAILED", reason="provider_error")
        trial("subagent", "baseline", 0, reps, status="KILLED", reason="killed")
        fx.excluded += 3
    client.set_terminated(parent.info.run_id, "FINISHED", end_time=tick())
    return fx


@pytest.fixture(scope="session")
def study(tmp_path_factory) -> Fixture:
    root = tmp_path_factory.mktemp("ctxbench")
    fx = build_study(root / "db")
    build_study(root / "db", seeds=1, reps=1, study="other", extras=False, with_events=False,
                strategies=("raw", "ledger"), arms=("baseline",))
    build_study(root / "db", seeds=1, reps=1, study="broken", extras=False, with_events=False,
                strategies=("raw",), arms=("baseline",), status="FAILED")
    return fx


@pytest.fixture(scope="session")
def runs(study):
    from analysis import load_runs

    return load_runs(study.uri, study.experiment, study.study)


def approx_nan(a, b, tol=1e-9) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol
