"""Is a process of this host still the one that was recorded? A pid and its start time
(the budget's reservations, the resume check, the sweep of containers whose creator is gone).

pid_max is 32,768 on these machines, so pids wrap within minutes under load: a pid alone may
name a newer, unrelated process, and a dead worker's claim on the budget or on a trial would
then look alive for as long as that process lives. The start time (field 22 of
/proc/PID/stat, in clock ticks since boot) tells the two apart.
"""

from __future__ import annotations

import os


def _stat(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
    except (OSError, IndexError):
        return None


def start_ticks(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def alive(pid: int, start: int | None = None) -> bool:
    """`pid` runs, is no zombie, and (when `start` is given) started when it was recorded."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _stat(pid)
    if fields is None:  # no /proc (not Linux): the signal's answer is all there is
        return True
    if fields[0] in (b"Z", b"X"):  # killed, not yet reaped by its parent: dead too
        return False
    return start is None or start_ticks(pid) == start
