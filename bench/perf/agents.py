"""`make bench`, agent trials: what the model proxy adds to each request, and the memory an
external agent's trial holds while it is in flight (docs/agents.md).

Proxy overhead: the same request body, sent by an agent's HTTP client over a kept-alive loopback
connection to the trial's model proxy, which decodes it, counts it against the window, logs it
byte for byte, forwards it through the provider, encodes the reply and logs that too. The provider
is the harness's OpenAI or Anthropic client pointed at the loopback server (bench.serve, answering a
fixed reply at once): the direct provider call is that client's `complete`, what ctxbench's own
loop pays per call, timed inside the proxy for each request; the proxy's overhead is the agent's
wall time for the request minus that call's, at p50 and p99. Bodies: mini-swe-agent's first
Chat Completions request, one 30 turns in, and a Claude-Code-sized streamed Anthropic request
(24 tools, ~77 k characters: ../shared/facts/agents.md).

Memory per agent trial in flight: `--agent-trials` mini-swe-agent trials with the sim (one
process, hydra/launcher=ctxbench_threads, sandbox=local), the harness's peak RSS and its
children's (mini's processes) polled every 0.25 s, divided by the peak number of trials in flight.

    python -m bench.perf.agents --requests 200 --agent-trials 4
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.config import ROOT, compose
from bench.perf.inflight import _Peak, peak_overlap


def pct(xs: list[float], q: float) -> float:
    """The q-quantile, interpolated linearly (numpy's default, as make bench's other rows)."""
    return float(np.quantile(xs, q)) if xs else float("nan")


TOOLS_CLAUDE = 24  # Claude Code 2.1.197's first request: 24 tools, 64.5 k characters of schemas
SCHEMA_CHARS = 2700
MINI_TASK_CHARS = 3000


def _mini_body(turns: int) -> dict[str, Any]:
    """A mini-swe-agent request: its one `bash` tool, its task template, `turns` earlier turns."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Please solve this issue: " + "x" * MINI_TASK_CHARS},
    ]
    for k in range(turns):
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{k}",
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"cat -- pkg/m{k}.py"}),
                        },
                    }
                ],
            }
        )
        msgs.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{k}",
                "content": json.dumps({"returncode": 0, "output": "def f():\n    return 1\n" * 40}),
            }
        )
    bash = {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
    return {"model": "openai/ctxbench", "messages": msgs, "tools": [bash]}


def _claude_body() -> dict[str, Any]:
    """A Claude-Code-sized first request: 3 system blocks, 24 tools, a reminder and the instruction, streamed."""
    tools = [
        {
            "name": f"Tool{k}",
            "description": "d" * SCHEMA_CHARS,
            "input_schema": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        }
        for k in range(TOOLS_CLAUDE)
    ]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64000,
        "stream": True,
        "system": [{"type": "text", "text": "s" * 2000} for _ in range(3)],
        "tools": tools,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>" + "r" * 4000},
                    {"type": "text", "text": "do the step"},
                ],
            }
        ],
    }


class _Timed:
    """The provider, each `complete` timed: the direct call inside a proxied request."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_id = inner, inner.model_id
        self.took: list[float] = []

    def complete(self, *args: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.complete(*args, **kw)
        finally:
            self.took.append(time.perf_counter() - t0)

    def close(self) -> None:
        self.inner.close()


class _Client:
    """One kept-alive HTTP/1.1 connection, as an agent's SDK keeps one."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)

    def post(self, path: str, body: bytes) -> float:
        t0 = time.perf_counter()
        self.conn.request(
            "POST",
            path,
            body,
            {
                "Content-Type": "application/json",
                "x-api-key": "x",
                "Authorization": "Bearer x",
                "anthropic-version": "2023-06-01",
            },
        )
        resp = self.conn.getresponse()
        data = resp.read()
        took = time.perf_counter() - t0
        if resp.status != 200:
            raise RuntimeError(f"POST {path}: {resp.status} {data[:200]!r}")
        return took

    def close(self) -> None:
        self.conn.close()


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def proxy_overhead(n: int = 200, tmp: Path | None = None) -> dict[str, Any]:
    from bench.eventlog.writer import EventLog
    from bench.providers import make_provider
    from bench.providers.scripted import ScriptedProvider
    from bench.proxy.server import ModelProxy
    from bench.serve.backend import SimBackend
    from bench.serve.server import LoopbackServer
    from ctxlog import events as ev

    tmp = Path(tempfile.mkdtemp(prefix="ctxbench-proxy-")) if tmp is None else tmp
    cases = {
        "openai_chat mini first request": ("openai", "/v1/chat/completions", _mini_body(0)),
        "openai_chat mini, 30 turns in": ("openai", "/v1/chat/completions", _mini_body(30)),
        "anthropic Claude Code first request, SSE": ("anthropic", "/v1/messages", _claude_body()),
    }
    backend = SimBackend(factory=lambda cfg: ScriptedProvider([], when_done="stop"))  # a fixed reply, at once
    out: dict[str, Any] = {"n": n}
    with LoopbackServer(backend) as server, _env(OPENAI_API_KEY="loopback", ANTHROPIC_API_KEY="loopback"):
        for name, (group, path, body) in cases.items():
            base = server.url + ("/v1" if group == "openai" else "")
            cfg = compose([f"model={group}", f"model.base_url={base}", "model.max_retries=0"]).model
            log = EventLog(tmp / f"{uuid.uuid4().hex[:8]}.jsonl")
            log.append(
                ev.TrialStart(
                    trial_id="bench",
                    task_id="x",
                    strategy="agent",
                    arm="baseline",
                    seed=1,
                    max_output=4096,
                    schema=ev.SCHEMA,
                )
            )
            raw = json.dumps(body).encode()
            provider = _Timed(make_provider(cfg))
            with ModelProxy(provider, log, seed=1, window=200000) as proxy:
                client = _Client(proxy.url)
                for _ in range(5):  # warm the path (imports, the connections)
                    client.post(path, raw)
                provider.took.clear()
                walls = [client.post(path, raw) for _ in range(n)]
                client.close()
            log.close()
            direct = provider.took
            over = [(w - d) * 1000 for w, d in zip(walls, direct, strict=True)]
            out[name] = {
                "body_chars": len(raw),
                "direct_ms_p50": round(pct(direct, 0.5) * 1000, 3),
                "proxied_ms_p50": round(pct(walls, 0.5) * 1000, 3),
                "overhead_ms_p50": round(pct(over, 0.5), 3),
                "overhead_ms_p99": round(pct(over, 0.99), 3),
            }
    return out


