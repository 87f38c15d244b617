"""Issue 21's defects that came from the real server, each against it: the trial's wall budget
inside a real call (defect 1), llama.cpp's own overflow wording (defect 2), and the budget by the
server's count of what is sent besides the messages (defect 3)."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.config import compose, load
from bench.core.outcomes import AGENT
from bench.core.tokens import count_messages, count_text
from bench.core.toolspecs import TOOLS
from bench.core.types import Message
from bench.providers import make_provider
from bench.providers.base import ContextOverflow
from bench.trial import context_window
from tests.bench.real.test_real_trials import real_trial

pytestmark = [pytest.mark.docker, pytest.mark.real]


@contextlib.contextmanager
def slot_taken(llama) -> Iterator[None]:
    """The server's one slot (-np 1) busy with a long generation until the block ends, so a request
    sent meanwhile waits at the server: a real call that outlives any short budget, on an idle
    machine too (an unqueued first turn can end inside 3 s there, as output_truncation)."""
    started, stop = threading.Event(), threading.Event()

    def generate() -> None:
        body = {
            "prompt": "Count to ten thousand: 1, 2,",
            "n_predict": 3000,
            "ignore_eos": True,
            "stream": True,
        }
        req = urllib.request.Request(
            f"{llama.url}/completion", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=300) as r:
            for _ in r:  # the first streamed token: the slot is ours
                started.set()
                if stop.is_set():
                    return  # closing the stream makes llama-server stop generating

    worker = threading.Thread(target=generate, daemon=True)
    worker.start()
    assert started.wait(120), "llama-server streamed nothing in 120 s"
    try:
        yield
    finally:
        stop.set()
        worker.join(60)


def test_the_wall_budget_ends_a_real_call_as_timeout_and_is_not_retried(
    llama, tmp_path, monkeypatch, caplog, docker_ready
):
    """Defect 1: with trial_timeout_s=3 a real call that outlives the budget was retried as a
    network timeout and ended as output_truncation after 22 s."""
    caplog.set_level(logging.WARNING)
    with slot_taken(llama):
        _, result, records, wall = real_trial(
            llama,
            tmp_path,
            monkeypatch,
            "strategy=raw",
            "limits.trial_timeout_s=3",
            "limits.max_turns=50",
            "limits.max_turns_per_step=25",
        )
    assert (result.failure_reason, result.outcome_class) == ("timeout", AGENT)
    assert "retrying" not in caplog.text
    # From the log's first to its last record: the deadline, the watchdog's grace, one repeat.
    played = records[-1]["t"]["ts"] - records[0]["t"]["ts"]
    assert played < 3 + 5 + 5 + 2, played
    assert wall < 180, wall  # with the sandbox's start and the recording, on a loaded machine


def test_llama_cpp_overflow_is_a_context_overflow(llama):
    """Defect 2: `request (N tokens) exceeds the available context size` became provider_error."""
    cfg = load(compose(["model=smollm2", f"model.base_url={llama.url}/v1", "model.window=100000"])).model
    provider = make_provider(cfg)
    long = Message("user", "word " * 6000)  # > the server's 4,096-token context
    try:
        with pytest.raises(ContextOverflow, match="context_overflow after 1 attempt"):
            provider.complete((Message("system", "You are terse."), long), TOOLS, max_tokens=16, seed=1)
    finally:
        provider.close()


def _prompt(provider, messages) -> int:
    c = provider.complete(messages, TOOLS, max_tokens=1, seed=1)  # one token: the server's count is the point
    return c.usage.input + c.usage.cache_read + c.usage.cache_write


def test_the_budget_holds_by_the_servers_count(llama):
    """Defect 3: a context the harness counted as 938 tokens overflowed a 2,048-token window (the
    server counts the tool schemas its chat template writes in, and with its own tokenizer). After
    one counted request, a request that fits the harness's naive budget but would take the server
    past the window is outside the budget the harness now gives the strategy."""
    window, reserve = 2048, 256
    cfg = load(
        compose(
            [
                "model=smollm2",
                f"model.base_url={llama.url}/v1",
                "model.tool_calls=native",
                f"model.window={window}",
            ]
        )
    ).model
    provider = make_provider(cfg)
    overhead = count_text(json.dumps([t.__dict__ for t in TOOLS], sort_keys=True))
    text = (Path(__file__).resolve().parents[3] / "docs" / "design.md").read_text()
    try:
        first = (Message("system", "You are a coding agent."), Message("user", text[:1500]))
        counts = [(count_messages(first), _prompt(provider, first))]
        allowed = context_window.window(window, reserve, overhead, counts) - reserve
        naive = window - reserve
        assert allowed < naive
        cut = 1500
        while count_messages(second := (first[0], Message("user", text[:cut]))) < (allowed + naive) // 2:
            cut += 200
        harness = count_messages(second)
        server = _prompt(provider, second)
    finally:
        provider.close()
    assert allowed < harness <= naive  # the old budget let it through; the new one does not
    assert server + reserve > window, (harness, server)  # and the server's count shows why
