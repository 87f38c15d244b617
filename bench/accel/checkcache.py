"""The check cache (`sandbox.check_cache`): a check's verdict reused by the trials of a study
wherever the whole state that decides it is the same (docs/threat_model.md, "Reused verdicts
and reused sandboxes").

The key is a sha256 over everything that decides a check's result:

* the sandbox: the image's content id and the limits (`Sandbox.identity`);
* the working copy after the harness put the protected files back: every entry, hashed
  (`Sandbox.state_sha`: ignored files, build artefacts and empty directories included);
* the check command and the standing invariant probes run with it (id and command, in order);
* the harness's own check code: the sources of every module that shapes a check's exit status,
  output or verdict (certify.py, launcher.py and the modules it ships, this module,
  harness_copy.py's report limit, the sandboxes' exec, its wrappers and reap (judge.py), output
  tail, paths and report reading: `HARNESS_SHA`), so a fixed judge never reuses an old verdict.

A verdict is looked up and stored only while the sandbox is pristine: no command of the
agent's ran in it, no check left anything outside the working copy, and no check of an earlier
trial ran code in it (bench/accel/pristine.py).
It is stored only when the check also left no process, did not time out, changed nothing in
the working copy and no report was forged. Anything else runs as if there were no cache.

The store is one directory per study, `<results_dir>/check-cache/<study>/`, one JSON file per
key under its first two hex digits, shared by every worker that sees the directory (joblib
processes; Ray or SLURM workers on a shared filesystem). A writer writes a temp file and links
it into place: the first writer of a key wins, a reader never sees half a file, no lock is
needed. An entry that does not parse or names another key is ignored. Each hit is a
`check_cached` event with the key and the trial, run, step and turn that produced the verdict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.types import canonical_json
from bench.sandbox.base import ExecResult, Sandbox

FORMAT = 1
_BENCH = Path(__file__).resolve().parents[1]
_SOURCES = (
    *(_BENCH / "trial" / f"{m}.py" for m in ("certify", "launcher", "remote", "comparer", "harness_copy")),
    *(_BENCH / "accel" / f"{m}.py" for m in ("checkcache", "pristine")),
    *(
        _BENCH / "sandbox" / f"{m}.py"
        for m in ("docker", "judge", "local", "engine", "base", "paths", "workcopy", "workfiles", "restore")
    ),
)
HARNESS_SHA = hashlib.sha256(b"".join(p.read_bytes() for p in _SOURCES)).hexdigest()
_KEY = re.compile(r"^[0-9a-f]{64}$")

# bench/trial/certify.py's: per group, per part (passed, why not, forged)
Judged = list[list[tuple[bool, str, bool]]]


@dataclass(frozen=True)
class Entry:
    exit_code: int
    output: str
    duration_s: float
    judged: Judged
    origin: dict[str, Any]


class CheckCache:
    """One study's store; `origin` names the trial that writes (run_id, trial, study)."""

    def __init__(self, root: Path, origin: Mapping[str, Any]) -> None:
        self.root = root
        self.origin = dict(origin)
        self.hits = self.stores = 0

    @classmethod
    def for_study(cls, results_dir: Path, study: str, origin: Mapping[str, Any]) -> CheckCache:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", study) or "_"
        return cls(results_dir / "check-cache" / safe, origin)

    @staticmethod
    def key(identity: Mapping[str, Any], state: str, checks: Sequence[tuple[str, str]]) -> str:
        """`checks`: (label, command) of the step's check, then of each invariant probe."""
        return hashlib.sha256(
            canonical_json(
                {
                    "format": FORMAT,
                    "harness": HARNESS_SHA,
                    "sandbox": dict(identity),
                    "state": state,
                    "checks": [list(c) for c in checks],
                }
            ).encode()
        ).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Entry | None:
        try:
            with open(self._path(key), encoding="utf-8") as f:
                d = json.load(f)
            if d.get("format") != FORMAT or d.get("key") != key:
                return None
            entry = Entry(
                int(d["exit_code"]),
                str(d["output"]),
                float(d["duration_s"]),
                [[(bool(ok), str(why), bool(forged)) for ok, why, forged in group] for group in d["judged"]],
                dict(d["origin"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent, half a file from a crashed writer's disk, or not ours: run the check
        self.hits += 1
        return entry

    def put(self, key: str, entry: Entry) -> bool:
        """Store unless a verdict for this key is already there; True if this call stored it."""
        if not _KEY.match(key):
            raise ValueError(f"not a cache key: {key!r}")
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "format": FORMAT,
            "key": key,
            "exit_code": entry.exit_code,
            "output": entry.output,
            "duration_s": entry.duration_s,
            "judged": entry.judged,
            "origin": entry.origin,
        }
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(record))
            os.link(tmp, path)  # atomic, and refuses to replace: the first writer wins
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self.stores += 1
        return True

    def lookup(
        self, sandbox: Sandbox, state: str, checks: Sequence[tuple[str, str]]
    ) -> tuple[str, Entry | None]:
        """(key, entry) before a check in a pristine sandbox whose working copy is `state`."""
        key = self.key(sandbox.identity(), state, checks)
        return key, self.get(key)

    def keep(self, key: str, res: ExecResult, judged: Judged, step: str, turn: int) -> None:
        """Store a check that ran in a sandbox still pristine after it, unless it timed out or a
        report was forged: a verdict an attack or the machine's load shaped is never reused."""
        if res.timed_out or res.ended or any(f for verdicts in judged for _, _, f in verdicts):
            return
        self.put(
            key,
            Entry(
                res.exit_code,
                res.output,
                round(res.duration_s, 4),
                judged,
                {**self.origin, "step": step, "turn": turn},
            ),
        )
