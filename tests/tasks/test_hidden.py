"""The hidden checks (tasks/common/hidden.py): a pure function of the seed, never in the
repository, with inputs the repository does not hold; the oracle's final tree passes them in
every family, with and without drift, and the base repository (the work not done) fails them."""

from __future__ import annotations

import re

import pytest

from tasks import FAMILIES, fresh, generate
from tasks.common.hidden import HIDDEN_CHECK, HIDDEN_PATH
from tests.helpers.task_replay import replay, run_check, write_repo


@pytest.mark.parametrize("family", FAMILIES)
def test_hidden_checks_are_the_seeds_and_not_in_the_repository(family):
    spec = generate(family, 3)
    assert spec.hidden == fresh(family, 3).hidden and spec.hidden != generate(family, 4).hidden
    assert spec.hidden_check == HIDDEN_CHECK and [p for p, _ in spec.hidden] == [HIDDEN_PATH]
    assert HIDDEN_PATH not in dict(spec.files) and all(HIDDEN_PATH not in c for _, c in spec.files)
    text = spec.hidden[0][1]
    everything = "\n".join(c for _, c in spec.files) + "".join(
        c or "" for d in spec.drift for _, c in d.files
    )
    literals = set(re.findall(r"'([^'\n]{5,})'", text)) | set(re.findall(r"\b\d{4,}\b", text))
    held_out = [x for x in literals if x not in everything]
    assert held_out, "the hidden checks use inputs of the repository only"


@pytest.mark.parametrize("drift", [False, True])
@pytest.mark.parametrize("family", FAMILIES)
def test_the_oracles_final_tree_passes_the_hidden_checks(family, drift, tmp_path):
    for seed in range(3):
        spec = generate(family, seed)
        root = tmp_path / f"{seed}"
        *_, (_, _, _, _, code, out, files) = replay(spec, root, drift)
        assert code == 0, out[-2000:]
        write_repo(root, {**files, **dict(spec.hidden)})
        code, out = run_check(root, spec.hidden_check)
        assert code == 0 and "0 failed" in out, (spec.task_id, drift, out[-3000:])


@pytest.mark.parametrize("family", FAMILIES)
def test_the_base_repository_fails_the_hidden_checks(family, tmp_path):
    spec = generate(family, 1)
    write_repo(tmp_path, {**dict(spec.files), **dict(spec.hidden)})
    code, out = run_check(tmp_path, spec.hidden_check)
    assert code != 0, out[-2000:]