def agent_memory(results: Path, trials: int = 4, agent: str = "mini_swe_agent") -> dict[str, Any]:
    """`trials` agent trials in flight in one process: peak RSS of the harness and of its children."""
    study = f"bench-agents-{uuid.uuid4().hex[:6]}"
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "-m",
        f"agent={agent}",
        "model=sim",
        "arm=baseline",
        "task=record_upgrade",
        f"task.seed=range(0,{trials})",
        "++task.size.steps=6",
        "sandbox=local",
        "hydra/launcher=ctxbench_threads",
        f"hydra.launcher.n_jobs={trials}",
        f"study.name={study}",
    ]
    env = {**os.environ, "CTXBENCH_RESULTS": str(results)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak = _Peak(proc.pid)
    peak.start()
    log, _ = proc.communicate()
    wall = time.perf_counter() - t0
    peak.stop.set()
    if proc.returncode != 0:
        raise RuntimeError(f"the agent trials failed ({proc.returncode}):\n{log[-3000:]}")
    (sweep,) = (results / "hydra" / "multirun" / study).iterdir()
    recs = [json.loads(x) for x in (sweep / "progress.jsonl").read_text().splitlines()]
    in_flight = peak_overlap([(r["ts"] - r["wall_s"], r["ts"]) for r in recs])
    harness, kids = peak.harness / 2**20, peak.children / 2**20
    return {
        "agent": agent,
        "trials": len(recs),
        "wall_s": round(wall, 1),
        "trials_in_flight_peak": in_flight,
        "harness_rss_peak_mb": round(harness, 1),
        "children_rss_peak_mb": round(kids, 1),
        "mb_per_trial_in_flight": round((harness + kids) / max(in_flight, 1), 1),
        "outcomes": {o: sum(1 for r in recs if r["outcome"] == o) for o in {r["outcome"] for r in recs}},
    }


def text(r: dict[str, Any]) -> str:
    lines = [
        f"agent trials: the model proxy's overhead per request (agent's wall - provider call, n={r['proxy']['n']} pairs)"
    ]
    for name, v in r["proxy"].items():
        if isinstance(v, dict):
            lines.append(
                f"  {name:<42} p50 {v['overhead_ms_p50']:7.2f} ms  p99 {v['overhead_ms_p99']:7.2f} ms  "
                f"(direct provider call {v['direct_ms_p50']} ms, {v['body_chars']} chars)"
            )
    m = r.get("memory")
    if r.get("memory_skipped"):
        lines.append(f"  memory per agent trial in flight: not measured ({r['memory_skipped']})")
    if m:
        lines.append(
            f"  memory per {m['agent']} trial in flight        {m['mb_per_trial_in_flight']} MB "
            f"(peak {m['trials_in_flight_peak']} in flight: harness {m['harness_rss_peak_mb']} MB + "
            f"agents' processes {m['children_rss_peak_mb']} MB; {m['outcomes']}, {m['wall_s']} s)"
        )
    return "\n".join(lines)


def run(requests: int, agent_trials: int, tmp: Path, agent: str = "mini_swe_agent") -> dict[str, Any]:
    from bench.agents.install import installed, spec_named
    from bench.config import ConfigError

    tmp.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"proxy": proxy_overhead(requests, tmp)}
    if agent_trials:
        try:
            installed(spec_named(agent))
        except ConfigError as exc:  # make bench without `make agents`: say so, measure the rest
            report["memory_skipped"] = str(exc)
            return report
        report["memory"] = agent_memory(tmp / "trials", agent_trials, agent)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.perf.agents", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--requests", type=int, default=200, help="request pairs per body (direct, proxied)")
    p.add_argument(
        "--agent-trials", type=int, default=4, help="mini trials in flight for the memory figure (0: skip)"
    )
    a = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ctxbench-bench-agents-"))
    try:
        report = run(a.requests, a.agent_trials, tmp)
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2))
    print(text(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
