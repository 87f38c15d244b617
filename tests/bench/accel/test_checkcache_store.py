"""The check cache's key and store on the host (bench/accel/checkcache.py; LocalSandbox, no Docker):
the key changes with everything that decides a check's verdict, an entry on disk counts only if
it is whole and names its own key, and a timed-out check is never stored (on the host nothing
else would keep it out: the local probe sees processes only)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.accel import checkcache, pristine
from bench.accel.checkcache import CheckCache
from bench.eventlog.writer import EventLog
from bench.sandbox import SandboxConfig, create
from bench.sandbox.local import LocalSandbox
from bench.trial.certify import HarnessCopy, certify
from tests.bench.trial.conftest import CALC, CHECK, FILES, tiny_task

WRONG = "def add(a, b):\n    return a - b\n"
CHECKS = [("check", CHECK), ("has-add", CHECK), ("there", "python3 -B -c 'from calc import add'")]
BENCH = Path(checkcache.__file__).resolve().parents[1]
# Every module whose code shapes a check's exit status, output or verdict, and why.
JUDGES = {
    "trial/certify.py": "parses the check, writes the launcher's plan, judges each part's report",
    "trial/launcher.py": "runs every part inside the sandbox and writes the reports",
    "accel/checkcache.py": "the key itself",
    "trial/harness_copy.py": "REPORT_LIMIT: how much of the report the judge reads",
    "sandbox/paths.py": "canonical(): which parts are the shipped runner (whose tests are expected)",
    "sandbox/base.py": "OutputTail: the output a verdict carries",
    "sandbox/engine.py": "the exec stream's demultiplexer: the output again",
    "sandbox/workcopy.py": "read_bytes: the report read back",
    "sandbox/docker.py": "the exec and the container's limits",
    "sandbox/judge.py": "the exec wrappers and their reap, which run every check (issue 42)",
    "sandbox/local.py": "the host backend's exec",
    "accel/pristine.py": "the working copy's hash and the probe: what makes a sandbox pristine",
    "sandbox/restore.py": "puts the protected files back before the state is hashed",
}


@pytest.fixture
def boxes(local_cfg: SandboxConfig) -> Iterator[Callable[..., LocalSandbox]]:
    made: list[LocalSandbox] = []

    def make(**changes: object) -> LocalSandbox:
        box = create(local_cfg.model_copy(update={"check_cache": True, **changes}), FILES, f"key-{len(made)}")
        assert isinstance(box, LocalSandbox) and box.pristine
        box.write_file("calc.py", CALC)
        made.append(box)
        return box

    yield make
    for box in made:
        box.close()


@pytest.fixture
def cache(tmp_path) -> CheckCache:
    return CheckCache.for_study(tmp_path, "study", {"trial": "t"})


def key(box: LocalSandbox, cache: CheckCache, checks: list[tuple[str, str]] = CHECKS) -> str:
    assert box.pristine
    return cache.lookup(box, box.state_sha(), checks)[0]


def test_the_key_changes_with_everything_that_decides_a_verdict(boxes, cache, monkeypatch):
    box = boxes()
    base = key(box, cache)
    assert key(boxes(), cache) == base, "the same state in another sandbox has the same key"
    keys = {
        "base": base,
        "command": key(box, cache, [("check", CHECK + " -x"), *CHECKS[1:]]),
        "no invariant": key(box, cache, CHECKS[:1]),
        "invariant id": key(box, cache, [CHECKS[0], ("other", CHECK), CHECKS[2]]),
        "invariant command": key(box, cache, [*CHECKS[:2], ("there", "python3 -B -c 'import calc'")]),
        "invariant order": key(box, cache, [CHECKS[0], CHECKS[2], CHECKS[1]]),
        "limits": key(boxes(memory="256m"), cache),
    }
    w = box.workdir
    root_mode = stat.S_IMODE(w.stat().st_mode)
    edits: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "a .pyc in __pycache__": (
            lambda: (
                (w / "__pycache__").mkdir(),
                (w / "__pycache__/calc.cpython-311.pyc").write_bytes(b"\x00junk"),
            ),
            lambda: shutil.rmtree(w / "__pycache__"),
        ),
        "an empty __pycache__": (lambda: (w / "__pycache__").mkdir(), lambda: (w / "__pycache__").rmdir()),
        "a file git ignores": (
            lambda: (w / ".gitignore").write_text("*.log\n"),
            lambda: (w / ".gitignore").unlink(),
        ),
        "an ignored .log": (
            lambda: ((w / ".gitignore").write_text("*.log\n"), (w / "x.log").write_text("1")),
            lambda: ((w / "x.log").unlink(), (w / ".gitignore").unlink()),
        ),
        "a mode": (lambda: os.chmod(w / "calc.py", 0o755), lambda: os.chmod(w / "calc.py", 0o644)),
        "a symlink": (lambda: os.symlink("calc.py", w / "link.py"), lambda: (w / "link.py").unlink()),
        "one byte": (
            lambda: (w / "calc.py").write_text(CALC + " "),
            lambda: (w / "calc.py").write_text(CALC),
        ),
        "a file moved": (
            lambda: (w / "README.md").rename(w / "README"),
            lambda: (w / "README").rename(w / "README.md"),
        ),
        # A check's code can mark the working copy's root itself, which a renewed sandbox keeps.
        "the root's mode": (lambda: os.chmod(w, root_mode ^ 0o005), lambda: os.chmod(w, root_mode)),
        "an xattr on the root": (
            lambda: os.setxattr(w, "user.k", b"42"),
            lambda: os.removexattr(w, "user.k"),
        ),
        "an xattr on a file": (
            lambda: os.setxattr(w / "calc.py", "user.k", b"42"),
            lambda: os.removexattr(w / "calc.py", "user.k"),
        ),
    }
    for name, (make, undo) in edits.items():
        make()
        keys[name] = key(box, cache)
        undo()
        assert key(box, cache) == base, f"{name}: undone, the key is the base again"
    monkeypatch.setattr(checkcache, "HARNESS_SHA", "0" * 64)
    keys["harness"] = key(box, cache)
    assert len(set(keys.values())) == len(keys), {k: v[:8] for k, v in keys.items()}


def _harness_sha(root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """HARNESS_SHA as checkcache.py computes it from the sources next to it under `root`."""
    spec = importlib.util.spec_from_file_location("checkcache_copy", root / "accel" / "checkcache.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return str(module.HARNESS_SHA)


@pytest.mark.parametrize("source", list(JUDGES))
def test_a_change_to_the_code_that_judges_a_check_changes_the_key(tmp_path, monkeypatch, source):
    for sub in ("trial", "sandbox", "accel"):
        shutil.copytree(BENCH / sub, tmp_path / sub, ignore=shutil.ignore_patterns("__pycache__"))
    assert _harness_sha(tmp_path, monkeypatch) == checkcache.HARNESS_SHA, "the copy reproduces the real sha"
    with open(tmp_path / source, "a", encoding="utf-8") as f:
        f.write("\n# a fix of the judge\n")
    assert _harness_sha(tmp_path, monkeypatch) != checkcache.HARNESS_SHA, f"{source}: {JUDGES[source]}"


def _forgeries(entry: dict, key: str) -> dict[str, str]:
    """A stored pass, planted under the key of a failing check in every form but a whole one."""
    own = {**entry, "key": key}
    return {
        "another key's entry": json.dumps(entry),
        "half an entry": json.dumps(own)[: len(json.dumps(own)) // 2],
        "another format": json.dumps({**own, "format": 99}),
        "no origin": json.dumps({k: v for k, v in own.items() if k != "origin"}),
        "judged is not a list": json.dumps({**own, "judged": "passed"}),
        "not json": "passed",
    }


def test_an_entry_on_disk_counts_only_whole_and_under_its_own_key(boxes, cache, tmp_path):
    copy = HarnessCopy(tiny_task())
    log = EventLog(tmp_path / "events.jsonl")
    good = boxes()
    assert certify(good, copy, log, 0, "s01", CHECK, cache=cache).passed and cache.stores == 1
    (stored,) = cache.root.rglob("*.json")
    entry = json.loads(stored.read_text())
    box = boxes()
    box.write_file("calc.py", WRONG)
    failing = key(box, cache, [("check", CHECK)])
    target = cache.root / failing[:2] / f"{failing}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    for name, text in _forgeries(entry, failing).items():
        target.write_text(text)
        out = certify(box, copy, log, 0, "s01", CHECK, cache=cache)
        assert not out.passed, f"{name}: a forged entry passed a failing check"
        assert not [r for r in log.records if r["kind"] == "check_cached"], name
    # The same entry made whole under that key is read: the forms above were read and refused.
    target.write_text(json.dumps({**entry, "key": failing}))
    certify(box, copy, log, 0, "s01", CHECK, cache=cache)
    assert [r["key"] for r in log.records if r["kind"] == "check_cached"] == [failing]


def test_the_store_refuses_a_second_writer_and_a_bad_key(cache):
    entry = checkcache.Entry(0, "ok\n", 0.1, [[(True, "", False)]], {"trial": "a"})
    key = "ab" * 32
    assert cache.put(key, entry) and not cache.put(key, dataclasses.replace(entry, exit_code=1))
    got = cache.get(key)
    assert got is not None and got.exit_code == 0, "the first writer wins"
    with pytest.raises(ValueError):
        cache.put("../" + key[3:], entry)
    assert [p.name for p in cache.root.rglob("*")] == ["ab", f"{key}.json"], "no temp file is left"


def test_a_timed_out_check_is_never_stored(boxes, cache, tmp_path):
    box = boxes(exec_timeout_s=1.0)
    box.write_file("calc.py", "import time\ntime.sleep(30)\n" + CALC)
    out = certify(box, HarnessCopy(tiny_task()), EventLog(tmp_path / "e.jsonl"), 0, "s01", CHECK, cache=cache)
    assert out.timed_out and not out.passed
    assert box.pristine, "nothing was left: only the timeout keeps the verdict out"
    assert cache.stores == 0 and not list(cache.root.rglob("*.json"))


def test_two_links_whose_path_and_target_share_their_words_hash_apart(tmp_path):
    """`a b` -> `c` and `a` -> `b c` once wrote the same bytes into the working copy's hash."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    os.symlink("c", one / "a b")
    os.symlink("b c", two / "a")
    assert pristine.manifest(one) != pristine.manifest(two)
