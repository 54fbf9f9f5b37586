"""The one scrubber of secrets: every text judgebench persists or prints (reasons, judge answers
and rationales, judge-cache entries, log lines, error messages) goes through `redact`.

It replaces, wherever they appear in a text:

- the value of every environment variable whose name says it is a secret (…KEY, …TOKEN,
  …SECRET, …PASSWORD, …CREDENTIALS), and of every variable a backend was told to read a key
  from (`register_secret_env`, e.g. a judge's ``api_key_env``);
- anything shaped like a provider key or bearer token (``sk-…``, ``Bearer …``, ``hf_…``,
  GitHub and AWS access keys), known or not.
"""

from __future__ import annotations

import functools
import os
import re
import threading

MARK = "[REDACTED]"

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
#: Shapes of keys and tokens; long enough not to catch prose ("key-points", "the bearer").
_PATTERNS = (
    r"\bBearer\s+[A-Za-z0-9._~+/\-]{12,}=*",
    r"\bsk-[A-Za-z0-9_\-]{16,}",
    r"\b[spr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    r"\bhf_[A-Za-z0-9]{30,}",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
)
_MIN_SECRET_LENGTH = 8

_registered: set[str] = set()
_registered_lock = threading.Lock()


def register_secret_env(name: str) -> None:
    """Treat the value of environment variable `name` as a secret, whatever its name."""
    with _registered_lock:
        _registered.add(name)


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def secret_values() -> list[str]:
    """The secret values in use now, longest first (so a key containing another is removed
    whole). Read from the environment at every call: a key set later is known at once."""
    with _registered_lock:
        named = set(_registered)
    env = os.environ
    values = {
        value for name in list(env)
        if (name in named or _secret_name(name))
        and len(value := env.get(name, "")) >= _MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)


@functools.lru_cache(maxsize=16)
def _scrubber(values: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join([*(re.escape(v) for v in values), *_PATTERNS]))


def _replace(match: re.Match[str]) -> str:
    return "Bearer " + MARK if match.group(0).startswith("Bearer") else MARK


def redact(text: str | None) -> str | None:
    """`text` with every secret replaced by ``[REDACTED]`` (None and "" unchanged)."""
    if not text:
        return text
    return _scrubber(tuple(secret_values())).sub(_replace, text)
