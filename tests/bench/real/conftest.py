"""A real local model for the tests: llama-server with SmolLM2-135M-Instruct on loopback, one per
session (scripts/ensure_local_model.sh installs it; `make test` runs that first). Without the
install these tests skip, or fail under CTXBENCH_REQUIRE_LOCAL_MODEL=1 (as `make test` sets)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bench.local.server import LlamaServer, LocalModelMissing, find_install, free_port

CTX = 4096  # the server's context (-c): conf/model/smollm2.yaml's window


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    try:
        install = find_install()
    except LocalModelMissing as exc:
        if os.environ.get("CTXBENCH_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(f"CTXBENCH_REQUIRE_LOCAL_MODEL=1 but {exc}", pytrace=False)
        pytest.skip(str(exc))
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    with LlamaServer(install, port=free_port(), ctx=CTX, log_path=log) as srv:
        yield srv
