"""An agent is a level like a strategy (docs/agents.md): a study crossing ctxbench's raw loop with
an external agent, written by the harness (runner, MLflow, event logs), read by the analysis:
the runs carry the level and the `agent` tag, the plan names the agent's level, the power planner
sizes the agent against the reference, the report shows it beside the strategies, and the diff
page pairs an agent's trial with its own baseline twin, never with a strategy's.

The agent is a test player (tests/helpers/agent_player.py: ctxbench's loop seated as an external
agent), so the study takes seconds and has the sim's real outcomes."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from bench.agents.install import STAMP
from bench.config import compose, load

AGENT = "toy_agent"
STUDY = "agents"
ARMS = ("baseline", "drift")
SEEDS = (0, 1)
AS_AGENT = [
    "agent=mini_swe_agent",
    f"agent.name={AGENT}",
    "agent.player=tests.helpers.agent_player:LoopAgent",
    "agent.dialect=",
]


@pytest.fixture(scope="module")
def agent_study(tmp_path_factory) -> Path:
    import bench.trial.runner as runner

    root = tmp_path_factory.mktemp("agent-study")
    results = root / "results"
    cache = root / "agents" / f"{AGENT}-2.4.6"  # what installed() checks: the stamp, the bin, the version
    (cache / "venv" / "bin").mkdir(parents=True)
    (cache / "venv" / "bin" / "python").symlink_to(sys.executable)
    (cache / "venv" / "lib" / "python3.11" / "site-packages" / "mini_swe_agent-2.4.6.dist-info").mkdir(
        parents=True
    )
    (cache / STAMP).write_text("pypi mini-swe-agent 2.4.6\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTXBENCH_RESULTS", str(results))
        mp.setenv("CTXBENCH_AGENTS", str(root / "agents"))
        for level in (["strategy=raw"], AS_AGENT):
            for arm in ARMS:
                for seed in SEEDS:
                    cfg = compose(
                        [
                            *level,
                            f"arm={arm}",
                            "task=signature_migration",
                            f"task.seed={seed}",
                            "task.size.steps=6",
                            "sandbox=local",
                            f"study.name={STUDY}",
                        ]
                    )
                    result = runner.run(load(cfg))
                    assert result.status in ("success", "failure"), result.failure_reason
    return results


@pytest.fixture(scope="module")
def agent_runs(agent_study):
    from analysis import load_runs

    return load_runs(f"sqlite:///{agent_study}/mlflow.db", "ctxbench", STUDY)


def test_the_runs_carry_the_level_and_the_agent_tag(agent_runs):
    t = agent_runs.trials
    assert len(t) == 2 * len(ARMS) * len(SEEDS)
    assert sorted(set(t["strategy"])) == ["raw", AGENT]
    assert set(t.loc[t["strategy"] == AGENT, "agent"]) == {AGENT} and set(
        t.loc[t["strategy"] == "raw", "agent"]
    ) == {""}


def test_the_plan_names_the_agents_level():
    from bench.study.plan import plan_trials, sweep_config

    jobs = [["strategy=raw"], [*AS_AGENT]]
    with sweep_config([]) as master:
        entries = plan_trials(master, jobs)
    assert [e["strategy"] for e in entries] == ["raw", AGENT]
    assert load(compose(AS_AGENT)).level == AGENT


def test_the_power_planner_sizes_the_agent_against_the_reference(agent_runs):
    from analysis.power import __main__ as power_cli

    args = power_cli.parser().parse_args(
        ["--pilot", STUDY, "--reference", "raw", "--reps", "1", "--seeds", "30"]
    )
    binary, cont = power_cli.pilot_tables(agent_runs.trials, args)
    assert set(binary["strategy"]) == {AGENT} and sorted(binary["arm"]) == sorted(ARMS)
    assert set(cont["strategy"]) == {AGENT}
    args = power_cli.parser().parse_args(
        ["--pilot", STUDY, "--reference", AGENT, "--reps", "1", "--seeds", "30"]
    )
    # the agent as reference
    assert set(power_cli.pilot_tables(agent_runs.trials, args)[0]["strategy"]) == {"raw"}


def test_the_report_shows_the_agent_beside_the_strategies(agent_study, agent_runs, tmp_path):
    from analysis.report import build as report

    r = report.generate(
        f"sqlite:///{agent_study}/mlflow.db",
        "ctxbench",
        STUDY,
        tmp_path / "report",
        runs=agent_runs,
        log_mlflow=False,
    )
    assert r is not None
    text = "\n".join(
        p.read_text(errors="replace")
        for p in (tmp_path / "report").rglob("*")
        if p.suffix in (".md", ".html", ".csv")
    )
    assert text.count(AGENT) >= len(ARMS) and "raw" in text
    # an agent is no strategy: the level column is headed `level` (conf/level/'s key), in the tables
    # and the words around them; the CSVs keep their machine key
    index = (tmp_path / "report" / "index.md").read_text()
    assert (
        "| level | arm |" in index and "| strategy |" not in index and "### Level × arm interaction" in index
    )
    assert "against level `raw` within each arm" in index and "2 levels × 2 arms" in index
    assert "strategy" in (tmp_path / "report" / "tables" / "success.csv").read_text().splitlines()[0]


def test_the_report_and_the_power_planner_say_level_when_an_agent_plays(agent_study, capsys, tmp_path):
    from analysis.power import __main__ as power_cli
    from analysis.report import __main__ as report_cli

    uri = f"tracking.uri=sqlite:///{agent_study}/mlflow.db"
    assert power_cli.main(["--pilot", STUDY, "--reference", "raw", "--reps", "1", "--seeds", "30", uri]) == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.lstrip().startswith("arm"))
    assert header.split()[:2] == ["arm", "level"] and "strategy" not in header
    assert (
        report_cli.main([f"study.name={STUDY}", uri, f"report.dir={tmp_path / 'r'}", "report.mlflow=false"])
        == 0
    )
    assert (
        f"analysis.report: {2 * len(ARMS) * len(SEEDS)} trials (2 levels × 2 arms)" in capsys.readouterr().out
    )


def test_the_diff_page_pairs_an_agents_trial_with_its_own_baseline_twin(agent_study, tmp_path, capsys):
    from analysis.diff import __main__ as diff

    logs = sorted((agent_study / "trials").glob("*/events.jsonl"))
    ours = [diff.resolve(str(p.parent), None) for p in logs]
    agent_drift = next(t for t in ours if t.meta["strategy"] == AGENT and t.meta["arm"] == "drift")
    twin = diff.find_twin(agent_drift, "baseline", None)
    assert (twin.meta["strategy"], twin.meta["arm"]) == (AGENT, "baseline")
    assert str(twin.meta["task_seed"]) == str(agent_drift.meta["task_seed"])
    page = tmp_path / f"{uuid.uuid4().hex[:6]}.html"
    assert diff.main([agent_drift.meta["_dir"], "-o", str(page)]) == 0
    assert AGENT in page.read_text() and "its baseline twin" in page.read_text()
