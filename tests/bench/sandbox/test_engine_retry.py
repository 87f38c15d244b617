"""The engine's retry-once policy (bench/sandbox/engine.py `_retry_once`): a hung call is retried
once after `before_retry`; an engine that answers with an error, or any other error, is not."""

from __future__ import annotations

import pytest
import requests

from bench.sandbox import engine


def _calls(*outcomes):
    seen = []

    def call():
        seen.append(1)
        out = outcomes[len(seen) - 1]
        if isinstance(out, BaseException):
            raise out
        return out

    return call, seen


def test_a_hung_call_is_retried_once_after_before_retry():
    call, seen = _calls(requests.exceptions.ReadTimeout("Read timed out."), "answer")
    cleaned = []
    assert engine._retry_once("exec start", call, lambda: cleaned.append(1)) == "answer"
    assert len(seen) == 2 and cleaned == [1]


def test_a_call_that_hangs_twice_raises_the_second_hang():
    second = TimeoutError("timed out again")
    call, seen = _calls(TimeoutError("timed out"), second)
    with pytest.raises(TimeoutError) as raised:
        engine._retry_once("container start", call)
    assert raised.value is second and len(seen) == 2


@pytest.mark.parametrize(
    "error",
    [requests.exceptions.ConnectionError("refused"), OSError("no such socket"), ValueError("timed out")],
)  # a ValueError is no engine error, whatever it says
def test_an_answer_or_a_foreign_error_is_not_retried(error):
    call, seen = _calls(error, "never")
    before = []
    with pytest.raises(type(error)):
        engine._retry_once("exec inspect", call, lambda: before.append(1))
    assert len(seen) == 1 and before == []
