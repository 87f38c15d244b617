"""The I/O-bound regime of `make bench`: many trials in flight against a provider's rate limit.

The loopback server (bench.serve, in this process) answers as the sim, paced like a hosted
model (`--time-scale`), and emulates the provider's limits (RPM, input TPM, 429 + retry-after).
The study runs in one process with hydra/launcher=ctxbench_threads, its calls held back by the
shared limiter configured with the same limits. Measured:

- trials in flight (peak overlap of the trials' [start, end]), the harness process's peak RSS
  and that of its children (the local sandboxes' checks, git), per trial in flight;
- wall against the ideal: the longest trial's own provider time, or what the limit allows
  (calls beyond a bucket's burst at `rpm`, input tokens beyond it at `input_tpm`), whichever
  is longer; the limiter's saturation (calls and input tokens per minute / the limits);
- 429s the server sent, and every trial's verdict by (family, seed), to compare with a run of
  one trial per process.

    python -m bench.perf.inflight --trials 128 --rpm 600 --input-tpm 400000 --time-scale 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.config import ROOT
from bench.perf.starts import start_phases
from ctxlog import events as ev
from ctxlog.reader import Log

SEEDS_PER_FAMILY = ("signature_migration", "extract_module")


def plan(trials: int, sandbox: str = "local") -> list[str]:
    """`trials` trials, each its own conversation on the server (task id and seed differ)."""
    per = -(-trials // len(SEEDS_PER_FAMILY))
    return [
        "strategy=ledger",
        "arm=baseline",
        f"task={','.join(SEEDS_PER_FAMILY)}",
        f"task.seed=range(0,{per})",
        "++task.size.steps=6",
        f"sandbox={sandbox}",
    ]


def _sim_model_overrides(url: str, n: int, rpm: float | None, itpm: float | None) -> list[str]:
    """model=openai pointed at the server, with the sim's window, output and prices (same verdicts)."""
    over = [
        f"model.base_url={url}/v1",
        "model.model_id=sim",
        "model.window=200000",
        "model.max_output=4096",
        "model.price.input=3.0",
        "model.price.output=15.0",
        "model.price.cache_read=0.3",
        "model.price.cache_write=3.75",
        f"model.max_concurrency={n}",
        "model.max_retries=10",
        "model.timeout_s=300",
    ]
    if rpm:
        over.append(f"model.rate_limit.rpm={rpm}")
    if itpm:
        over.append(f"model.rate_limit.input_tpm={itpm}")
    return ["model=openai", *over]


