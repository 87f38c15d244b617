"""The final acceptance's hidden checks (tasks/common/hidden.py; issue 42, item 3): how
certify.py runs them and records their verdict apart from the visible one.

The task's hidden test file (`TaskSpec.hidden`, held by `HarnessCopy`) never lands anywhere the
agent's uid can read (docs/threat_model.md, "Hidden checks"). It is not in the working copy, not
in any judge's copy: the harness hands it to the launcher over a FIFO beside the judge's copy
(`deliver`), once, before the launcher has started any process of the agent's (the exec's reap
ran first). A process of the launcher's, as the container's root, reads it and writes it into a
fresh directory (mkdtemp, 0700) given to the comparers' uid; the launcher itself never holds the
text, so no server it forks later inherits it. The comparer serves that file to the loader in
place of `tools/hidden/...` of the tree (comparer.py), and it runs as one more group of the same
exec, judged like the others. The `check` event keeps `passed` for the visible parts and `hidden`
= {"passed", "parts"} for these; the trial's verdict needs both, and `success_visible`
(bench/eventlog/measures.py) is the verdict without them.

Limits: the certified tree sha excludes the file (it is not the agent's). With `sandbox=local`
there is no uid to keep it from (the local sandbox isolates nothing, by design): the code under
test can read the comparer's directory.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import posixpath
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from bench.sandbox.judge import HIDDEN_CHANNEL, judge_root

GROUP = "hidden"


def files(copy: Any, step_id: str) -> dict[str, str]:
    """The hidden files to write for this check: the task's, for the final acceptance only."""
    return dict(copy.hidden) if step_id == "final" and copy.hidden_check else {}


def key(copy: Any) -> str:
    """What of the hidden checks decides a verdict, for the check cache's key."""
    return (
        copy.hidden_check + " " + hashlib.sha256(json.dumps(sorted(copy.hidden.items())).encode()).hexdigest()
    )


@contextlib.contextmanager
def deliver(sandbox: Any, tree: str, hidden: Mapping[str, str]) -> Iterator[str]:
    """A FIFO beside the judge's copy that hands `hidden` (JSON {path: text}) to the first reader,
    once; yields its path as the launcher sees it. The writer waits for a reader without blocking
    (so it can stop when the exec is over), writes, closes: a later reader gets nothing. Removed
    when the exec is over."""
    # Docker: the judge's copy is at /work of the judge's container, the channel at /judge (docker.py)
    here, there = getattr(sandbox, "judge_channel", (judge_root(sandbox.workdir), posixpath.dirname(tree)))
    host = here / HIDDEN_CHANNEL
    host.unlink(missing_ok=True)
    os.mkfifo(host)
    os.chmod(host, 0o644)  # the container's root has no CAP_DAC_OVERRIDE: it reads as "other"
    data, stop = json.dumps(dict(hidden)).encode(), threading.Event()

    def write() -> None:
        while not stop.is_set():
            try:
                fd = os.open(host, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                    return
                stop.wait(0.005)
                continue
            try:
                os.set_blocking(fd, True)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError:  # the reader died (the timeout): the hidden parts fail without the file
                pass
            finally:
                os.close(fd)
            return

    writer = threading.Thread(target=write, name="hidden-checks", daemon=True)
    writer.start()
    try:
        yield posixpath.join(there, HIDDEN_CHANNEL)
    finally:
        stop.set()
        writer.join()
        host.unlink(missing_ok=True)


def with_files(
    entries: Mapping[str, tuple[str, bytes]], hidden: Mapping[str, str]
) -> dict[str, tuple[str, bytes]]:
    return {**entries, **{p: ("file", c.encode()) for p, c in hidden.items()}}


def verdict(parts: tuple, judged: list[tuple[bool, str, bool]], timed_out: bool) -> dict[str, Any]:
    """The hidden group's record: {"passed", "parts": [{"part", "ok", "why"}]}."""
    rows = [{"part": p.text, "ok": ok, "why": why} for p, (ok, why, _) in zip(parts, judged, strict=True)]
    return {"passed": all(r["ok"] for r in rows) and not timed_out, "parts": rows}
