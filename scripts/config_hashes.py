#!/usr/bin/env python3
"""Write (or check) the config hashes of a fixed set of jobs: every grid cell at seed 0, every model,
sandbox, strategy and experiment. A refactoring of the configs must leave them unchanged, or studies
stop resuming (docs/design.md §4). `--write` refreshes tests/fixtures/config/hashes.json; with no
argument it prints the jobs whose hash moved. `--grid` does the same for all 480 jobs of
experiment=grid at rep 0 (tests/fixtures/config/grid_hashes.json; too slow for the test suite)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURE = ROOT / "tests" / "fixtures" / "config" / "hashes.json"
GRID_FIXTURE = ROOT / "tests" / "fixtures" / "config" / "grid_hashes.json"

STRATEGIES = ("raw", "compaction", "ledger", "subagent", "masking")
ARMS = ("baseline", "compaction", "drift", "drift_compaction")
FAMILIES = ("signature_migration", "extract_module", "config_rename", "batch_writes", "record_upgrade")
MODELS = ("sim", "oracle", "adversary", "replay", "smollm2", "local", "anthropic", "openai", "deepseek")
EXPERIMENTS = ("grid", "demo", "ablation", "attribution", "handoff", "sensitivity")


def jobs() -> list[list[str]]:
    out = [
        ["experiment=grid", f"strategy={s}", f"arm={a}", f"task={f}", "task.seed=0", "rep=0"]
        for s in STRATEGIES[:4]
        for a in ARMS
        for f in FAMILIES[:3]
    ]
    out += [[f"task={f}"] for f in FAMILIES] + [[f"strategy={s}"] for s in STRATEGIES]
    out += [[f"model={m}"] for m in MODELS] + [["sandbox=local"], ["sandbox=docker"]]
    out += [[f"experiment={e}"] for e in EXPERIMENTS]
    return out


def grid_jobs() -> list[list[str]]:
    """experiment=grid's sweep (conf/experiment/grid.yaml), every seed of range(0,10)."""
    return [
        ["experiment=grid", f"strategy={s}", f"arm={a}", f"task={f}", f"task.seed={seed}", "rep=0"]
        for s in STRATEGIES[:4]
        for a in ARMS
        for f in FAMILIES[:3]
        for seed in range(10)
    ]


def hashes(job_list: list[list[str]] | None = None) -> dict[str, str]:
    from bench.config import compose, load

    return {" ".join(j): load(compose(j)).config_hash for j in (jobs() if job_list is None else job_list)}


def main(argv: list[str]) -> int:
    fixture = GRID_FIXTURE if "--grid" in argv else FIXTURE
    now = hashes(grid_jobs() if "--grid" in argv else None)
    if "--write" in argv:
        fixture.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(now)} hashes to {fixture.relative_to(ROOT)}")
        return 0
    pinned = json.loads(fixture.read_text())
    moved = {k: (pinned.get(k), v) for k, v in now.items() if pinned.get(k) != v}
    for job, (was, is_) in sorted(moved.items()):
        print(f"{job}: {was} -> {is_}")
    print(f"{len(now) - len(moved)} of {len(now)} jobs keep their config hash")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
