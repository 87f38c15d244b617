"""Fixtures shared by every test package live in tests/helpers/fixtures.py; importing them here
makes pytest offer them everywhere. Builders (tasks, worlds, configs) are plain functions in
tests/helpers/ that tests import."""

import time

from tests.helpers.browser import report_screenshots
from tests.helpers.fixtures import api_keys, docker_ready, environment_restored, sandbox_cfg

__all__ = ["api_keys", "docker_ready", "environment_restored", "sandbox_cfg"]
_STARTED = time.time()


def pytest_terminal_summary(terminalreporter):
    report_screenshots(terminalreporter, _STARTED)