class _Peak(threading.Thread):
    """Peak RSS of a process, and of all its descendants together, polled every 0.25 s; with
    Docker, the peak memory of the study's containers together (their cgroups, every 2 s)."""

    def __init__(self, pid: int, study: str = "") -> None:
        super().__init__(daemon=True)
        self.pid, self.harness, self.children, self.stop = pid, 0, 0, threading.Event()
        self.study, self.containers, self.containers_n = study, 0, 0

    def _containers(self) -> None:
        ids = subprocess.run(
            ["docker", "ps", "-q", "--no-trunc", "--filter", f"label=ctxbench.study={self.study}"],
            capture_output=True,
            text=True,
        ).stdout.split()
        used = 0
        for cid in ids:
            for path in (
                f"/sys/fs/cgroup/memory/docker/{cid}/memory.usage_in_bytes",  # cgroup v1, v2
                f"/sys/fs/cgroup/docker/{cid}/memory.current",
            ):
                with contextlib.suppress(OSError, ValueError):
                    used += int(Path(path).read_text())
                    break
        self.containers, self.containers_n = max(self.containers, used), max(self.containers_n, len(ids))

    def run(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        polls = 0
        while not self.stop.wait(0.25):
            polls += 1
            if self.study and polls % 8 == 0:
                with contextlib.suppress(OSError):
                    self._containers()
            try:
                self.harness = max(self.harness, root.memory_info().rss)
                kids = 0
                for c in root.children(recursive=True):
                    try:
                        kids += c.memory_info().rss
                    except psutil.Error:
                        pass
                self.children = max(self.children, kids)
            except psutil.Error:
                return


def peak_overlap(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = best = 0
    for _, d in edges:
        now += d
        best = max(best, now)
    return best


def verdicts(results: Path, study: str) -> dict[str, dict[str, Any]]:
    """Each trial of the study by `family#seed`: verdict, reason, steps, turns, its provider time."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{results}/mlflow.db")
    exp = client.get_experiment_by_name("ctxbench")
    if exp is None:
        return {}
    out = {}
    for r in client.search_runs(
        [exp.experiment_id],
        max_results=50000,
        filter_string=(
            f"tags.study = '{study}' and tags.`ctxbench.kind` = 'trial' and attributes.status = 'FINISHED'"
        ),
    ):
        t, m = r.data.tags, r.data.metrics
        logs = list((results / "trials").glob(f"{t['config_hash']}-*/events.jsonl"))
        out[f"{t['task_family']}#{t['task_seed']}"] = {
            "time": where_time_went(logs[0]) if len(logs) == 1 else {},
            "status": t.get("status"),
            "reason": t.get("failure_reason", ""),
            "steps": m.get("steps_passed"),
            "turns": m.get("turns"),
            "latency_s": m.get("latency_s", 0.0),
            "queue_ms": m.get("queue_ms", 0.0),
            "retries": m.get("provider_retries", 0.0),
        }
    return out


def where_time_went(events: Path) -> dict[str, float]:
    """A trial's wall split from its event log: the provider's time (`latency_s`), waiting for the
    limiter (`queue_s`), checks in the sandbox (`duration_s`), and the rest (the harness's own
    work, its tools, and waiting for a core or the GIL)."""
    provider = queue = checks = wall = 0.0
    for e in Log.from_path(events).events:
        if isinstance(e, ev.ModelCall):
            provider += float(e.t.get("latency_s", 0.0))
            queue += float(e.t.get("queue_s", 0.0))
        elif isinstance(e, ev.Check):
            checks += float(e.t.get("duration_s", 0.0))
        elif isinstance(e, ev.TrialEnd):
            wall = float(e.t.get("wall_s", 0.0))
    return {
        "wall_s": wall,
        "provider_s": provider,
        "queue_s": queue,
        "checks_s": checks,
        "rest_s": wall - provider - queue - checks,
    }


def _mean_split(runs: dict[str, dict[str, Any]]) -> dict[str, float]:
    times = [v["time"] for v in runs.values() if v.get("time")]
    return {k: round(sum(t[k] for t in times) / len(times), 1) for k in times[0]} if times else {}


def inflight_run(
    results: Path,
    trials: int = 128,
    n_jobs: int = 128,
    rpm: float | None = 600,
    input_tpm: float | None = 400_000,
    time_scale: float = 1.0,
    sandbox: str = "local",
) -> dict[str, Any]:
    from bench.serve.limits import ProviderLimits
    from bench.serve.server import LoopbackServer

    study = f"bench-inflight-{uuid.uuid4().hex[:6]}"
    limits = ProviderLimits(rpm, input_tpm)
    with LoopbackServer(limits=limits, time_scale=time_scale) as srv:
        cmd = [
            sys.executable,
            "-m",
            "bench",
            "-m",
            *plan(trials, sandbox),
            *_sim_model_overrides(srv.url, n_jobs, rpm, input_tpm),
            "hydra/launcher=ctxbench_threads",
            f"hydra.launcher.n_jobs={n_jobs}",
            f"study.name={study}",
        ]
        env = {
            **os.environ,
            "CTXBENCH_RESULTS": str(results),
            "OPENAI_API_KEY": "loopback",
            "CTXBENCH_LIMIT_DIR": str(results / "limits"),
        }
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        peak = _Peak(proc.pid, study if sandbox == "docker" else "")
        peak.start()
        out, _ = proc.communicate()
        wall = time.perf_counter() - t0
        peak.stop.set()
        kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        served = limits.stats()
    (results / f"{study}.log").write_text(out)
    if proc.returncode != 0:
        raise RuntimeError(f"in-flight study failed ({proc.returncode}):\n{out[-3000:]}")
    (sweep_dir,) = (results / "hydra" / "multirun" / study).iterdir()
    recs = [json.loads(x) for x in (sweep_dir / "progress.jsonl").read_text().splitlines()]
    runs = verdicts(results, study)
    spans = [(r["ts"] - r["wall_s"], r["ts"]) for r in recs]
    in_flight = peak_overlap(spans)
    span = max(e for _, e in spans) - min(s for s, _ in spans)  # first trial's start to last one's end
    longest = max((v["latency_s"] for v in runs.values()), default=0.0)
    calls, tokens = served["admitted"], served["input_tokens"]
    by_rpm = max(calls - rpm, 0) / rpm * 60 if rpm else 0.0
    by_tpm = max(tokens - input_tpm, 0) / input_tpm * 60 if input_tpm else 0.0
    ideal = max(longest, by_rpm, by_tpm)
    return {
        "study": study,
        "trials": len(recs),
        "n_jobs": n_jobs,
        "wall_s": round(wall, 1),
        "trials_span_s": round(span, 1),
        "startup_s": round(wall - span, 1),
        "ideal_s": round(ideal, 1),
        "span_over_ideal": round(span / ideal, 3) if ideal else None,
        "ideal_from": {
            "longest_trial_provider_s": round(longest, 1),
            "rpm_s": round(by_rpm, 1),
            "input_tpm_s": round(by_tpm, 1),
        },
        "trials_in_flight_peak": in_flight,
        "harness_rss_peak_mb": round(peak.harness / 2**20, 1),
        "children_rss_peak_mb": round(peak.children / 2**20, 1),
        "sandbox": sandbox,
        "containers_mem_peak_mb": round(peak.containers / 2**20, 1),
        "containers_peak": peak.containers_n,
        "harness_mb_per_trial_in_flight": round(peak.harness / 2**20 / max(in_flight, 1), 2),
        "harness_cpu_s": round((kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime), 1),
        "calls": calls,
        "http_429": served["rejected"],
        "input_tokens": tokens,
        "saturation": {
            "rpm": round(calls / (span / 60) / rpm, 3) if rpm else None,
            "input_tpm": round(tokens / (span / 60) / input_tpm, 3) if input_tpm else None,
        },
        "queue_s_total": round(sum(v["queue_ms"] for v in runs.values()) / 1000, 1),
        "retries_total": sum(v["retries"] for v in runs.values()),
        # Where a trial's wall goes (mean over trials; and the longest trial's): what part is the
        # provider's, the limiter's, the sandbox's, and the harness's own (CPU, GIL, tools).
        "trial_time_mean": _mean_split(runs),
        "trial_time_longest": max(
            (v["time"] for v in runs.values() if v.get("time")), key=lambda t: t["wall_s"], default={}
        ),
        "outcomes": {o: sum(1 for r in recs if r["outcome"] == o) for o in {r["outcome"] for r in recs}},
        "start_phases": start_phases(results, study, recs),
        "verdicts": {k: {x: v[x] for x in ("status", "reason", "steps", "turns")} for k, v in runs.items()},
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
    }


def text(r: dict[str, Any]) -> str:
    """The I/O-bound regime's lines for `make bench`'s table."""
    return (
        f"I/O-bound regime: {r['trials']} trials against the loopback server's emulated limit, one process, "
        f"hydra/launcher=ctxbench_threads\n"
        f"  trials in flight (peak)                  {r['trials_in_flight_peak']}\n"
        f"  harness RSS peak                         {r['harness_rss_peak_mb']} MB "
        f"({r['harness_mb_per_trial_in_flight']} MB per trial in flight); its children {r['children_rss_peak_mb']} MB"
        + (
            f"; {r['containers_peak']} containers {r['containers_mem_peak_mb']} MB"
            if r.get("containers_peak")
            else ""
        )
        + "\n"
        f"  trials' span vs ideal                    {r['trials_span_s']} s vs {r['ideal_s']} s "
        f"(x{r['span_over_ideal']}; ideal from {r['ideal_from']}); startup {r['startup_s']} s\n"
        f"  limiter saturation                       {r['saturation']}; {r['http_429']} HTTP 429s, "
        f"{r['calls']} calls, queued {r['queue_s_total']} s in all\n"
        f"  harness CPU                              {r['harness_cpu_s']} s\n"
        f"  a trial's wall, mean (s)                 {r['trial_time_mean']}\n"
        f"  what spreads the starts                  {r.get('start_phases')}\n"
        f"  the longest trial's (s)                  "
        f"{ {k: round(v, 1) for k, v in r['trial_time_longest'].items()} }"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.perf.inflight", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--trials", type=int, default=128)
    p.add_argument("--n-jobs", type=int, default=128)
    p.add_argument("--rpm", type=float, default=600)
    p.add_argument("--input-tpm", type=float, default=400_000)
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--sandbox", choices=("local", "docker"), default="local")
    p.add_argument("--results", type=Path, default=None, help="default: a temp dir, removed afterwards")
    a = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ctxbench-inflight-")) if a.results is None else a.results
    report = {
        "load_avg_start": [round(x, 2) for x in os.getloadavg()],
        **inflight_run(tmp, a.trials, a.n_jobs, a.rpm, a.input_tpm, a.time_scale, a.sandbox),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
