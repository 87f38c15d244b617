"""`python -m bench.eventlog.verify PATH|RUN_ID`: rebuild every model-visible context from the event
log alone and check it against its logged hash; check the hash chain, the log's digest, and each
large value stored once in `blobs/` beside it (present, and its sha's: ctxlog/blobs.py).

Exit 0 when everything matches; 1 on any mismatch, broken chain or unreadable log.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from bench.core.toolspecs import TOOLS
from bench.core.types import Message, context_sha, request_hash, sha256_text
from bench.eventlog.writer import line_sha
from bench.proxy.api import APIS, Request
from bench.proxy.rewrite import Rewrite
from ctxlog import blobs
from ctxlog import events as ev
from ctxlog.reader import Log


def verify(path: Path, expected_digest: str | None = None) -> tuple[int, list[str]]:
    """(contexts rebuilt, problems). An empty problem list means the log verifies."""
    problems: list[str] = []
    rebuilt = 0
    try:
        log = Log.from_path(path, strict=True)
        problems += log.blob_problems
        prev = ""
        for line, e in zip(log.lines, log.events, strict=True):
            if e.prev != prev:
                problems.append(f"seq {e.seq}: hash chain broken (prev does not match the previous line)")
            prev = line_sha(line)
        if log.schema > ev.SCHEMA:
            problems.append(f"schema {log.schema} is newer than this reader's ({ev.SCHEMA}): update ctxbench")
        for m in log.of(ev.Message):
            if Message.from_dict(m.message).sha() != m.sha:
                problems.append(f"seq {m.seq}: message content does not match its sha")
        seed, max_output = log.start.seed, log.start.max_output
        proxied = _proxied(log, problems)
        for call in log.calls:
            if call.messages is None:
                missing = sum(s not in log.messages for s in call.context.messages)
                problems.append(
                    f"seq {call.context.seq}: context refers to {missing} message(s) not in the log"
                )
                continue
            ctx = tuple(Message.from_dict(m) for m in call.messages)
            if context_sha(ctx) != call.context.sha:
                problems.append(
                    f"seq {call.context.seq}: rebuilt context (turn {call.context.turn}) "
                    "does not match its hash"
                )
            rebuilt += 1
            reply = call.reply
            tools = TOOLS if reply is not None and reply.purpose == "turn" else ()
            limit = max_output
            if call.context.seq in proxied:  # an external agent's request: its own tools and reply limit
                request = proxied[call.context.seq]
                decoded = _decode(request)
                if context_sha(decoded.messages) != call.context.sha:
                    problems.append(
                        f"seq {request.seq}: the request body does not decode to the logged context"
                    )
                tools, limit = decoded.tools, request.max_tokens
            if (
                reply is not None
                and seed is not None
                and request_hash(ctx, tools, limit, seed) != reply.request_hash
            ):
                problems.append(f"seq {reply.seq}: request hash does not match the rebuilt context")
    except (ValueError, KeyError, TypeError) as exc:
        problems.append(f"unreadable log: {exc}")
    digest = path.with_name(path.name + ".sha256")
    expected = expected_digest or (digest.read_text().strip() if digest.exists() else None)
    if expected and sha256_text(path.read_text(encoding="utf-8", errors="replace")) != expected:
        problems.append("the log's digest differs from the one recorded at the end of the trial")
    if rebuilt == 0 and not problems:
        problems.append("no contexts in the log")
    return rebuilt, problems


def _decode(request: ev.AgentRequest) -> Request:
    """The request the model saw: the agent's body decoded, and the proxy's rewrite applied again."""
    decoded = APIS[request.api].decode(json.loads(request.body))
    return Rewrite.from_label(request.rewrite).apply(decoded)[0] if request.rewrite else decoded


def _proxied(log: Log, problems: list[str]) -> dict[int, ev.AgentRequest]:
    """The model proxy's requests (docs/agents.md) by the seq of the context logged for each, after
    checking every request's and reply's body against its sha."""
    out: dict[int, ev.AgentRequest] = {}
    pending: ev.AgentRequest | None = None
    for e in log.events:
        if isinstance(e, ev.AgentRequest | ev.AgentReply):
            if hashlib.sha256(e.body.encode("utf-8", errors="surrogateescape")).hexdigest() != e.body_sha:
                problems.append(f"seq {e.seq}: {e.kind} body does not match its sha")
            pending = e if isinstance(e, ev.AgentRequest) and e.api in APIS else None
        elif isinstance(e, ev.Context) and pending is not None:
            out[e.seq], pending = pending, None
    return out


def _from_run(run_id: str, uri: str | None) -> tuple[Path, str | None]:
    from mlflow.tracking import MlflowClient

    from bench.config import compose

    uri = uri or compose().tracking.uri
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    into = tempfile.mkdtemp(prefix="ctxbench-verify-")
    local = client.download_artifacts(run_id, "events.jsonl", into)
    if any(a.path == blobs.DIR for a in client.list_artifacts(run_id)):  # the log's large values, each once
        client.download_artifacts(run_id, blobs.DIR, into)
    return Path(local), run.data.tags.get("events_sha256")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.eventlog.verify", description=__doc__)
    ap.add_argument("target", help="an events.jsonl path or an MLflow run id")
    ap.add_argument("--tracking-uri", help="MLflow tracking URI (default: the project's config)")
    args = ap.parse_args(argv)
    path, expected = Path(args.target), None
    if not path.exists():
        if "/" in args.target or args.target.endswith(".jsonl"):
            print(f"no such file: {path}", file=sys.stderr)
            return 1
        path, expected = _from_run(args.target, args.tracking_uri)
    rebuilt, problems = verify(path, expected)
    for p in problems:
        print(f"FAIL {p}")
    print(f"{path}: {rebuilt} contexts rebuilt, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
