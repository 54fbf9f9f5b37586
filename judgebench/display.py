"""Text for the terminal: names from users' files, shown so that they cannot drive it.

A system, metric or column name is data. Printed raw, an escape sequence in it (ESC [ 2 J,
an OSC 8 hyperlink, a CR that rewrites the line, a right-to-left override) would act on the
user's terminal instead of being read. `safe` shows every such character as a visible escape.
"""

from __future__ import annotations

import re
from typing import TextIO

# C0 controls except tab and newline, DEL, C1 controls, and the bidirectional controls that
# reorder what is shown (Unicode's Trojan Source list: ALM, LRM, RLM, embeddings, overrides,
# isolates).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                      "\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe(text: object) -> str:
    """`text` as a string with each control character written as a visible escape (ESC as
    `\\x1b`, CR as `\\x0d`, U+202E as `\\u202e`); newlines and tabs are kept."""
    return _CONTROL.sub(_visible, str(text))


class SafeWriter:
    """A text stream that passes everything written to it through `safe` (for `print(...,
    file=SafeWriter(sys.stdout))`)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(safe(text))

    def flush(self) -> None:
        self._stream.flush()
