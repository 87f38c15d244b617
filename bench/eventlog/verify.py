"""`python -m bench.eventlog.verify PATH|RUN_ID`: rebuild every model-visible context from the event
log alone and check it against its logged hash; check the hash chain and the log's digest.

Exit 0 when everything matches; 1 on any mismatch, broken chain or unreadable log.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.core.toolspecs import TOOLS
from bench.core.types import Message, context_sha, request_hash, sha256_text
from bench.eventlog.events import line_sha, read


def verify(path: Path, expected_digest: str | None = None) -> tuple[int, list[str]]:
    """(contexts rebuilt, problems). An empty problem list means the log verifies."""
    problems: list[str] = []
    messages: dict[str, Message] = {}
    prev, rebuilt, last_context = "", 0, None
    try:
        for line, rec in read(path):
            seq = rec.get("seq")
            if rec.get("prev") != prev:
                problems.append(f"seq {seq}: hash chain broken (prev does not match the previous line)")
            prev = line_sha(line)
            kind = rec.get("kind")
            if kind == "message":
                m = Message.from_dict(rec["message"])
                if m.sha() != rec["sha"]:
                    problems.append(f"seq {seq}: message content does not match its sha")
                messages[rec["sha"]] = m
            elif kind == "context":
                missing = [s for s in rec["messages"] if s not in messages]
                if missing:
                    problems.append(f"seq {seq}: context refers to {len(missing)} message(s) not in the log")
                    continue
                ctx = tuple(messages[s] for s in rec["messages"])
                if context_sha(ctx) != rec["sha"]:
                    problems.append(f"seq {seq}: rebuilt context (turn {rec['turn']}) does not match its hash")
                last_context = ctx
                rebuilt += 1
            elif kind == "model_call" and last_context is not None:
                ctx = last_context
                tools = TOOLS if rec.get("purpose", "turn") == "turn" else ()
                seed, max_tokens = _call_params(path)
                if seed is not None and request_hash(ctx, tools, max_tokens, seed) != rec.get("request_hash"):
                    problems.append(f"seq {seq}: request hash does not match the rebuilt context")
    except (ValueError, KeyError, TypeError) as exc:
        problems.append(f"unreadable log: {exc}")
    digest = path.with_name(path.name + ".sha256")
    expected = expected_digest or (digest.read_text().strip() if digest.exists() else None)
    if expected and sha256_text(path.read_text(encoding="utf-8", errors="replace")) != expected:
        problems.append("the log's digest differs from the one recorded at the end of the trial")
    if rebuilt == 0 and not problems:
        problems.append("no contexts in the log")
    return rebuilt, problems


_PARAMS: dict[Path, tuple[int | None, int]] = {}


def _call_params(path: Path) -> tuple[int | None, int]:
    if path not in _PARAMS:
        for _, rec in read(path):
            if rec.get("kind") == "trial_start":
                _PARAMS[path] = (rec.get("seed"), rec.get("max_output", 0))
                break
        else:
            _PARAMS[path] = (None, 0)
    return _PARAMS[path]


def _from_run(run_id: str, uri: str | None) -> tuple[Path, str | None]:
    from mlflow.tracking import MlflowClient

    from bench.config import compose

    uri = uri or compose().tracking.uri
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    local = client.download_artifacts(run_id, "events.jsonl", tempfile.mkdtemp(prefix="ctxbench-verify-"))
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
