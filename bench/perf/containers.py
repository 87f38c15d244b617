"""CPU of one study's own containers and of the engine, for the CPU-bound regime of `make bench`.

The engine's parent cgroup (docker/, all containers) counts every container on the machine,
those of other studies and other users included; the trials' `sandbox_cpu_s` (trial_end)
counts only what ran inside each trial's window, not a container's start, its renewal between
trials (sandbox.reuse) or its close. So the figure is each of the study's containers (found by
its `ctxbench.study` label) read from its own cgroup while it lives: its last reading is its
whole life's CPU, less what it used after that reading (one poll interval at most).

The engine is dockerd, containerd, a shim per container and runc, which the shim starts for
every `docker exec` (~35 ms of CPU each here, about twice the daemons' own share). runc ends
within the call, too soon for any poll, so the engine is read from the cgroups its daemons run
in (scripts/ensure_docker.sh starts dockerd in one of its own), where what they start is
counted. Where a daemon runs in the machine's root cgroup, that would be the whole machine:
then only the daemons' own CPU is read from /proc, and runc is not counted (`engine_cpu_s`).
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from bench.sandbox.engine import cgroup_cpu_s, container_cpu_s
from ctxlog.reader import Log

ENGINE = ("dockerd", "containerd")  # and every containerd-shim*
CONTAINER_PARENTS = ("/docker", "/system.slice")  # where Docker's cgroupfs and systemd drivers put containers


def _engine_processes() -> list[tuple[str, str]]:
    """(pid, /proc/<pid>/stat) of the engine's daemons running now (a shim whose container is
    gone stays a zombie until init reaps it: it is left out)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text.split("(", 1)[1].rsplit(")", 1)
        if (name in ENGINE or name.startswith("containerd-shim")) and rest.split()[
            0
        ] != "Z":  # a zombie has no cgroup
            out.append((stat.parent.name, text))
    return out


def accounting_file(proc_cgroup: str, sys_root: Path = Path("/sys/fs/cgroup")) -> Path | None:
    """The CPU accounting file of the cgroup a process runs in, from its /proc/<pid>/cgroup: v1's
    cpuacct (`2:cpuacct:/path` or `3:cpu,cpuacct:/path`), else v2's (`0::/path`, the unified
    hierarchy mounted alone or beside v1). None if it holds the containers' cgroups too (the
    root cgroup is the whole machine) or has no such file."""
    lines = [line.split(":", 2) for line in proc_cgroup.splitlines() if line.count(":") >= 2]
    v1 = [(names, path) for _, names, path in lines if "cpuacct" in names.split(",")]
    v2 = [path for hid, names, path in lines if hid == "0" and not names]
    candidates = [(sys_root / names / path.lstrip("/") / "cpuacct.usage", path) for names, path in v1] or [
        (base / path.lstrip("/") / "cpu.stat", path)
        for path in v2
        for base in (sys_root, sys_root / "unified")
    ]
    for file, path in candidates:
        if not any((c + "/").startswith(path.rstrip("/") + "/") for c in CONTAINER_PARENTS) and file.exists():
            return file
    return None


def engine_cpu_s() -> tuple[float | None, str]:
    """The engine's CPU seconds so far, and how it was read: "cgroup" (every daemon in a cgroup of
    its own: what they start counts) or "daemons" (their own CPU from /proc: runc missed)."""
    procs = _engine_processes()
    if not procs:
        return None, "none"
    files = set()
    for pid, _ in procs:
        try:
            text = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:  # ended since: what it used stays in its cgroup
            continue
        if text:
            files.add(accounting_file(text))
    if files and None not in files:
        try:
            return sum(cgroup_cpu_s(f.read_text()) for f in files if f is not None), "cgroup"
        except (OSError, ValueError, IndexError):
            pass
    tick = os.sysconf("SC_CLK_TCK")
    return sum(
        (int(text.rsplit(")", 1)[1].split()[11]) + int(text.rsplit(")", 1)[1].split()[12])) / tick
        for _, text in procs
    ), "daemons"


class StudyContainers(threading.Thread):
    """Polls the containers labelled `ctxbench.study=<study>` every `every_s`."""

    def __init__(self, study: str, every_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.study, self.every_s, self.stop = study, every_s, threading.Event()
        self.last: dict[str, float] = {}  # container id: its CPU seconds at the last poll

    def poll(self) -> None:
        ids = subprocess.run(
            ["docker", "ps", "-q", "--no-trunc", "--filter", f"label=ctxbench.study={self.study}"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
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
        end = Log.from_path(log).end
        cpu = end.t.get("sandbox_cpu_s") if end is not None else None
        if cpu is not None:
            total, found = total + float(cpu), True
    return total if found else None
