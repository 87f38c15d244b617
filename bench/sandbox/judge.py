"""The judge and the judged (docs/threat_model.md, "The judge and the judged"): who runs what in
a sandbox, and the copy of the committed tree a certification runs on.

Two identities share a Docker sandbox. The container's root (pid 1, and every certification's
launcher, docker.py) is the judge; the agent's commands and the code under test run as
AGENT_UID. The kernel then keeps them apart: a process may signal, ptrace or read the memory
(process_vm_readv, /proc/PID/mem) of another only with the same uid or a capability, and the
agent's processes have none (no-new-privileges, every capability dropped when setpriv or the
launcher changes uid). So the agent cannot take over pid 1 or the launcher. No process of the
judge's ever runs as the agent's uid: the reap is the judge's own shell's `kill -9 -1` (root with
CAP_KILL), never the agent asked to end itself (issue 42).

AGENT_UID is the host user's own uid, so what the agent writes in the bind-mounted working
copy stays the harness's to remove; a harness running as root gets a fixed unprivileged uid
instead, and every agent command then first gives the working copy to that uid (files the
harness wrote as root since the last command included). No process of the agent's runs at
that moment: the command before it was reaped.

A certification never runs on the working copy. The harness writes a fresh copy of the tree it
would commit (the protected files from its own copy, every other file git would commit, no
ignored file, no bytecode) to a host directory: nothing of the agent's that is not in the tree
is there, and no one can write bytecode into it. In Docker that copy is mounted read-only at
the agent's own path, /work (JUDGED_AT), of a container of the judge's own (docker.py: the same
image, limits and hostname, no network), where every check runs: code under test cannot tell
the judge's run from the agent's by its cwd, `__file__`, sys.path or the repository's root
(issue 42; what it still can tell by is docs/threat_model.md's "Known limits"). JUDGE_MOUNT,
mounted read-only in both containers alike, holds only the hidden checks' one-time channel.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

AGENT_UID = os.getuid() or 10001
JUDGE_MOUNT = (
    "/judge"  # the hidden checks' channel's directory, in the agent's container and the judge's alike
)
JUDGED_AT = "/work"  # where the judge's container holds the judge's copy: the agent's working copy's path
TREE = "tree"  # the copy's directory under the judge's mount (fixed: pytest prints its rootdir)
HIDDEN_CHANNEL = (
    "hidden"  # beside TREE: the final acceptance's one-time channel for its hidden checks (hidden_checks.py)
)
COPY_LIMIT = 64 << 20  # bytes in one judge's copy: more is the agent's junk, and the check fails on it

# Every wrapper's $1 timeout, $2 command, $3 reap flag. Every wrapper is the judge's (the
# container's root): only an agent command itself runs as AGENT_UID, and it never holds the
# exec's stderr, the channel the harness reads (the sentinel, the reap's list, the judge's
# report and probe). The reap runs in the exec's own root shell, which holds CAP_KILL and no
# other process's uid: `kill -9 -1` ends every process of the container but pid 1 and this
# shell, the agent's and the comparers' alike, atomically (the kernel signals them all under
# one lock, so no fork bomb or process that keeps changing its pid outruns it), with shell
# builtins until the kill (no fork: it works with every pid taken). The agent is never asked to
# end itself and no process of the judge's ever becomes the agent (issue 42: a reap run as the
# agent's uid was dumpable, and a process of the agent's wrote a report on its stderr).
REAP = (
    'n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; { [ "$p" = 1 ] || [ "$p" = $$ ]; } && continue; '
    'c=; read -r c < "$d/comm" 2>/dev/null; n=$((n+1)); [ $n -le 64 ] && echo "ended $p $c" >&2; done; '
    '[ $n -gt 64 ] && echo "ended ... $((n-64)) more" >&2; '
    'left() { for d in /proc/[0-9]*; do case ${d#/proc/} in 1|$$) ;; *) [ -e "$d/stat" ] && return 0;; esac; done; '
    "return 1; }; "
    # SIGKILLed is not yet gone on a busy machine: kill again and wait (up to ~5 s) until nothing is left.
    "i=0; while [ $i -lt 100 ] && left; do kill -9 -1 2>/dev/null; i=$((i+1)); [ $i -gt 1 ] && sleep 0.05; done"
)
_DONE = 'printf "\\0ctxbench-exec-completed\\n" >&2; exit $rc'
# What bounds the agent's processes, set by the judge's shell just before it hands a command to
# the agent's uid (none of it can be undone without a capability): first in the OOM killer's
# line (pid 1 is out of it: docker.py), and a cap on open files. Processes and memory are the
# container's cgroup's (pids_limit, memory), which the judge needs no share of to end them: the
# reap forks nothing. RLIMIT_NPROC is not used: the kernel counts it per uid across the host,
# so it would be shared with other trials' agents and, with the harness not root, with the
# harness's own processes (AGENT_UID is its uid).
AGENT_NOFILE = 1024
_BOUND = f"echo 1000 > /proc/self/oom_score_adj && ulimit -n {AGENT_NOFILE} && "
_AS_AGENT = f"setpriv --reuid={AGENT_UID} --regid={AGENT_UID} --clear-groups"
# An agent command: the judge's shell runs `timeout` and the reap; only `sh -c "$2"` is the
# agent's, its stderr made the exec's stdout (the output the model sees) by the judge's shell
# before it hands the command over.
AGENT_WRAPPER = (
    f'timeout -s KILL "$1" sh -c \'{_BOUND}exec {_AS_AGENT} sh -c "$1" 2>&1\' ctxbench "$2"; rc=$?; '
    f'if [ "$3" = 1 ]; then {REAP}; fi; {_DONE}'
)
# The probe of a pristine sandbox (bench/accel/pristine.py): writable places a check's code can reach in the Docker sandbox (see docker.py's container).
# `-xdev` keeps find inside each one. Files, links and nodes are listed with mode, owner, size,
# change time and link target; a directory with mode and owner only, since its own change
# time moves when a file is made and removed again (a check's temp dir), which leaves nothing.
PROBE = (
    "find /tmp /dev /dev/shm /dev/mqueue /sys/fs/cgroup /proc/keys /proc/timer_list -xdev "
    "\\( -type d -printf '%p d %m %U %G\\n' \\) -o -printf '%p %y %m %U %G %s %C@ %l\\n' 2>&1; "
    "cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem 2>&1; "
    # pid 1, our reaper, sleeps forever: its CPU time, threads and size never move unless
    # something got into it (fields 14, 15, 20, 23 of /proc/1/stat). But only once it sleeps:
    # a first probe soon after the container started, on a loaded machine, can catch it still
    # starting (its size grew by 1.2 MB a second later in 1 of 15 tries), and the sandbox
    # would lose its pristine state for nothing. So wait (up to ~5 s) until it is asleep
    # (state S) with signal 64 ignored: docker.py's _INIT ignores every signal in ascending
    # order and then only pauses, so nothing of it runs again after that.
    "i=0; while [ $i -lt 250 ]; do read -r s < /proc/1/stat; set -- ${s##*) }; ign=; "
    'while read -r k v; do [ "$k" = SigIgn: ] && ign=$v && break; done < /proc/1/status; '
    "case \"$1 $ign\" in 'S '[89a-f]*) break;; esac; i=$((i+1)); sleep 0.02; done; "
    'read -r s < /proc/1/stat; set -- ${s##*) }; echo "pid1 ${12} ${13} ${18} ${21}"'
)


PROBE_S = 10  # the probe's own timeout, past the command's: it normally takes ~20 ms
PROBE_LIMIT = 256 << 10  # bytes of probe output: a longer one counts as failed (pristine.py)
PROBE_END = "ctxbench-probe-end"  # its last line: a probe cut short by the timeout has none
# After the reap, with $4 (pristine.PROBE) given, the judge probes the state outside the working
# copy in the same exec: no process of the agent's is left by then (or the reap named it), and
# none ever held this shell's stderr, the judge's channel. Every line of the probe is sent with
# a `probe ` prefix, so nothing a check leaves (a file name with newlines in it) starts a line
# that reads as the launcher's report or the reap's list; the head bounds the shell's memory.
_PROBED = (
    f'if [ -n "$4" ]; then p=$(timeout -s KILL {PROBE_S} sh -c "$4; echo {PROBE_END}" 2>&1 '
    f'| head -c {PROBE_LIMIT + 1}); printf "%s\\n" "$p" | sed "s/^/probe /" >&2; fi; '
)
# A judge's exec (a certification, a probe): the reap before it (whatever is left, the launcher
# does not trust that the host reaped), the command, the reap after it, the probe, all as root.
JUDGE_WRAPPER = (
    f'if [ "$3" = 1 ]; then {REAP}; fi; timeout -s KILL "$1" sh -c "$2"; rc=$?; '
    f'if [ "$3" = 1 ]; then {REAP}; fi; {_PROBED}{_DONE}'
)


def judge_root(workdir: Path) -> Path:
    """The host directory that holds the judge's copy (JUDGE_MOUNT in a container: docker.py; the
    copy itself: local.py): beside the working copy, under the sandbox's own scratch directory."""
    return workdir.parent / "judge"


