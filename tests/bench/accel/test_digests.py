"""The working copy's hash kept from one walk to the next (bench/accel/pristine.py, `Digests`):
it always equals a hash from nothing, over random changes and over rewrites of a file within
the clock tick that cached it; and a file whose stat is unchanged is not read again."""

from __future__ import annotations

import os
import random

from bench.accel import pristine
from bench.accel.pristine import Digests, manifest


def _tree(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return work, Digests(tmp_path / "hash-stamp")


def _change(rng: random.Random, work) -> None:
    files = sorted(p for p in work.rglob("*") if p.is_file() and not p.is_symlink())
    op = rng.choice(
        ["write", "same_size", "chmod", "rename", "delete", "mkdir", "link"] if files else ["write"]
    )
    target = rng.choice(files) if files else None
    if op == "write" or target is None:
        d = work / rng.choice(["", "a", "a/b"])
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{rng.randrange(6)}.py").write_text("x" * rng.randrange(1, 40))
    elif op == "same_size":  # the content changes, its size does not
        data = bytearray(target.read_bytes() or b"x")
        data[rng.randrange(len(data))] ^= 1
        target.write_bytes(bytes(data))
    elif op == "chmod":
        target.chmod(rng.choice([0o644, 0o755, 0o600]))
    elif op == "rename":
        target.rename(target.with_name(f"r{rng.randrange(6)}.py"))
    elif op == "delete":
        target.unlink()
    elif op == "mkdir":
        (work / f"d{rng.randrange(4)}").mkdir(exist_ok=True)
    else:
        link = work / f"l{rng.randrange(3)}"
        if not os.path.lexists(link):
            link.symlink_to(target.name)


def test_kept_digests_hash_as_a_fresh_walk(tmp_path):
    work, digests = _tree(tmp_path)
    rng = random.Random(24)
    for _ in range(400):
        for _ in range(rng.randrange(1, 4)):
            _change(rng, work)
        assert manifest(work, digests) == manifest(work)


class SameTick(Digests):
    """The stamp lands in the clock tick of the last write (a coarse clock: ext4 and tmpfs
    before Linux 6.13's multigrain timestamps): its change time equals the file's."""

    def __init__(self, stamp, file) -> None:
        super().__init__(stamp)
        self.file = file

    def begin(self) -> int:
        super().begin()
        return os.stat(self.file).st_ctime_ns


def test_a_file_changed_in_the_walks_clock_tick_is_read_again(tmp_path):
    """The race racy-git guards against: a file read within the tick of its last change may be
    rewritten in that same tick, with content of the same size, and no stat would show it. So
    its digest is not kept, and the next hash reads it again though its stat is unchanged."""
    work = tmp_path / "work"
    work.mkdir()
    f = work / "m.py"
    f.write_bytes(b"A000")
    digests = SameTick(tmp_path / "hash-stamp", f)
    first = manifest(work, digests)
    assert digests.known == {} and digests.reads == 1
    assert manifest(work, digests) == first and digests.reads == 2  # the same stat, read again
    # once the clock has moved past its change, it is kept
    later = Digests(tmp_path / "hash-stamp")
    while later.begin() <= os.stat(f).st_ctime_ns:
        pass
    manifest(work, later)
    manifest(work, later)
    assert list(later.known) == ["m.py"] and later.reads == 1


def test_an_unchanged_file_is_not_read_again(tmp_path, monkeypatch):
    work, digests = _tree(tmp_path)
    for i in range(20):
        (work / f"f{i}.py").write_text(f"v = {i}\n")
    newest = max(os.stat(p).st_ctime_ns for p in work.iterdir())
    while digests.begin() <= newest:
        pass  # the clock past the files' change times: none of them is racy any more
    first = manifest(work, digests)
    reads = digests.reads
    assert reads == 20
    (work / "f3.py").write_text("v = 33\n")
    opened: list[str] = []
    real = pristine.read_capped
    monkeypatch.setattr(
        pristine,
        "read_capped",
        lambda fd, *a: opened.append(os.readlink(f"/proc/self/fd/{fd}")) or real(fd, *a),
    )
    second = manifest(work, digests)
    assert [os.path.basename(p) for p in opened] == [
        "f3.py"
    ] and digests.reads == reads + 1  # the changed file only
    assert second != first and second == manifest(work)
