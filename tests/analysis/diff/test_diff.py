"""The side-by-side diff: divergence and attribution on constructed logs, the page's
self-containment and tolerance, the missing twin, and the report's pages in MLflow."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis.diff import __main__ as diff
from analysis.diff import mismatch
from analysis.diff.html import page
from analysis.diff.trajectory import Trajectory, facts
from ctxlog import events as ev

REPO = Path(__file__).resolve().parents[3]
SYSTEM = "You are a careful software engineer."
TASK = (
    "[task:signature_migration/4]\n[inv:shim] fetch(url, *legacy) stays until s08\n"
    "[inv:order] policy fields keep their order"
)


def file_block(path: str, content: str) -> str:
    sha = hashlib.sha256(content.encode()).hexdigest()[:12]
    return f'<file path="{path}" sha="{sha}">\n{content}</file>'


class Log:
    """An event log in the harness's format: messages stored once, contexts as sha lists."""

    def __init__(self, arm: str = "compaction", **start):
        self.events: list[dict] = []
        self.known: set[str] = set()
        self.add(
            0,
            "trial_start",
            strategy="compaction",
            arm=arm,
            task_id="signature_migration/4",
            rep=0,
            model="sim",
            **start,
        )

    def add(self, turn: int, kind: str, **fields) -> dict:
        e = {
            "seq": len(self.events),
            "turn": turn,
            "kind": kind,
            "prev": "",
            **fields,
            "t": {"ts": 1e9 + len(self.events)},
        }
        self.events.append(e)
        return e

    def turn(self, t: int, context: list[str], calls: list[tuple[str, dict, str]], tokens: int | None = None):
        shas = []
        for content in context:
            msg = {"role": "user", "content": content}
            sha = hashlib.sha256(json.dumps(msg, sort_keys=True).encode()).hexdigest()
            if sha not in self.known:
                self.add(t, "message", sha=sha, message=msg)
                self.known.add(sha)
            shas.append(sha)
        self.add(
            t,
            "context",
            purpose="turn",
            messages=shas,
            sha="x",
            tokens=tokens or 500 * len(context),
            stable=1,
        )
        self.add(t, "model_call", purpose="turn", content=f"turn {t}", stop_reason="tool_use", usage={})
        for i, (name, args, output) in enumerate(calls):
            self.add(t, "tool_call", call_id=f"c{t}-{i}-{id(self)}", name=name, args=args)
            self.add(t, "tool_result", call_id=f"c{t}-{i}-{id(self)}", name=name, ok=True, output=output)

    def end(self, turn: int, success: bool, reason: str = "") -> Log:
        self.add(
            turn,
            "trial_end",
            success=success,
            status="success" if success else "failure",
            failure_reason=reason,
            steps_passed=3,
            final_tree_sha="tree-" + str(success),
        )
        return self

    def traj(self, label: str, **meta) -> Trajectory:
        text = "\n".join(json.dumps(e) for e in self.events) + "\n"
        return Trajectory.from_text(text, label, meta)


V1, V2 = (
    file_block("src/api.py", "def fetch(url, *legacy):\n    pass\n"),
    file_block("src/api.py", "def fetch(url):\n"),
)


def pair(drift_in_a: bool = False) -> tuple[Trajectory, Trajectory]:
    """A compacts at turn 3 (its summary drops [inv:shim]) and removes the shim at turn 5;
    B keeps the whole transcript and reads on."""
    a, b = Log("compaction"), Log("baseline")
    same = [("read_file", {"path": "src/api.py"}, V1)]
    for t in range(3):
        for log in (a, b):
            log.turn(t, [SYSTEM, TASK, V1], same)
    a.add(
        3,
        "compaction",
        tokens_before=9000,
        tokens_after=3000,
        summary="SUMMARY:\n[inv:order] policy fields keep their order",
        usage={},
    )
    if drift_in_a:
        a.add(
            4,
            "drift",
            drift_id="d1",
            drift_kind="edit_read_file",
            commit="c0ffee",
            message="tidy api",
            author="Outside <o@x>",
            files=["src/api.py"],
        )
    summary = [SYSTEM, "SUMMARY:\n[inv:order] policy fields keep their order", V2 if drift_in_a else V1]
    for t in (3, 4):
        a.turn(t, summary, same)
        b.turn(t, [SYSTEM, TASK, V1, f"turn {t}"], same)
    a.turn(5, summary, [("edit_file", {"path": "src/api.py", "search": "*legacy", "replace": ""}, "edited")])
    b.turn(5, [SYSTEM, TASK, V1, "turn 5"], [("read_file", {"path": "src/callers.py"}, "x")])
    return a.end(6, False, "step_failed").traj("A"), b.end(6, True).traj("B")