def give_to_agent(workdir: Path) -> None:
    """A working copy the harness (running as root) just wrote is the agent's, as a new one is:
    its files, their owner in the check cache's key, the same whoever wrote them."""
    if os.getuid() != 0:
        return
    for top, dirs, files in os.walk(workdir):  # the task's own files: nothing of the agent's yet
        for name in dirs + files:
            os.lchown(os.path.join(top, name), AGENT_UID, AGENT_UID)
    os.chown(workdir, AGENT_UID, AGENT_UID)


def agent_argv(limit: str, cmd: str, reap: bool) -> list[str]:
    """The exec's argv for a command of the agent's (the wrapper is the container's root's)."""
    own = f"chown -hR {AGENT_UID}:{AGENT_UID} /work 2>/dev/null; " if os.getuid() == 0 else ""
    return ["sh", "-c", own + AGENT_WRAPPER, "ctxbench", limit, cmd, str(int(reap))]


def judge_argv(limit: str, cmd: str, reap: bool, probe: str = "") -> list[str]:
    """The exec's argv for the judge: fd 3 is the exec's stderr stream, the judge's report
    channel; the launcher closes it in every process that runs code of the agent's. `probe`: a
    command whose output, after the reap, goes on the same channel (`probed` reads it back)."""
    return ["sh", "-c", JUDGE_WRAPPER, "ctxbench", limit, "exec 3>&2 2>&1\n" + cmd, str(int(reap)), probe]


