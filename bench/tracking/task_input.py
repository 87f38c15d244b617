"""A trial's task as an MLflow dataset input, so the runs table's Dataset column says which task
each run faced: name = the task id (family/seed[/size]), digest = a hash of the task's whole
content (repository files, statement, plan, invariants, traps, drift schedule, checks). Two runs
showing the same digest faced byte-for-byte the same task; a generator change shows up as a new
digest under the same name. The profile carries family, seed, size knobs and counts.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, fields, is_dataclass
from typing import Any

from tasks.spec import TaskSpec

log = logging.getLogger("ctxbench.tracking")

CONTEXT = "task"  # the dataset input's mlflow.data.context tag, shown beside it in the UI
DIGEST_CHARS = 16  # of the sha256 hex shown as the digest (MLflow allows 36); the profile has all 64


def _plain(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    raise TypeError(f"cannot hash {type(obj).__name__} into a task digest")


def content_sha256(task: TaskSpec) -> str:
    """sha256 of everything that defines the task (every field but its oracle, which is code
    computing from the same content)."""
    content = {f.name: getattr(task, f.name) for f in fields(task) if f.compare}
    blob = json.dumps(content, default=_plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def task_dataset(task: TaskSpec, size: Mapping[str, Any]):
    from mlflow.entities import Dataset

    sha = content_sha256(task)
    profile = {
        "family": task.family,
        "seed": task.seed,
        "size": dict(size),
        "sha256": sha,
        "files": len(task.files),
        "bytes": sum(len(c) for _, c in task.files),
        "steps": len(task.steps),
        "invariants": len(task.all_invariants()),
        "traps": len(task.traps),
        "drift": len(task.drift),
    }
    # The task's repository is the data: one row per file.
    schema = {"mlflow_colspec": [{"name": "path", "type": "string"}, {"name": "content", "type": "string"}]}
    source = {"generator": f"tasks.{task.family}.generate", "seed": task.seed, "size": dict(size)}
    return Dataset(
        name=task.task_id,
        digest=sha[:DIGEST_CHARS],
        source_type="code",
        source=json.dumps(source, sort_keys=True),
        schema=json.dumps(schema),
        profile=json.dumps(profile, sort_keys=True),
    )


def log_task_input(client: Any, run_id: str, task: TaskSpec, size: Mapping[str, Any]) -> bool:
    """Attach the task to the run as its dataset input. Runs of one task share one dataset row:
    a worker on another host may insert it at the same moment, in which case the second try
    finds it. A failure is logged and never fails the trial (the tags hold the same identity)."""
    from mlflow.entities import DatasetInput, InputTag

    inputs = [DatasetInput(task_dataset(task, size), tags=[InputTag("mlflow.data.context", CONTEXT)])]
    for attempt in (1, 2):
        try:
            client.log_inputs(run_id, datasets=inputs)
            return True
        except Exception as exc:
            duplicate = any(s in str(exc) for s in ("UNIQUE constraint", "duplicate key", "IntegrityError"))
            if attempt == 2 or not duplicate:
                log.warning(
                    "could not log the task %s as run %s's dataset input", task.task_id, run_id, exc_info=True
                )
                return False
    return False
