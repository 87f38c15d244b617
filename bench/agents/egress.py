"""No connection leaves the machine: what an agent trial connects to, read from strace.

    python -m bench.agents.egress agent=mini_swe_agent arm=drift task=record_upgrade

runs the trial under `strace -f -e trace=connect,sendto,sendmsg` (the harness, the agent's own
process on the host and everything they start) and prints one line per destination with its
count; it exits 1 if any destination leaves the machine. Agents that run in the sandbox
(`runs: sandbox`) are kept off the network by the container itself (`network_mode=none`, reaching
the proxy only through its bind-mounted unix socket); what they would phone home to is switched
off by the settings PHONE_HOME names, which tests/bench/agents/test_egress.py finds in every
shipped agent's config (docs/agents.md, "No connection leaves the machine").

A destination is local when it is a unix socket, the kernel (netlink) or a loopback address on
any port but 53: a DNS query to a loopback resolver is a name looked up for a connection out, so
it counts as leaving. Everything else (another address, an IPv4-mapped IPv6 address outside
127/8, an address strace cannot decode) leaves.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SYSCALLS = "connect,sendto,sendmsg"
DNS_PORT = 53
# Each agent's phone-home switches (../shared/facts/agents.md: measured with strace and a refusing
# HTTPS proxy): where in its config (conf/agent/NAME.yaml) each must be, and the value that keeps
# it off. `env.X` is an environment variable; `FILE:a.b` a key of a TOML config file.
PHONE_HOME: Mapping[str, Mapping[str, object]] = {
    "mini_swe_agent": {"env.LITELLM_LOCAL_MODEL_COST_MAP": "True"},  # else litellm fetches a price map
    "claude_code": {"env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},  # telemetry, update checks, titles
    "codex": {
        ".codex/config.toml:analytics.enabled": False,
        ".codex/config.toml:check_for_update_on_startup": False,
        ".codex/config.toml:features.plugins": False,
        ".codex/config.toml:features.remote_plugin": False,
        ".codex/config.toml:features.apps": False,
    },
}

_CALL = re.compile(r"^(?:\[pid\s+)?(?P<pid>\d+)?\]?\s*(?P<call>connect|sendto|sendmsg)\((?P<args>.*)$")
_FAMILY = re.compile(r"sa_family=(AF_\w+)")
_UNIX = re.compile(r'sun_path=(@?"[^"]*"|@?[^,}]+)')
_PORT = re.compile(r"sin6?_port=htons\((\d+)\)")
_ADDR4 = re.compile(r'sin_addr=inet_addr\("([^"]+)"\)')
_ADDR6 = re.compile(r'inet_pton\(AF_INET6,\s*"([^"]+)"')


@dataclass(frozen=True)
class Destination:
    family: str  # AF_INET, AF_INET6, AF_UNIX, AF_NETLINK, ...
    address: str  # an IP address or a socket path ("" when strace shows none)
    port: int | None = None

    @property
    def local(self) -> bool:
        if self.family in ("AF_UNIX", "AF_NETLINK", "AF_UNSPEC"):  # AF_UNSPEC: a socket disconnected
            return True
        if self.family not in ("AF_INET", "AF_INET6") or self.port == DNS_PORT:
            return False
        try:
            ip = ipaddress.ip_address(self.address)
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_loopback

    def __str__(self) -> str:
        if self.family in ("AF_INET", "AF_INET6"):
            return f"{self.family} {self.address}:{self.port}"
        return f"{self.family} {self.address}".rstrip()


def destinations(trace: str) -> list[Destination]:
    """Every destination address in an strace log (connect, and sendto/sendmsg naming an address:
    a UDP datagram needs no connect). Calls with no address (a connected socket's send) are skipped."""
    out = []
    for line in trace.splitlines():
        m = _CALL.match(line.strip())
        if not m:
            continue
        fam = _FAMILY.search(m["args"])
        if not fam:
            continue  # a send on a connected socket: its connect is in the log
        family = fam[1]
        if family == "AF_UNIX":
            path = _UNIX.search(m["args"])
            out.append(Destination(family, path[1].strip('"') if path else ""))
        elif family in ("AF_INET", "AF_INET6"):
            addr = (_ADDR4 if family == "AF_INET" else _ADDR6).search(m["args"])
            port = _PORT.search(m["args"])
            out.append(Destination(family, addr[1] if addr else "", int(port[1]) if port else None))
        else:
            out.append(Destination(family, ""))
    return out


def leaving(dests: Iterable[Destination]) -> list[Destination]:
    return [d for d in dests if not d.local]


def summary(dests: Iterable[Destination]) -> list[str]:
    counts = Counter(dests)
    return [
        f"{'LEAVES' if not d.local else 'local '} {n:5d}  {d}"
        for d, n in sorted(counts.items(), key=lambda kv: (kv[0].local, str(kv[0])))
    ]


def strace_argv(out: Path, argv: list[str]) -> list[str]:
    exe = shutil.which("strace")
    if exe is None:
        raise SystemExit("strace is not installed: apt-get install strace (make test installs it as root)")
    return [exe, "-f", "-qq", "-e", f"trace={SYSCALLS}", "-e", "signal=none", "-o", str(out), *argv]


def main(argv: list[str] | None = None) -> int:
    overrides = list(sys.argv[1:] if argv is None else argv)
    if not overrides or overrides[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if overrides else 2
    with tempfile.TemporaryDirectory(prefix="ctxbench-egress-") as tmp:
        trace = Path(tmp) / "strace.log"
        proc = subprocess.run(strace_argv(trace, [sys.executable, "-m", "bench", *overrides]))
        dests = destinations(trace.read_text(errors="replace"))
    for line in summary(dests):
        print(line)
    out = leaving(dests)
    print(
        f"{len(dests)} destinations traced ({len(set(dests))} distinct), {len(out)} leave the machine; "
        f"the trial exited {proc.returncode}"
    )
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
