"""Per-trial measures from the event log alone: recovery, stale edits, invariant recall, and the
sim's own expected success. Built on hand-written logs so each rule can be attacked."""

from __future__ import annotations

from bench.core.render import content_sha, file_block
from bench.eventlog.measures import stale_edits, step_curves, trial_measures

A, B = "pkg/a.py", "pkg/b.py"
OLD, NEW, MINE = "x = 1\n", "x = 1\ny = 2\n", "x = 3\n"


class Log:
    """A tiny event-log writer with the harness's record shapes."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.turn = 0

    def add(self, kind: str, **fields) -> None:
        self.records.append({"seq": len(self.records), "turn": self.turn, "kind": kind, **fields})

    def context(self, *messages: dict) -> None:
        shas = []
        for m in messages:
            sha = f"m{len(self.records)}"
            self.add("message", sha=sha, message=m)
            shas.append(sha)
        self.add("context", purpose="turn", messages=shas)

    def call(self, cid: str, name: str, ok: bool = True, output: str = "", **args) -> None:
        self.add("tool_call", call_id=cid, name=name, args=args)
        self.add("tool_result", call_id=cid, name=name, ok=ok, output=output[-4000:])

    def check(self, step: str, code: int) -> None:
        self.add("check", step=step, exit_code=code, timed_out=False)
        self.turn += 1


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def tool(cid: str, text: str) -> dict:
    return {"role": "tool", "content": text, "tool_call_id": cid}


def test_first_attempt_recovery_and_turns_to_recover():
    log = Log()
    log.check("s01", 0)
    log.check("s02", 1)
    log.turn += 2
    log.check("s02", 1)
    log.check("s02", 0)  # recovered: first failure at turn 1, pass at turn 5
    log.check("s03", 1)  # never recovered
    log.add("check", step="final", exit_code=1, timed_out=False)  # the acceptance is not a step
    m = trial_measures(log.records)
    assert m["first_attempt_passes"] == 1 and m["first_attempt_pass_rate"] == 1 / 3
    assert m["recovered_failures"] == 1 and m["turns_to_recover"] == 4
    assert "trap_hazard" not in m  # no model logged its decisions


def test_a_timed_out_check_is_no_pass():
    log = Log()
    log.add("check", step="s01", exit_code=0, timed_out=True)
    assert trial_measures(log.records)["first_attempt_passes"] == 0


def test_edit_from_a_copy_older_than_the_file_is_stale():
    log = Log()
    log.add("step_start", files=[[A, OLD]])
    log.context(user(file_block(A, OLD)))
    log.add("drift", files=[A], shas={A: content_sha(NEW)})  # the file moves under the model
    log.add("step_start", files=[])
    log.context(user(file_block(A, OLD)))  # ... which still holds the old copy
    log.call("c1", "write_file", path=A, content=MINE)
    assert stale_edits(log.records) == 1


def test_edit_from_the_current_copy_is_not_stale_and_a_reply_is_judged_once_per_file():
    log = Log()
    log.add("step_start", files=[[A, OLD]])
    log.context(user(file_block(A, OLD)))
    log.call("c1", "edit_file", path=A, search="x = 1", replace="x = 2")
    log.call("c2", "edit_file", path=A, search="x = 2", replace="x = 3")  # builds on c1
    assert stale_edits(log.records) == 0


def test_after_a_fresh_read_the_edit_is_not_stale_and_unknown_content_is_not_judged():
    log = Log()
    log.context(user(file_block(A, OLD)))
    log.add("drift", files=[A], shas={A: content_sha(NEW)})
    log.call("r1", "read_file", path=A, output=file_block(A, NEW))
    log.context(user(file_block(A, OLD)), tool("r1", file_block(A, NEW)))  # the read is newer
    log.call("c1", "edit_file", path=A, search="y = 2", replace="y = 3")
    log.context(tool("c1", "edited " + A + "\n" + file_block(A, "x = 1\ny = 3\n")))
    log.call("c2", "write_file", path=B, content="b\n")  # never seen, never known: not judged
    assert stale_edits(log.records) == 0


def test_an_edit_result_shown_only_after_a_drift_does_not_hide_the_drift():
    """The tool message of the last edit of a step reaches the log after the next step's drift:
    it must not overwrite what the drift made the file."""
    log = Log()
    log.add("step_start", files=[[A, OLD]])
    log.context(user(file_block(A, OLD)))
    log.call("c1", "edit_file", path=A, search="x = 1", replace="x = 3")
    log.add("drift", files=[A], shas={A: content_sha(NEW)})
    log.context(tool("c1", "edited " + A + "\n" + file_block(A, MINE)))  # logged now, from before
    log.call("c2", "write_file", path=A, content="z = 0\n")
    assert stale_edits(log.records) == 1


def _recall_log(*contexts: str) -> list[dict]:
    log = Log()
    for i, text in enumerate(contexts):
        log.add(
            "step_start",
            step=f"s0{i + 1}",
            invariants=[["a", ["_send"]], ["b", ["legacy form", "fetch"]], ["c", []]],
        )
        log.context(user(text))
        log.turn += 1
    return log.records


def test_invariant_recall_counts_statements_with_a_keep_cue_and_every_anchor():
    both = "[inv:a] _send stays a module-level function.\nfetch keeps accepting the legacy form until s12."
    one = "_send stays a module-level function. The legacy form of fetch is gone."  # no keep cue for b
    none = '<file path="x.py" sha="0">\n_send stays\n</file>'  # file bodies do not state anything
    records = _recall_log(both, one, none)
    m = trial_measures(records)
    assert abs(m["invariant_recall"] - (1.0 + 0.5 + 0.0) / 3) < 1e-9
    rows = step_curves(records, [{} for _ in range(3)])
    assert [r["step_invariant_recall"] for r in rows] == [1.0, 0.5, 0.0]


def test_a_restatement_in_the_models_own_hand_off_counts():
    log = Log()
    log.add("step_start", invariants=[["a", ["_send"]]])
    log.context(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "s",
                    "name": "submit_step",
                    "args": {"notes": "s01 done. For later steps: _send must not go."},
                }
            ],
        }
    )
    assert trial_measures(log.records)["invariant_recall"] == 1.0


def test_trap_hazard_sums_the_chances_while_at_risk():
    log = Log()
    d1 = {"step": "s02", "attempt": 0, "key": "k1", "q": 0.5, "p_tempt": 0.5, "done": False}
    d2 = {"step": "s05", "attempt": 0, "key": "k2", "q": 0.0, "p_tempt": 0.5, "done": True}
    d3 = {
        "step": "s06",
        "attempt": 0,
        "key": "k3",
        "q": 0.0,
        "p_tempt": 0.5,
        "done": False,
    }  # after the trap sprang
    log.add("model_call", decisions=[d1])
    log.add("model_call", decisions=[d1, d2])  # a redo of the same decision counts once
    log.add("model_call", decisions=[])
    log.add("model_call", decisions=[d3])
    m = trial_measures(log.records)
    assert abs(m["trap_hazard"] - (0.25 + 0.5)) < 1e-12
    assert m["tidy_ups"] == 1 and m["tidy_up_chances"] == 3


def test_one_minus_the_mean_hazard_is_unbiased_where_the_product_is_not():
    """Two decisions at p = 1/2 each: success 1/4. A trial that springs the first trap stops
    there, so the mean of per-trial products says 3/8; 1 - mean hazard says 1/4."""
    import itertools

    trials = []
    for first, second in itertools.product((True, False), repeat=2):  # equally likely draws
        log = Log()
        log.add(
            "model_call",
            decisions=[{"step": "s1", "attempt": 0, "key": "a", "q": 0.0, "p_tempt": 0.5, "done": first}],
        )
        if not first:
            log.add(
                "model_call",
                decisions=[
                    {"step": "s2", "attempt": 0, "key": "b", "q": 0.0, "p_tempt": 0.5, "done": second}
                ],
            )
        trials.append(trial_measures(log.records)["trap_hazard"])
    assert 1 - sum(trials) / len(trials) == 0.25
