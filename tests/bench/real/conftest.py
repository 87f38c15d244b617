"""A real local model for the tests: llama-server with SmolLM2-135M-Instruct on loopback, one per
session (scripts/ensure_local_model.sh installs it; `make test` runs that first). Without the
install these tests skip, or fail under CTXBENCH_REQUIRE_LOCAL_MODEL=1 (as `make test` sets)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bench.local.server import LlamaServer, LocalModelMissing, find_install, free_port

CTX = 4096  # the server's context (-c): conf/model/smollm2.yaml's window
# One thread, not the server's default two: in `make test` the server shares 2 cores with three
# xdist workers, and a 2-thread llama.cpp spins at its barrier whenever the other thread is
# descheduled. Six requests beside two busy cores: 47 s of its CPU and 46 s of wall with 2
# threads, 9 s and 13 s with 1 (measured at stop 48; alone: 12 s vs 9 s CPU, 6 s vs 9 s wall).
# The answers differ from a 2-thread server's; no test here depends on the exact text.
THREADS = 1


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    try:
        install = find_install()
    except LocalModelMissing as exc:
        if os.environ.get("CTXBENCH_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(f"CTXBENCH_REQUIRE_LOCAL_MODEL=1 but {exc}", pytrace=False)
        pytest.skip(str(exc))
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    with LlamaServer(install, port=free_port(), ctx=CTX, threads=THREADS, log_path=log) as srv:
        yield srv
