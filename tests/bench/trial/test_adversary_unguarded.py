"""The attacks of issue 42 (bench/providers/attacks/emitted.py) with their guard removed, through
the real Docker sandbox: each wins, so test_adversary.py's verdicts for them mean the guard held.

    attack        guard removed (monkeypatch)            what winning looks like
    deep_args     emitted.admit_args (bounds, schema)    the trial crashes: harness_error, FAILED
    surrogates    emitted.carry (lone surrogates)        a context the next request cannot encode
    bad_submit    emitted.admit_args                     `"invariants": 5` logged, which the
                                                         recording's measures cannot read
    huge_args     emitted.admit_args and                 the 2 MiB value logged again and again
                  ctxlog.blobs.stash (stored once)
    large_args    ctxlog.blobs.stash (stored once)       the 1 MB value the bound lets through,
                                                         logged again and again
    long_command  emitted.MAX_ARG_STRLEN                 `exit=N` and no reason
    git_paths     Tools._inside                          host git answers about host files

The guarded runs of the same attacks, root and not, are test_adversary.py's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.core import emitted
from bench.core.outcomes import AGENT, INFRA
from bench.core.types import Message
from bench.eventlog.verify import verify
from bench.providers.wire import anthropic, openai
from bench.trial.tools import Tools
from ctxlog import blobs
from ctxlog.statements import words
from tests.bench.trial.adversary_run import play

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("unguarded")


def _play(attack: str, results: Path, monkeypatch, tmp_path) -> tuple[dict[str, Any], Path]:
    monkeypatch.setenv("CTXBENCH_RESULTS", str(results))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    obs = play(attack, results)
    runs = sorted(results.rglob("events.jsonl"), key=lambda p: p.stat().st_mtime)
    return obs, runs[-1]


def _unencodable(events: Path) -> list[str]:
    """The messages of the log an HTTP provider could not send (its body is UTF-8 JSON)."""
    bad = []
    for line in events.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "message":
            continue
        message = Message.from_dict(record["message"])
        for body in (anthropic.to_wire([message]), openai.to_wire([message])):
            try:
                json.dumps(body, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                bad.append(record["sha"])
    return bad


def _carried_as_is(name: str, args: Any) -> Any:
    return args


def test_deep_arguments_crash_the_harness_without_the_boundary(results, monkeypatch, tmp_path, docker_ready):
    monkeypatch.setattr(emitted, "admit_args", _carried_as_is)
    obs, _ = _play("deep_args", results, monkeypatch, tmp_path)
    assert (obs.get("mlflow_status"), obs.get("outcome_class")) == ("FAILED", INFRA) or "crash" in obs, obs


def test_lone_surrogates_make_a_context_no_provider_can_send_without_the_boundary(
    results, monkeypatch, tmp_path, docker_ready
):
    obs, events = _play("surrogates", results, monkeypatch, tmp_path)
    assert obs["outcome_class"] == AGENT and _unencodable(events) == []  # guarded: every message sends
    monkeypatch.setattr(emitted, "carry", lambda text: text)
    obs, events = _play("surrogates", results, monkeypatch, tmp_path)
    assert _unencodable(events), "without the boundary a message holds a lone surrogate"


def _hand_offs_unreadable(events: Path) -> list[str]:
    """Logged messages whose submit_step hand-off the recording's measures cannot read (they
    read every message of a later step's first context: bench/eventlog/measures.py)."""
    bad = []
    for line in events.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "message":
            calls = record["message"].get("tool_calls") or ()
            try:
                words(str(record["message"].get("content") or ""), [(c["name"], c["args"]) for c in calls])
            except TypeError:
                bad.append(record["sha"])
    return bad


def test_a_submit_the_schema_refuses_breaks_the_recording_without_the_boundary(
    results, monkeypatch, tmp_path, docker_ready
):
    obs, events = _play("bad_submit", results, monkeypatch, tmp_path)
    assert obs["outcome_class"] == AGENT and _hand_offs_unreadable(events) == []
    monkeypatch.setattr(emitted, "admit_args", _carried_as_is)
    obs, events = _play("bad_submit", results, monkeypatch, tmp_path)
    assert '"invariants":5' in events.read_text() and _hand_offs_unreadable(events)


def test_a_huge_argument_floods_the_log_without_the_boundary(results, monkeypatch, tmp_path, docker_ready):
    _, guarded = _play("huge_args", results, monkeypatch, tmp_path)
    monkeypatch.setattr(emitted, "admit_args", _carried_as_is)
    # else each value stored once
    monkeypatch.setattr(blobs, "stash", lambda fields, threshold: (fields, [], {}))
    _, unguarded = _play("huge_args", results, monkeypatch, tmp_path)
    large = 2 << 20
    assert guarded.stat().st_size < large  # the three 2 MiB values: 2,000-character excerpts
    assert unguarded.stat().st_size > 3 * 2 * large  # each value twice per turn (model_call, tool_call)


@pytest.mark.timeout(900)  # two trials that write and read megabytes, on a shared machine
def test_an_allowed_large_argument_floods_the_log_without_the_blob_store(
    results, monkeypatch, tmp_path, docker_ready
):
    _, guarded = _play("large_args", results, monkeypatch, tmp_path)
    monkeypatch.setattr(blobs, "stash", lambda fields, threshold: (fields, [], {}))
    _, unguarded = _play("large_args", results, monkeypatch, tmp_path)
    value = 1_020_000
    stored = list((guarded.parent / blobs.DIR).iterdir())
    assert [p.stat().st_size for p in stored] == [value] and guarded.stat().st_size < value / 10
    assert verify(guarded)[1] == [] and verify(unguarded)[1] == []
    assert not (unguarded.parent / blobs.DIR).exists()
    assert unguarded.stat().st_size > 8 * value  # 4 turns: model_call, tool_call, the next context's message


def test_a_command_past_max_arg_strlen_gets_no_reason_without_the_guard(
    results, monkeypatch, tmp_path, docker_ready
):
    monkeypatch.setattr(emitted, "MAX_ARG_STRLEN", 1 << 30)
    obs, _ = _play("long_command", results, monkeypatch, tmp_path)
    assert "MAX_ARG_STRLEN" not in obs["output"] and "exit=" in obs["output"]


def test_git_answers_about_host_files_without_the_guard(results, monkeypatch, tmp_path, docker_ready):
    monkeypatch.setattr(Tools, "_inside", lambda self, operand: None)
    obs, _ = _play("git_paths", results, monkeypatch, tmp_path)
    # --no-index: a host file that exists differs from here.txt (exit 1); one that does not is named
    assert "Could not access '../../../../../../../../etc/ctxbench-no-such-file'" in obs["output"]
    assert "git diff -- ../../../../../../../../etc/hostname here.txt failed (1)" in obs["output"]
    assert obs["violation_events"] == 0