def test_divergent_turn_attributed_to_the_compaction_and_the_lost_invariant_named():
    a, b = pair()
    d = diff.compare(a, b, "baseline")
    assert d.diverged_at == 5
    assert d.attribution == {"trigger": "compaction", "trigger_turn": 3, "trigger_in": "a", "lag_turns": 2}
    compaction = a.log.first(ev.Compaction)
    assert compaction is not None and d.trigger_seqs == {"a": {compaction.seq}}
    assert d.only_in is not None
    assert set(d.only_in["b"]) == {"inv:shim"} and d.only_in["a"] == {}
    html = page(d)
    row = re.search(r'<div class="([^"]*)" id="turn-5">', html)
    assert row and "div" in row.group(1).split()
    assert re.search(r'<div class="ev trigger warn" data-kind="compaction"', html)
    assert html.count('class="ev trigger') == 1
    assert "9,000 → 3,000 tokens" in html and "SUMMARY:\n[inv:order]" in html
    assert "step_failed" in html and '<a href="#turn-5"><b>turn 5</b></a>' in html


def test_drift_after_the_compaction_is_the_nearer_trigger_and_file_versions_differ():
    a, b = pair(drift_in_a=True)
    d = diff.compare(a, b, "baseline")
    assert (d.diverged_at, d.attribution["trigger"], d.attribution["trigger_turn"]) == (5, "drift", 4)
    sha = lambda block: re.search(r'sha="(\w+)"', block).group(1)  # noqa: E731
    assert set(d.only_in["a"]) == {f"file:src/api.py@{sha(V2)}"}
    assert set(d.only_in["b"]) == {"inv:shim", f"file:src/api.py@{sha(V1)}"}
    html = page(d)
    assert f"B sees @{sha(V1)}" in html and "c0ffee" in html
    assert re.search(r'<div class="ev trigger warn" data-kind="drift"', html)


def test_the_page_agrees_with_the_report_attribution_on_the_harness_logs(harness_trials):
    _, dirs = harness_trials
    for (arm, rep), trial in dirs.items():
        if arm == "baseline":
            continue
        a, b = diff.resolve(str(trial), None), diff.resolve(str(dirs[("baseline", rep)]), None)
        d = diff.compare(a, b, "baseline")
        assert {"diverged_at": d.diverged_at, **d.attribution} == mismatch.compare_logs(a.log, b.log)
    # The same logs without their message and context records (an older or torn log): the page
    # still attributes, and says the contexts cannot be rebuilt instead of showing facts.
    bare = [[r for r in t.log.records() if r["kind"] not in ("message", "context")] for t in (a, b)]
    d = diff.compare(Trajectory("A", bare[0]), Trajectory("B", bare[1]))
    assert {"diverged_at": d.diverged_at, **d.attribution} == mismatch.compare_logs(*bare)
    assert d.only_in is None and "cannot be rebuilt" in page(d)


