"""The trial's wall budget is never swallowed or retried (issue 21, defect 1): the watchdog fires
again until the watched code is left, and the HTTP transport re-raises the trial's timeout
instead of classifying it as a network timeout and retrying the call."""

from __future__ import annotations

import time

import pytest

from bench.core.outcomes import TrialTimeout
from bench.core.toolspecs import TOOLS
from bench.providers.http.transport import classify
from bench.serve.server import LoopbackServer
from bench.trial.watchdog import Watchdog
from tests.helpers.serve_support import CONVERSATION, KINDS, ScriptedBackend, Sleeps, make

pytestmark = pytest.mark.usefixtures("api_keys")


def test_watchdog_fires_again_when_its_first_exception_is_swallowed():
    t0 = time.monotonic()
    swallowed = 0
    with pytest.raises(TrialTimeout), Watchdog(0.2, TrialTimeout, repeat_s=0.2) as dog:
        while True:  # a retry loop that catches everything, as an SDK's or ours did
            try:
                time.sleep(30)
            except Exception:  # noqa: BLE001 - the point: a caught watchdog must come back
                swallowed += 1
                if swallowed >= 3:
                    raise
    assert dog.fired >= 3 and time.monotonic() - t0 < 15  # not the 30 s sleep


def test_a_disarmed_watchdog_stops_repeating():
    with Watchdog(0.1, TrialTimeout, repeat_s=0.1) as dog:
        try:
            time.sleep(5)
        except TrialTimeout:
            pass
    fired = dog.fired
    time.sleep(0.4)  # no further SIGALRM reaches this sleep
    assert fired == dog.fired == 1


def test_the_trial_timeout_is_not_a_network_timeout():
    assert classify(TrialTimeout()).retryable is False
    try:  # what the openai SDK does to whatever its request raised
        try:
            raise TrialTimeout()
        except TrialTimeout as inner:
            raise ConnectionError("Connection error.") from inner
    except ConnectionError as wrapped:
        assert classify(wrapped).retryable is False


@pytest.mark.parametrize("kind", KINDS)
def test_a_hung_call_ends_the_trial_once_and_is_not_retried(kind):
    """The server stalls 30 s; the call's own timeout is 60 s with 3 retries: only the watchdog
    can end it, at once, as the trial's `timeout`, and the request is sent once. One plain call
    first, so the SDK's lazy imports and connection (about 1 s under load) are not what the
    0.5 s watchdog interrupts: it must interrupt the request itself."""
    sleeps = Sleeps()
    with LoopbackServer(ScriptedBackend(), slow_s=30) as srv:
        p = make(kind, srv, sleep=sleeps, timeout_s=60.0, max_retries=3)
        try:
            p.complete(CONVERSATION[:2], TOOLS, max_tokens=64, seed=1)
            srv.faults.add("slow")
            t0 = time.monotonic()
            with pytest.raises(TrialTimeout), Watchdog(0.5, TrialTimeout, repeat_s=0.5):
                p.complete(CONVERSATION[:2], TOOLS, max_tokens=64, seed=2)
            wall = time.monotonic() - t0
        finally:
            p.close()
        assert [fault for _, fault in srv.calls] == [None, "slow"], srv.calls
    assert sleeps == [] and wall < 15, (sleeps, wall)  # not the 30 s stall


@pytest.mark.parametrize("in_thread", [False, True])
def test_time_queued_for_the_studys_allowance_moves_the_limit(in_thread):
    # 0.6 s queued (a wait in progress when the 0.3 s limit comes) is waited out, then it fires.
    from bench.core import queued

    seen: dict[str, float] = {}

    def trial() -> None:
        t0 = time.monotonic()
        try:
            with Watchdog(0.3, TrialTimeout, repeat_s=0.1, extend=queued.since_now()):
                with queued.waiting():
                    time.sleep(0.6)
                for _ in range(100):  # short sleeps: in a thread the exception lands between them
                    time.sleep(0.05)
        except TrialTimeout:
            seen["fired_after"] = time.monotonic() - t0

    if in_thread:
        import threading

        t = threading.Thread(target=trial)
        t.start()
        t.join(10)
    else:
        trial()
    assert 0.85 <= seen["fired_after"] < 5, seen  # the loop ends unfired at 5.6 s
