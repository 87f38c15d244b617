"""The judge's copy kept from check to check (bench/sandbox/judge.py `JudgeCopy`): after any
sequence of trees it holds exactly what a copy written from scratch (`fill`) holds, and it
writes only what changed."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path

from bench.sandbox import judge
from bench.sandbox.judge import JudgeCopy, fill


def snapshot(tree: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {".": (oct(stat.S_IMODE(os.lstat(tree).st_mode)),)}
    for top, dirs, files in os.walk(tree):
        for name in dirs + files:
            full = os.path.join(top, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, tree)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(stat.S_IMODE(st.st_mode)))
            else:
                out[rel] = ("file", oct(stat.S_IMODE(st.st_mode)), Path(full).read_bytes())
    return out


def random_tree(rng: random.Random) -> dict[str, tuple[str, bytes]]:
    """Paths from a small alphabet, so files become directories, links and back between trees."""
    out: dict[str, tuple[str, bytes]] = {}
    for _ in range(rng.randint(0, 12)):
        path = "/".join(rng.choice("abc") for _ in range(rng.randint(1, 3)))
        kind = rng.choice(["file", "file", "exec", "link"])
        data = rng.choice([b"../a", b"b"]) if kind == "link" else rng.choice([b"x = 1\n", b"x = 2\n", b""])
        out[path] = (kind, data)
    return out


def test_kept_copy_equals_a_fresh_one_after_every_tree(tmp_path) -> None:
    rng = random.Random(7)
    kept = JudgeCopy(tmp_path / "kept")
    for i in range(300):
        entries = random_tree(rng)
        fresh = fill(tmp_path / f"fresh{i % 2}", entries)
        assert snapshot(kept.write(entries)) == snapshot(fresh), (i, entries)


def test_only_what_changed_is_written(tmp_path, monkeypatch) -> None:
    entries = {f"pkg/m{i}.py": ("file", f"x = {i}\n".encode()) for i in range(20)}
    kept = JudgeCopy(tmp_path / "judge")
    kept.write(entries)
    written: list[str] = []
    real = judge._write
    monkeypatch.setattr(judge, "_write", lambda tree, path, *a: (written.append(path), real(tree, path, *a)))
    kept.write({**entries, "pkg/m3.py": ("file", b"x = 33\n")})
    assert written == ["pkg/m3.py"]
    assert (tmp_path / "judge" / "tree" / "pkg" / "m3.py").read_bytes() == b"x = 33\n"


def test_a_failed_write_leaves_nothing_held(tmp_path, monkeypatch) -> None:
    kept = JudgeCopy(tmp_path / "judge")
    kept.write({"a.py": ("file", b"1")})
    monkeypatch.setattr(judge, "_update", lambda *a: (_ for _ in ()).throw(OSError("disk")))
    try:
        kept.write({"b.py": ("file", b"2")})
    except OSError:
        pass
    monkeypatch.undo()
    tree = kept.write({"c.py": ("file", b"3")})  # written from scratch: nothing of the failed one is trusted
    assert snapshot(tree) == snapshot(fill(tmp_path / "fresh", {"c.py": ("file", b"3")}))
