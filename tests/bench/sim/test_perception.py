"""perceive() extends the kept beliefs of a context's longest perceived prefix: the result must
equal reading the whole context afresh, whatever was perceived before."""

from __future__ import annotations

import threading

import pytest

from bench.core.types import Message
from bench.sim import perception
from bench.sim.perception import perceive
from tests.helpers.sim_world import make_task, provider, run


def fresh(messages: list[Message]) -> perception.Beliefs:
    """Read afresh: a store that keeps nothing has no prefix to extend."""
    return perception._KeptContexts(0).perceive(messages)


@pytest.fixture(scope="module")
def transcript() -> list[Message]:
    task = make_task()
    _, messages, _ = run(provider("sim", task), task, seed=5002)
    assert len(messages) > 20
    return messages


@pytest.fixture(autouse=True)
def empty_store():
    perception._KEPT.clear()
    yield
    perception._KEPT.clear()


def test_every_growing_context_perceives_as_read_afresh(transcript):
    for n in range(1, len(transcript) + 1):
        assert perceive(transcript[:n]) == fresh(transcript[:n]), n


def test_only_the_new_messages_are_read(transcript, monkeypatch):
    taken: list[int] = []
    real = perception._take
    monkeypatch.setattr(perception, "_take", lambda b, i, m: (taken.append(i), real(b, i, m)))
    perceive(transcript[:10])
    rebuilt = [Message.from_dict(m.to_dict()) for m in transcript[:14]]  # equal, not the same objects
    perceive(rebuilt)
    assert taken == list(range(10)) + [10, 11, 12, 13]


def test_a_branch_does_not_change_what_its_prefix_or_sibling_perceived(transcript):
    prefix = transcript[:12]
    first = transcript[:16]
    other = prefix + [
        Message("user", "CURRENT STEP [step:s02] something else\nTouches: pkg/x.py"),
        Message("tool", "deleted pkg/api.py", tool_call_id="nope"),
    ]
    before = fresh(first)
    assert perceive(prefix) == fresh(prefix)
    assert perceive(first) == before
    assert perceive(other) == fresh(other)
    assert perceive(first) == before
    assert perceive(prefix) == fresh(prefix)


def test_a_changed_message_in_the_middle_is_not_a_prefix(transcript):
    perceive(transcript[:20])
    changed = list(transcript[:20])
    changed[5] = Message(
        changed[5].role,
        changed[5].content + " (edited)",
        changed[5].tool_calls,
        changed[5].tool_call_id,
        changed[5].name,
    )
    assert perceive(changed) == fresh(changed)
    assert perceive(changed) != fresh(transcript[:20])


def test_the_store_is_bounded():
    for i in range(perception.KEPT_CONTEXTS + 7):
        perceive([Message("user", f"context {i}")])
    assert len(perception._KEPT._entries) == perception.KEPT_CONTEXTS
    nothing = perception._KeptContexts(0)
    nothing.perceive([Message("user", "kept by no one")])
    assert nothing._entries == []


def test_threads_perceiving_different_trials_at_once(transcript):
    other_task = make_task("write")
    _, second, _ = run(provider("sim", other_task), other_task, seed=11)
    wrong: list[int] = []

    def grow(messages: list[Message]) -> None:
        for n in range(1, len(messages) + 1):
            if perceive(messages[:n]) != fresh(messages[:n]):
                wrong.append(n)

    threads = [threading.Thread(target=grow, args=(m,)) for m in (transcript, second, transcript, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
