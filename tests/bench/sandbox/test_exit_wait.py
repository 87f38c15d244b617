"""DockerSandbox._exit_code waits for the engine to record an exec's exit by a deadline, not by a
count of polls (no engine needed: a fake API whose exec stays "Running" for a while)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.sandbox import engine
from bench.sandbox.docker import DockerSandbox


class _SlowEngine:
    """Reports the exec running until `record_after_s` of (fake) time has passed."""

    def __init__(self, clock: list[float], record_after_s: float):
        self.clock, self.record_after_s, self.calls = clock, record_after_s, 0

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        self.calls += 1
        self.clock[0] += 0.002  # an inspect round trip
        if self.clock[0] < self.record_after_s:
            return {"Running": True, "ExitCode": None}
        return {"Running": False, "ExitCode": 0}


def _sandbox(monkeypatch: pytest.MonkeyPatch, record_after_s: float) -> tuple[DockerSandbox, _SlowEngine]:
    clock = [0.0]
    monkeypatch.setattr(engine.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(engine.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    sb = object.__new__(DockerSandbox)
    fake = _SlowEngine(clock, record_after_s)
    sb._api = fake
    return sb, fake


def test_an_exit_the_engine_records_late_is_still_read(monkeypatch):
    """A loaded engine took longer than 400 polls of 5 ms (~2.8 s here) to record a probe's exit;
    the old loop returned -1 and the clean sandbox's probe counted as failed."""
    sb, fake = _sandbox(monkeypatch, record_after_s=6.0)
    assert sb._exit_code("e" * 64, "c" * 64) == 0
    assert fake.calls < 100  # backs off rather than spinning on the engine


def test_an_exit_never_recorded_gives_up_at_the_deadline(monkeypatch, caplog):
    sb, _ = _sandbox(monkeypatch, record_after_s=float("inf"))
    assert sb._exit_code("e" * 64, "c" * 64) == -1
    assert engine.time.monotonic() >= engine.EXIT_RECORD_WAIT_S
    assert "recorded no exit" in caplog.text