def probe_failed() -> str:
    """A probe's reading that equals no other, so the sandbox it stands for reads as changed."""
    return f"(probe failed: {uuid.uuid4().hex})"


def probed(lines: list[str], completed: bool) -> str:
    """The probe's output from the judge channel's lines (split on newlines only), or
    probe_failed() when it did not run to its end (cut short by its timeout or its bound, never
    reached) or its wrapper did not complete."""
    out = [line[len("probe ") :] for line in lines if line.startswith("probe ")]
    if not completed or not out or out[-1] != PROBE_END:  # a probe past its bound loses its end line
        return probe_failed()
    return "\n".join(out[:-1])


def tree_entries(
    workdir: Path, paths: Iterable[str], harness: Mapping[str, str], protected: object
) -> dict[str, tuple[str, bytes]]:
    """path -> (kind, data) of the committed tree: "file" / "exec" (content) or "link" (target).
    Protected paths come from the harness's own copy, never from the working copy; the rest is
    read without following any link, FIFOs and devices skipped."""
    out: dict[str, tuple[str, bytes]] = {p: ("file", c.encode()) for p, c in harness.items()}
    total = sum(len(d) for _, d in out.values())
    for path in paths:
        parts = path.split("/")
        if path in out or protected(path) or "__pycache__" in parts or path.endswith(".pyc"):  # type: ignore[operator]
            continue
        entry = _read(workdir, parts, COPY_LIMIT - total)
        if entry is not None:
            out[path] = entry
            total += len(entry[1])
    return out


def _read(workdir: Path, parts: list[str], room: int) -> tuple[str, bytes] | None:
    fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in parts[:-1]:
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nfd
        st = os.lstat(parts[-1], dir_fd=fd)
        if stat.S_ISLNK(st.st_mode):
            return "link", os.readlink(parts[-1], dir_fd=fd).encode("utf-8", "surrogateescape")
        if not stat.S_ISREG(st.st_mode) or st.st_size > room:
            return None
        ffd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(ffd, "rb") as f:
            data = f.read(room + 1)
        return None if len(data) > room else ("exec" if st.st_mode & 0o100 else "file", data)
    except OSError as e:  # a link, a vanished or unreadable entry: not in the judge's copy
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EACCES, errno.ENXIO):
            return None
        raise
    finally:
        os.close(fd)


