"""Keep secrets out of reasons, logs and stores: any environment value whose name says it is a
secret (…KEY, …TOKEN, …SECRET, …PASSWORD) is replaced wherever it appears in a text."""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)


def secret_values() -> list[str]:
    return sorted(
        (v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8),
        key=len, reverse=True,
    )


def redact(text: str | None) -> str | None:
    if not text:
        return text
    for value in secret_values():
        if value in text:
            text = text.replace(value, "[REDACTED]")
    return text
