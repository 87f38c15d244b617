"""The annexes' tests use the trial tests' host fixtures (tests/bench/trial/conftest.py)."""

from tests.bench.trial.conftest import local_cfg as local_cfg  # noqa: F401
