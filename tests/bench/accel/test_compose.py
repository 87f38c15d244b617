"""The sweep's fast composition (bench/accel/compose.py): each job's config is exactly what
Hydra composes for it, and a worker that reads the bases the launching process shared composes
none of them itself."""

from __future__ import annotations

import pickle

import pytest
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf, open_dict

from bench.accel import compose
from bench.accel.compose import SweepLoader
from bench.study.plan import sweep_config

# Jobs as the grid's sweeper makes them: its swept keys, then the command line's overrides.
CLI = ["experiment=grid", "study.name=compose-test"]
JOBS = [
    [f"strategy={s}", f"arm={a}", f"task={t}", f"task.seed={seed}", "rep=0", *CLI]
    for s, a, t, seed in [
        ("raw", "baseline", "signature_migration", 0),
        ("ledger", "drift", "config_rename", 7),
        ("ledger", "drift", "config_rename", 8),
        ("subagent", "drift_compaction", "extract_module", 3),
        ("compaction", "compaction", "extract_module", 99),
    ]
]


@pytest.fixture
def fresh_cache(monkeypatch):
    """A process that has composed nothing yet (a new worker)."""
    monkeypatch.setattr(compose, "_BASES", {})
    monkeypatch.setattr(compose, "_PICKLED", {})
    monkeypatch.setattr(compose, "_READ", set())


def _as_dict(cfg):
    """The config's values and the flags a trial's code meets (struct, readonly) at the root and
    at each top-level node."""
    flags = {
        k: (OmegaConf.is_struct(cfg[k]), OmegaConf.is_readonly(cfg[k]))
        for k in cfg
        if OmegaConf.is_config(cfg[k])
    }
    return (
        OmegaConf.to_container(cfg, resolve=False),
        OmegaConf.is_struct(cfg),
        OmegaConf.is_readonly(cfg),
        flags,
    )


class CountingLoader:
    """Hydra's loader, counting the compositions it is asked for."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def load_sweep_config(self, master, overrides):
        self.calls += 1
        return self.inner.load_sweep_config(master, overrides)


def test_each_job_is_what_hydra_composes_for_it(fresh_cache):
    with sweep_config(CLI) as master:
        hydra_loader = CountingLoader(GlobalHydra.instance().config_loader())
        fast = SweepLoader(hydra_loader)
        for job in JOBS:
            assert _as_dict(fast.load_sweep_config(master, job)) == _as_dict(
                hydra_loader.inner.load_sweep_config(master, job)
            )
        assert hydra_loader.calls == 4  # seeds 7 and 8 of one cell share a base


def test_a_worker_reads_the_shared_bases_and_composes_none(fresh_cache, tmp_path):
    with sweep_config(CLI) as master:
        inner = GlobalHydra.instance().config_loader()
        launching = SweepLoader(inner)
        launching.validate(master, JOBS)
        launching.share(tmp_path / "bases.pkl")
        expected = [_as_dict(launching.load_sweep_config(master, job)) for job in JOBS]

        worker_copy = pickle.loads(pickle.dumps(launching))  # what the launcher sends a worker
        compose._BASES.clear()
        compose._PICKLED.clear()
        counting = CountingLoader(inner)
        worker_copy.inner = counting
        assert [_as_dict(worker_copy.load_sweep_config(master, job)) for job in JOBS] == expected
        assert counting.calls == 0


def test_a_worker_without_the_shared_file_composes_for_itself(fresh_cache, tmp_path):
    with sweep_config(CLI) as master:
        counting = CountingLoader(GlobalHydra.instance().config_loader())
        worker = SweepLoader(counting)
        worker.shared = str(tmp_path / "on-another-node.pkl")
        (tmp_path / "broken.pkl").write_bytes(b"not a pickle")
        assert worker.load_sweep_config(master, JOBS[0]).strategy.name == "raw"
        worker.shared = str(tmp_path / "broken.pkl")
        assert worker.load_sweep_config(master, JOBS[1]).strategy.name == "ledger"
        assert counting.calls == 2


def test_a_job_changing_its_config_leaves_the_next_jobs_alone(fresh_cache):
    with sweep_config(CLI) as master:
        fast = SweepLoader(GlobalHydra.instance().config_loader())
        first = fast.load_sweep_config(master, JOBS[1])
        expected = _as_dict(fast.load_sweep_config(master, JOBS[2]))
        with open_dict(first):
            first.strategy.name = "changed by the job"
            first.task.extra = 1
        assert _as_dict(fast.load_sweep_config(master, JOBS[2])) == expected
