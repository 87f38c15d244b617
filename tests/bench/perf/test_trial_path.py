"""bench.perf.trial_path: the figures issue 40 asks for, counted on a short local trial."""

import re

from bench.perf import trial_path


def test_room_of_names_the_folder_two_deep_or_the_top_level_file():
    assert trial_path.room_of("bench/trial/loop.py") == "bench/trial"
    assert trial_path.room_of("ctxlog/events.py") == "ctxlog/events.py"


def test_a_short_trial_prints_every_figure_and_not_the_counter_itself(capsys):
    trial_path.main(["sandbox=local", "task.size.steps=6"])
    out = capsys.readouterr().out
    found = re.search(r"modules on the path: (\d+), lines: (\d+), statements: (\d+)", out)
    modules, lines, statements = map(int, found.groups())
    assert 0 < statements < lines
    rooms = [tuple(map(int, m)) for m in re.findall(r"^  \S+: (\d+) modules, (\d+) lines$", out, re.M)]
    assert (sum(c for c, _ in rooms), sum(n for _, n in rooms)) == (modules, lines)
    assert "bench/perf" not in out
    assert re.search(r"builds: task 1, strategy 1, provider 1", out)
    assert re.search(r"config compositions: 2 ", out)


def test_statements_do_not_move_when_a_call_is_split_over_lines(tmp_path):
    packed, split = tmp_path / "packed.py", tmp_path / "split.py"
    packed.write_text("x = f(1, 2)\nif x:\n    y = 1\n")
    split.write_text("x = f(\n    1,\n    2,\n)\nif x:\n    y = 1\n")
    assert trial_path.statement_count(packed) == trial_path.statement_count(split) == 3
