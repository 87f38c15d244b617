"""A trial's large values, stored once (ctxlog/blobs.py), through the whole record: the same
trial with and without the blob store has the same verdict, metrics and events as read back;
MLflow holds each blob once, `verify` by run id fetches and checks them, and the diff page's
reader gets the values back from MLflow."""

from __future__ import annotations

from analysis.diff.__main__ import from_run
from bench.eventlog.verify import main as verify_main
from bench.eventlog.writer import comparable
from ctxlog import blobs
from ctxlog import events as ev
from ctxlog.reader import Log
from tests.bench.trial.conftest import SOLVE, mlflow_run

NOTES = "# notes\n" + "an honest, long comment line\n" * 200  # 5,808 characters
# the large file written twice, then the task solved: its text is in model_call, tool_call, messages
SCRIPT = [
    [{"name": "write_file", "args": {"path": "NOTES.md", "content": NOTES}}],
    [{"name": "write_file", "args": {"path": "NOTES.md", "content": NOTES}}],
    *SOLVE,
]
TIMED = ("latency_s", "wall_s", "turn_latency_s", "ttft_s")


def _trial(scripted_trial, *overrides):
    result, tcfg = scripted_trial(SCRIPT, *overrides)
    run = mlflow_run(tcfg, result.run_id)
    return result, tcfg, run


def test_large_values_change_nothing_but_where_they_are_stored(scripted_trial):
    inline, _, inline_run = _trial(scripted_trial, "tracking.blob_chars=0")
    stored, tcfg, run = _trial(scripted_trial, "tracking.blob_chars=4096")
    assert inline.success and stored.success
    folder = stored.events_path.parent / blobs.DIR
    # NOTES itself, and any longer value that carries it (a request holding the file's text)
    assert blobs.sha_of(NOTES) in [p.name for p in folder.iterdir()]
    assert (
        NOTES not in stored.events_path.read_text()
        and NOTES.replace("\n", "\\n") in inline.events_path.read_text()
    )
    assert stored.events_path.stat().st_size < inline.events_path.stat().st_size - 3 * len(NOTES)

    def same(path):
        return [
            {k: v for k, v in r.items() if k not in ("trial_id", "seq")}
            for r in comparable(Log.from_path(path, strict=True).records())
        ]

    assert same(stored.events_path) == same(inline.events_path)
    metrics = {k: v for k, v in run.data.metrics.items() if not k.endswith(TIMED) and "_s" not in k}
    assert metrics == {
        k: v for k, v in inline_run.data.metrics.items() if not k.endswith(TIMED) and "_s" not in k
    }

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tcfg.tracking.uri)
    # MLflow gets each blob once: the same names as the trial folder's, no copy under another name
    assert sorted(a.path for a in client.list_artifacts(run.info.run_id, blobs.DIR)) == sorted(
        f"{blobs.DIR}/{p.name}" for p in folder.iterdir()
    )
    assert verify_main([run.info.run_id, "--tracking-uri", tcfg.tracking.uri]) == 0
    page = from_run(run)  # what the diff page reads, from MLflow alone
    assert [e.args.get("content") for e in page.log.of(ev.ToolCall)][:2] == [NOTES, NOTES]
    (folder / blobs.sha_of(NOTES)).unlink()
    assert verify_main([str(stored.events_path)]) == 1  # a missing blob fails verify
