"""Secrets never leave the process: one rule for what is secret and how it is blanked.

A value is secret when the key it sits under has a secret-like name (api_key, authorization,
password, secret, auth_token; `api_key_env`, which only names a variable, is not), or when
it equals an environment variable named *_API_KEY, *_TOKEN, *_SECRET or *_PASSWORD, or a
value handed to `register` (the HTTP providers register their key). MLflow params, trace
spans and provider error messages all pass through `scrub` (docs/design.md §9).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

REDACTED = "[REDACTED]"
# Shorter values are not treated as secrets: blanking every "test" or "dev" in a log would
# destroy the log without protecting anything.
MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(r"(^|[_\-.])(api[_\-]?key|authorization|password|secret|auth[_\-]?token)$", re.I)
_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$")
_registered: set[str] = set()


def is_secret_name(key: str) -> bool:
    """`key` (a plain or dotted name) holds a secret by its name alone."""
    return bool(_SECRET_NAME.search(key))


def register(value: str | None) -> None:
    """Treat `value` as a secret in this process from now on."""
    if value and len(value) >= MIN_SECRET_CHARS:
        _registered.add(value)


def known() -> list[str]:
    """The secret values to blank: the environment's and the registered ones, longest first."""
    env = [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= MIN_SECRET_CHARS]
    return sorted(set(env) | _registered, key=len, reverse=True)


def scrub(obj: Any, secrets: Sequence[str] | None = None) -> Any:
    """`obj` with secret-named fields and secret values replaced by REDACTED (mappings become
    dicts, sequences lists)."""
    secrets = known() if secrets is None else secrets
    if isinstance(obj, Mapping):
        return {str(k): REDACTED if is_secret_name(str(k)) else scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [scrub(v, secrets) for v in obj]
    if isinstance(obj, str):
        for s in secrets:
            obj = obj.replace(s, REDACTED)
        return obj
    return obj