class Tags(HTMLParser):
    """Every element of a page and every attribute that could fetch or navigate elsewhere."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.names.append(tag)
        for k, v in attrs:
            if k in ("src", "srcset", "data", "action", "poster") or (
                k == "href" and not (v or "").startswith("#")
            ):
                self.refs.append((tag, k, v or ""))


HOSTILE = (
    '<script src="https://evil.example/x.js"></script><img src=http://x/y.png>'
    '<style>@import url(https://x/y.css)</style><link rel=stylesheet href="//cdn/x.css">'
)


def test_page_has_no_external_reference_even_when_outputs_quote_urls_and_markup():
    a, b = pair()
    events = a.log.records()
    for e in events:  # a hostile agent echoes markup and URLs into what the page shows
        if e["kind"] in ("tool_result", "model_call"):
            e["output" if e["kind"] == "tool_result" else "content"] = HOSTILE * 3
    html = page(diff.compare(Trajectory("A", events), b))
    assert "://" not in html
    tags = Tags()
    tags.feed(html)
    assert not tags.refs, tags.refs  # no src= at all, every href an in-page anchor
    assert set(tags.names).isdisjoint({"link", "img", "iframe", "object", "embed", "base", "frame"})
    assert tags.names.count("script") == 1 and tags.names.count("style") == 1
    style = html[html.index("<style>") : html.index("</style>")]
    assert "@import" not in style and "url(" not in style
    assert "&lt;script src=" in html  # shown as text


def test_unknown_kinds_missing_fields_and_a_torn_last_line_do_not_crash():
    a, b = pair()
    text = "\n".join(json.dumps(e) for e in a.log.records())
    text += '\n{"seq": 999, "turn": 5, "kind": "check_cache_hit", "key": "abc", "tokens_saved": 120}'
    text += '\n{"seq": 1000, "turn": 5, "kind": "policy_violation"}\n{"seq": 1001, "turn": 5, "kind": "compaction"}'
    text += '\n{"seq": 1002, "turn": "x", "kind": "drift"}\n{"seq": 1003, "kind": "tool_call"}\n{"seq": 10'
    t = Trajectory.from_text(text, "A")
    assert t.unreadable == 1
    html = page(diff.compare(t, b))
    assert 'data-kind="check_cache_hit"' in html and "tokens_saved=120" in html
    assert "1 unreadable line(s) skipped" in html and "policy violation" in html
    empty = Trajectory.from_text("", "empty")
    assert "unfinished" in page(diff.compare(empty, b))


def test_long_trials_collapse_outputs_and_stay_small():
    a, b = Log("compaction"), Log("baseline")
    big = "x = 1\n" * 2000
    for t in range(300):
        for log, tag in ((a, "a" if t >= 150 else ""), (b, "")):
            log.turn(
                t,
                [SYSTEM, TASK, f"turn {t // 10}"],
                [("run", {"cmd": f"pytest -q {tag}"}, big), ("read_file", {"path": "src/api.py"}, big)],
            )
    html = page(diff.compare(a.end(300, False).traj("A"), b.end(300, True).traj("B")))
    assert len(html.encode()) < 5_000_000
    assert html.count("characters not shown") == 4 * 300 and big not in html


def write_trial(root: Path, name: str, arm: str, traj: Trajectory) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "events.jsonl").write_text("\n".join(json.dumps(e) for e in traj.log.records()) + "\n")
    (d / "config.yaml").write_text(
        f"strategy:\n  name: compaction\narm:\n  name: {arm}\ntask:\n  family: "
        f"signature_migration\n  seed: 4\nmodel:\n  name: sim\nrep: 0\nstudy:\n  name: s\n"
    )
    return d


def test_cli_finds_the_baseline_twin_beside_a_trial_directory(tmp_path, capsys):
    a, b = pair()
    arm = write_trial(tmp_path / "trials", "aaa", "compaction", a)
    write_trial(tmp_path / "trials", "bbb", "baseline", b)
    out = tmp_path / "page.html"
    assert diff.main([str(arm), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "diverged at turn 5 (trigger: compaction at turn 3 in A, lag 2)" in printed
    assert "bbb" in out.read_text() and "its baseline twin" in out.read_text()


def test_missing_twin_is_one_clear_line_and_exit_2(tmp_path, capsys):
    a, _ = pair()
    arm = write_trial(tmp_path / "trials", "aaa", "compaction", a)
    assert diff.main([str(arm / "events.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("analysis.diff: no baseline twin for aaa (")
    assert "arm=baseline" in err and "give B explicitly" in err
    assert diff.main([str(tmp_path / "nope.jsonl")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_missing_twin_in_mlflow(study, capsys):
    lonely = study.run_ids[("raw", "drift_compaction", 1, study.reps, "FAILED")]  # rep 2 has no baseline run
    assert diff.main([lonely, "--tracking-uri", study.uri]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no baseline twin" in err and "rep=2" in err


def test_run_id_with_rep_twin(study, tmp_path, capsys):
    run = study.run_ids[("raw", "drift_compaction", 0, 0, "FINISHED")]
    out = tmp_path / "rep.html"
    assert diff.main([run, "--rep-twin", "--tracking-uri", study.uri, "-o", str(out)]) == 0
    html = out.read_text()
    assert "another rep of the same cell" in html and "rep1" in html


@pytest.fixture(scope="module")
def report_with_pages(study, runs, tmp_path_factory):
    from analysis.report import build as report

    return report.generate(study.uri, study.experiment, study.study, tmp_path_factory.mktemp("r"), runs=runs)


def test_report_writes_links_and_logs_a_page_for_every_mismatch(report_with_pages, study):
    from mlflow import MlflowClient

    rep = report_with_pages
    across = rep.analysis.across
    mism = set(across.loc[across["outcome_differs"], "run_id"])
    assert mism and set(rep.pages.mismatch) == mism and rep.pages.logged == len(mism)
    index = (rep.out_dir / "index.md").read_text()
    client = MlflowClient(tracking_uri=study.uri)
    for run_id, rel in rep.pages.mismatch.items():
        assert f"[diff]({rel})" in index and (rep.out_dir / rel).is_file()
        assert [f.path for f in client.list_artifacts(run_id, "diff")] == ["diff/vs_baseline.html"]
        assert client.get_run(run_id).data.tags["ctxbench.diff"] == "diff/vs_baseline.html"
    other = next(iter(set(across["run_id"]) - mism))
    assert client.list_artifacts(other, "diff") == []
    # Reps of a cell get a page where their final trees differ, and only there.
    from analysis.report.pages import rep_pairs

    assert set(rep.pages.reps) == set(rep_pairs(rep.analysis.runs.trials))
    assert all((rep.out_dir / p).is_file() for p in rep.pages.reps.values())


def test_a_page_for_two_reps_whose_final_trees_differ(report_with_pages, tmp_path):
    import dataclasses

    from analysis.diff.mismatch import mlflow_event_fetcher
    from analysis.report.pages import write_pages

    a = report_with_pages.analysis
    t = a.runs.trials.copy()
    cell = t.query("strategy == 'raw' and arm == 'baseline' and task_seed == 0").sort_values("rep")
    t.loc[cell.index[0], "final_tree_sha"] = "0" * 40  # rep 0 now ends on another tree than rep 1
    changed = dataclasses.replace(a, runs=dataclasses.replace(a.runs, trials=t))
    fetch = mlflow_event_fetcher(a.runs.tracking_uri, dict(zip(t["run_id"], t["artifact_uri"], strict=True)))
    pages = write_pages(changed, tmp_path, fetch)
    pair = (cell["run_id"].iloc[0], cell["run_id"].iloc[1])
    assert pair in pages.reps and (tmp_path / pages.reps[pair]).is_file()
    assert "another rep of the same cell" in (tmp_path / pages.reps[pair]).read_text()


# -- on trials the real harness wrote -------------------------------------------------------
@pytest.fixture(scope="module")
def harness_trials(study):
    """The compaction strategy's trials on seed 0 of the study the harness wrote
    (tests/helpers/harness_study.py), by (arm, rep): two arms, two reps."""
    dirs = {}
    for log in (study.root / "trials").glob("*/events.jsonl"):
        meta = diff._dir_meta(log.parent)
        if (meta.get("study"), meta.get("strategy"), meta.get("task_seed"), meta.get("model")) == (
            study.study,
            "compaction",
            0,
            "sim",
        ) and meta["rep"] < study.reps:
            dirs[(meta["arm"], meta["rep"])] = log.parent
    assert sorted(dirs) == [(arm, rep) for arm in sorted(study.arms) for rep in range(study.reps)]
    return study.root, dirs


def test_diff_of_real_trials_from_a_directory(harness_trials, tmp_path, capsys):
    root, dirs = harness_trials
    arm, base = dirs[("drift_compaction", 0)], dirs[("baseline", 0)]
    out = tmp_path / "real.html"
    assert diff.main([str(arm), "-o", str(out)]) == 0
    a, b = diff.resolve(str(arm), None), diff.resolve(str(base), None)
    d = diff.compare(a, b, "baseline")
    expected = mismatch.compare_logs(a.log, b.log)
    assert {"diverged_at": d.diverged_at, **d.attribution} == expected
    html = out.read_text()
    assert base.name in html and "its baseline twin" in html
    for t in (a, b):
        assert f'<div class="verdict {"ok" if t.outcome["success"] else "bad"}">{t.outcome["status"]}' in html
    assert html.count("<polyline") == 2
    assert a.log.of(ev.Compaction)  # the arm's 12k window makes the strategy compact even on 6 steps
    for e in a.log.of(ev.Compaction):
        assert f"{e.tokens_before:,} → {e.tokens_after:,} tokens" in html
    # Every turn's context rebuilds from the log, and the task's standing constraints are in it.
    first = a.context_at(0)
    assert first is not None and any(k.startswith("inv:") for k in facts(first))
    assert all(a.context_at(t) is not None for t in a.context_tokens())
    assert "://" not in html


def test_diff_of_real_trials_by_run_id_and_rep_twin(harness_trials, tmp_path):
    from mlflow import MlflowClient

    root, dirs = harness_trials
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ctxbench")
    (run,) = client.search_runs(
        [exp.experiment_id],
        "tags.strategy = 'compaction' AND tags.arm = 'drift_compaction' "
        "AND tags.task_seed = '0' AND tags.rep = '0'",
    )
    out = tmp_path / "run.html"
    assert diff.main([run.info.run_id, "--tracking-uri", uri, "-o", str(out)]) == 0
    assert "compaction·baseline" in out.read_text()
    assert diff.main([run.info.run_id, "--rep-twin", "--tracking-uri", uri, "-o", str(out)]) == 0
    html = out.read_text()
    assert "another rep of the same cell" in html and "rep1" in html


def test_same_facts_on_both_sides_is_said_not_left_blank():
    a, b = Log("compaction"), Log("compaction")
    for t in range(3):
        a.turn(t, [SYSTEM, TASK, V1], [("run", {"cmd": "pytest"}, "ok")])
        b.turn(t, [SYSTEM, TASK, V1], [("run", {"cmd": "pytest" if t < 2 else "ls"}, "ok")])
    d = diff.compare(a.end(3, True).traj("A"), b.end(3, False).traj("B"), "rep")
    assert (d.diverged_at, d.attribution["trigger"], d.only_in) == (2, "none", {"a": {}, "b": {}})
    html = page(d)
    assert "hold the same standing constraints and file versions" in html and "another rep" in html
