"""End to end on the host: every generated repository passes its base checks, and the oracle
(true files, every fact recalled) certifies every step and the final acceptance, with and
without drift. Checks run in-process (tests/helpers/task_replay.py); a few run through the real
pytest in a subprocess too, and the two must agree."""

from __future__ import annotations

import fnmatch
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tasks import FAMILIES, generate
from tests.helpers.task_replay import replay, run_check, run_check_subprocess, write_repo


def _base(spec, root: Path, runner) -> list[tuple[str, int, str]]:
    write_repo(root, dict(spec.files))
    cmds = [spec.test_command] + [i.check for i in spec.invariants if i.check]
    return [(cmd, *runner(root, cmd)) for cmd in dict.fromkeys(cmds)]


@pytest.mark.parametrize("seeds", [range(4), pytest.param(range(4, 30), marks=pytest.mark.slow)])
@pytest.mark.parametrize("family", FAMILIES)
def test_base_repository_passes_its_checks_real_pytest(family, seeds, tmp_path):
    """The real pytest (`sys.executable -m pytest`) on the host, several seeds in parallel."""

    def run(seed):
        return seed, _base(generate(family, seed), tmp_path / str(seed), run_check_subprocess)

    with ThreadPoolExecutor(4) as pool:
        for seed, results in pool.map(run, seeds):
            for cmd, code, out in results:
                assert code == 0, (seed, cmd, out[-2000:])
                assert " passed" in out or cmd != generate(family, seed).test_command


@pytest.mark.parametrize("family", FAMILIES)
def test_base_repository_passes_its_checks_many_seeds(family, tmp_path):
    for seed in range(25):
        for cmd, code, out in _base(generate(family, seed), tmp_path / str(seed), run_check):
            assert code == 0, (seed, cmd, out[-2000:])


def _replay_ok(family: str, seed: int, drift: bool, root: Path, **size) -> None:
    spec = generate(family, seed, **size)
    for step, plan, _done, errors, code, out, files in replay(spec, root, drift):
        label = f"{spec.task_id} drift={drift} {getattr(step, 'id', step)}"
        assert not errors, (label, errors)
        assert code == 0, (label, out[-3000:])
        if step != "final":
            assert all(p in files for p in step.touches), label
            for edit in plan.edits:  # the engineer never writes where the harness would refuse
                assert not any(fnmatch.fnmatch(edit.path, g) for g in spec.protected), (label, edit.path)


@pytest.mark.parametrize("drift", [False, True])
@pytest.mark.parametrize("family", FAMILIES)
def test_oracle_replay(family, drift, tmp_path):
    for seed in range(5):
        _replay_ok(family, seed, drift, tmp_path / str(seed))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("size", [{"steps": 6}, {"steps": 16, "callers": 30, "filler": 0}, {"callers": 40}])
def test_oracle_replay_other_sizes(family, size, tmp_path):
    for drift in (False, True):
        _replay_ok(family, 7, drift, tmp_path / str(drift), **size)


@pytest.mark.slow
@pytest.mark.parametrize("drift", [False, True])
@pytest.mark.parametrize("family", FAMILIES)
def test_oracle_replay_50_seeds(family, drift, tmp_path):
    for seed in range(50):
        _replay_ok(family, seed, drift, tmp_path / str(seed))


def _agree(family: str, seed: int, steps: set[str] | None, root: Path) -> None:
    spec = generate(family, seed)
    jobs = []
    for step, _plan, _done, _errors, code, _out, files in replay(spec, root, True):
        sid = getattr(step, "id", step)
        if steps is None or sid in steps:
            cmd = spec.final_check if sid == "final" else step.check
            snapshot = root.parent / f"{root.name}-{sid}"
            write_repo(snapshot, dict(files))
            jobs.append((sid, cmd, snapshot, code))
    with ThreadPoolExecutor(4) as pool:
        real = list(pool.map(lambda j: run_check_subprocess(j[2], j[1]), jobs))
    for (sid, _cmd, _root, fast), (code, out) in zip(jobs, real, strict=True):
        assert (fast == 0) == (code == 0), (family, sid, out[-2000:])


@pytest.mark.parametrize("family", FAMILIES)
def test_in_process_checks_agree_with_real_pytest(family, tmp_path):
    spec = generate(family, 0)
    _agree(family, 0, {"s01", "s02", spec.traps[0].caught_by, "final"}, tmp_path / "r")


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_in_process_checks_agree_with_real_pytest_every_step(family, tmp_path):
    _agree(family, 1, None, tmp_path / "r")
