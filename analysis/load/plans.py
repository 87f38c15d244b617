"""A study's plan (plan.json in its parent run, written by the study callback): every trial it
promised, so analysis.load.accounting can count the ones that never ran (docs/studies.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

PLAN_ARTIFACT = "plan.json"  # written by the study callback into the study's parent run


def read_plan(client, run_id: str) -> dict[str, Any] | None:
    """A parent run's plan.json; None when it has none (a study begun before plans existed)."""
    import tempfile

    if PLAN_ARTIFACT not in {a.path for a in client.list_artifacts(run_id)}:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        return json.loads(Path(client.download_artifacts(run_id, PLAN_ARTIFACT, tmp)).read_text())


def read(
    client, parents: Sequence[Any], columns: Sequence[str]
) -> tuple[pd.DataFrame, dict[str, bool], list[str]]:
    """The planned trials of every study parent run (`columns` of each; "study" first), whether
    each study has a plan, and notes."""
    rows: list[dict[str, Any]] = []
    has_plan: dict[str, bool] = {}
    notes: list[str] = []
    for run in parents:
        study = run.data.tags.get("study")
        try:
            plan = read_plan(client, run.info.run_id)
        except Exception as exc:  # an unreachable artifact store: report what ran, and say why
            plan = None
            notes.append(f"study {study!r}: its plan could not be read ({type(exc).__name__}: {exc})")
        has_plan[study] = plan is not None
        if plan is None:
            continue
        rows += [{"study": study, **{k: t.get(k) for k in columns[1:]}} for t in plan.get("trials", [])]
        invocations, invalid = plan.get("invocations", []), plan.get("invalid", [])
        if len({json.dumps(sorted(i.get("overrides") or [])) for i in invocations}) > 1:
            notes.append(
                f"study {study!r}: the plan is the union of {len(invocations)} invocations with "
                "different sweeps (each is listed in its parent run's plan.json)"
            )
        if invalid:
            notes.append(
                f"study {study!r}: {len(invalid)} planned job(s) had an invalid config and could not "
                f"run (first: {' '.join(invalid[0].get('overrides') or [])}: {invalid[0].get('error')})"
            )
    return pd.DataFrame(rows, columns=list(columns)), has_plan, notes
