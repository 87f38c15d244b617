"""A study's progress: the trials its sweep plans, and the `progress.jsonl` records its jobs
append (one line each, from whichever process ran the trial), summarised as `done/total,
failures, ETA`."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("ctxbench.study")


def planned_jobs(cfg: DictConfig) -> list[list[str]] | None:
    """The override lists Hydra's BasicSweeper (or ours, which sweeps alike) will launch (None for others)."""
    try:
        target = str(OmegaConf.select(cfg, "hydra.sweeper._target_") or "")
        if not target.endswith(("BasicSweeper", "CtxbenchSweeper")):
            return None
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra.core.override_parser.overrides_parser import OverridesParser

        params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
        args = [f"{k}={v}" for k, v in params.items()] + list(
            OmegaConf.select(cfg, "hydra.overrides.task") or []
        )
        batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(args), None)
        return [list(job) for job in batches[0]]
    except Exception:  # counting is a nicety; never stop a study over it
        log.debug("could not expand the sweep", exc_info=True)
        return None


def _fmt_s(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def summarize(records: Sequence[Mapping[str, Any]], total: int | None, elapsed_s: float) -> dict[str, Any]:
    latest: dict[Any, Mapping[str, Any]] = {}
    for r in records:  # a job recorded twice (a launcher retry) counts once: its latest record
        latest[r.get("job")] = r
    counts = Counter(str(r.get("outcome")) for r in latest.values())
    done = len(latest)
    executed = done - counts["skipped"] - counts["running_elsewhere"] - counts["budget_exhausted"]
    remaining = (total - done) if total is not None else None
    eta = None
    if remaining is not None and executed > 0 and elapsed_s > 0:
        eta = remaining / (executed / elapsed_s)
    return {
        "done": done,
        "total": total,
        "executed": executed,
        "counts": dict(counts),
        "elapsed_s": round(elapsed_s, 1),
        "eta_s": None if eta is None else round(eta, 1),
    }


def progress_line(study: str, s: Mapping[str, Any]) -> str:
    c = s["counts"]
    total = s["total"] if s["total"] is not None else "?"
    pct = f" ({100 * s['done'] / s['total']:.0f}%)" if s["total"] else ""
    eta = _fmt_s(s["eta_s"]) if s["eta_s"] is not None else "?"
    return (
        f"[study {study}] {s['done']}/{total}{pct} done: {c.get('success', 0)} ok, "
        f"{c.get('failure', 0)} failed, {c.get('error', 0) + c.get('killed', 0)} infra errors, "
        f"{c.get('crashed', 0)} crashed, {c.get('skipped', 0) + c.get('running_elsewhere', 0)} skipped"
        + (f", {c['budget_exhausted']} not started (budget)" if c.get("budget_exhausted") else "")
        + f" | elapsed {_fmt_s(s['elapsed_s'])}, ETA {eta}"
    )


def read_progress(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


class Tail:
    """A progress file read incrementally: each `read()` parses only the lines appended since the
    last (a study's workers each summarise after every job; reading the whole file every time
    cost O(jobs) per job, 33 ms a job by the end of the 4,800-trial grid). Returns the latest
    record of every job, as `summarize` counts them. A line not yet ended is left for the next read."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.latest: dict[Any, dict[str, Any]] = {}
        self._lock = threading.Lock()  # hydra/launcher=ctxbench_threads: jobs end in threads

    def read(self) -> list[dict[str, Any]]:
        with self._lock:
            try:
                with self.path.open("rb") as f:
                    f.seek(self.offset)
                    chunk = f.read()
            except FileNotFoundError:
                chunk = b""
            end = chunk.rfind(b"\n") + 1
            self.offset += end
            for line in chunk[:end].splitlines():
                with contextlib.suppress(ValueError):
                    r = json.loads(line)
                    self.latest[r.get("job")] = r
            return list(self.latest.values())


_TAILS: dict[str, Tail] = {}  # per process: the callback itself is unpickled anew for every job


def tail(path: Path) -> Tail:
    key = str(path)
    if key not in _TAILS:
        _TAILS.setdefault(key, Tail(path))  # setdefault: two threads never keep two tails
    return _TAILS[key]


def _append(path: Path, record: Mapping[str, Any]) -> None:
    # One write() of one line with O_APPEND: concurrent workers never interleave within a line.
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
