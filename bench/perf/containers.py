"""CPU of one study's own containers, for the CPU-bound regime of `make bench`.

The engine's parent cgroup (docker/, all containers) counts every container on the machine,
those of other studies and other users included; the trials' `sandbox_cpu_s` (trial_end)
counts only what ran inside each trial's window, not a container's start, its renewal between
trials (sandbox.reuse) or its close. So the figure is each of the study's containers (found by
its `ctxbench.study` label) read from its own cgroup while it lives: its last reading is its
whole life's CPU, less what it used after that reading (one poll interval at most).
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from bench.sandbox.engine import container_cpu_s


class StudyContainers(threading.Thread):
    """Polls the containers labelled `ctxbench.study=<study>` every `every_s`."""

    def __init__(self, study: str, every_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.study, self.every_s, self.stop = study, every_s, threading.Event()
        self.last: dict[str, float] = {}  # container id: its CPU seconds at the last poll

    def poll(self) -> None:
        ids = subprocess.run(["docker", "ps", "-q", "--no-trunc", "--filter", f"label=ctxbench.study={self.study}"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        for cid in ids:
            self.seen(cid, container_cpu_s(cid))

    def seen(self, cid: str, cpu_s: float | None) -> None:
        if cpu_s is not None:  # a container's usage only grows: a later reading replaces an earlier
            self.last[cid] = max(cpu_s, self.last.get(cid, 0.0))

    def run(self) -> None:
        while not self.stop.wait(self.every_s):
            try:
                self.poll()
            except (OSError, subprocess.SubprocessError):
                pass

    def total_s(self) -> float | None:
        return sum(self.last.values()) if self.last else None


def trials_window_cpu_s(results: Path) -> float | None:
    """What the trials' own windows say: the sum of `sandbox_cpu_s` over their trial_end events."""
    total, found = 0.0, False
    for log in (results / "trials").glob("*/events.jsonl"):
        for line in log.read_text().splitlines()[::-1]:
            r = json.loads(line)
            if r.get("kind") == "trial_end":
                cpu = r.get("t", {}).get("sandbox_cpu_s")
                if cpu is not None:
                    total, found = total + float(cpu), True
                break
    return total if found else None