def fill(root: Path, entries: Mapping[str, tuple[str, bytes]]) -> Path:
    """Write a fresh copy under root/TREE (the last one removed); files 0644/0755, dirs 0755."""
    root.mkdir(mode=0o755, exist_ok=True)
    tree = root / TREE
    if tree.is_dir() and not tree.is_symlink():
        _empty(tree)  # the directory itself stays: the Docker judge's container has it mounted at /work
    else:
        tree.unlink(missing_ok=True)
        tree.mkdir(mode=0o755)
    for path, (kind, data) in sorted(_placed(entries).items()):
        _write(tree, path, kind, data)
    for top, dirs, _ in os.walk(tree):  # a umask of the harness's must not hide the copy from the agent's uid
        for d in dirs:
            # os.walk lists a link to a directory among `dirs`, and chmod follows links: the agent's
            # `up -> /` would have the harness chmod the host's own directory.
            if not os.path.islink(os.path.join(top, d)):
                os.chmod(os.path.join(top, d), 0o755)
    os.chmod(tree, 0o755)
    return tree


def _empty(tree: Path) -> None:
    """Remove everything in `tree` (links unfollowed), keeping `tree` itself."""
    for entry in os.scandir(tree):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


class JudgeCopy:
    """The judge's copy of a sandbox whose copy no one but the harness can write (Docker: mounted
    read-only in the container, and outside the working copy). Each check's copy is the last one
    with only what changed written again: the same tree `fill` writes from scratch (removing and
    writing every file of the tree cost more of the harness's CPU per check than anything else of
    certification). Anything that goes wrong midway leaves nothing held: the next copy is a fresh one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(mode=0o755)
        self.tree = root / TREE  # there from the start, and never replaced: a container may mount it
        self.tree.mkdir(mode=0o755)
        self._held: dict[str, tuple[str, bytes]] = {}  # what root/TREE holds, as written

    def write(self, entries: Mapping[str, tuple[str, bytes]]) -> Path:
        held, self._held = self._held, {}
        want = _placed(entries)
        tree = self.root / TREE
        if not held:
            fill(self.root, want)
        else:
            _update(tree, held, want)
        self._held = want
        return tree


def _placed(entries: Mapping[str, tuple[str, bytes]]) -> dict[str, tuple[str, bytes]]:
    """The entries a copy holds: none below a link or a file of the copy (git holds no such pair;
    a link is never followed)."""
    return {
        p: e
        for p, e in entries.items()
        if not any("/".join(p.split("/")[:k]) in entries for k in range(1, p.count("/") + 1))
    }


def _dirs(entries: Mapping[str, object]) -> set[str]:
    return {"/".join(p.split("/")[:k]) for p in entries for k in range(1, p.count("/") + 1)}


def _update(tree: Path, held: Mapping[str, tuple[str, bytes]], want: Mapping[str, tuple[str, bytes]]) -> None:
    """Make `tree`, which holds exactly `held`, hold `want`: what went or changed is removed,
    directories no entry needs any more too (deepest first), then what is new or changed is
    written as `fill` writes it."""
    changed = sorted(p for p in want if held.get(p) != want[p])
    for path in sorted(held.keys() - want.keys()) + [p for p in changed if p in held]:
        os.unlink(tree / path)
    for d in sorted(_dirs(held) - _dirs(want), key=lambda d: -d.count("/")):
        os.rmdir(tree / d)
    new_dirs = _dirs(want) - _dirs(held)
    for path in changed:
        _write(tree, path, *want[path])
    for d in new_dirs:
        os.chmod(tree / d, 0o755)


def _write(tree: Path, path: str, kind: str, data: bytes) -> None:
    target = tree / path
    target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    if kind == "link":
        os.symlink(os.fsdecode(data.decode("utf-8", "surrogateescape")), target)
        return
    fd = os.open(
        target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if kind == "exec" else 0o644
    )
    with os.fdopen(fd, "wb") as f:
        f.write(data)
