"""The examples that end every command's `--help`: two or three, each a `# what it does` line
and a command line against the bundled data (examples/ of the repository), in one format:

    Examples:
      # BLEU of the first 8 rows of the SummEval sample, as CSV on stdout
      judgebench score examples/summeval-sample.jsonl -m lexical.bleu --limit 8

An example that cannot run on a CPU machine without keys or network says so at the end of
its comment (`[needs an API key]`, `[needs a GPU]`): tests/test_cli_help_examples.py runs
every other example and only parses those. A server's example ends `[serves until Ctrl-C]`:
the test starts it, reads the URL it prints, fetches that page and interrupts it.
"""

from __future__ import annotations

import re

HEADING = "Examples:"
#: The end of an example's comment that says what it needs to run.
NEEDS = re.compile(r"\[needs ([^\]]+)\]$")
#: The end of a server's example's comment.
SERVES = "[serves until Ctrl-C]"


def examples(*pairs: tuple[str, str]) -> str:
    """The epilog of a command: `pairs` of (what it does, the command line), 2 or 3."""
    if not 2 <= len(pairs) <= 3:
        raise ValueError(f"a command shows 2 or 3 examples, not {len(pairs)}")
    lines = ["\b", HEADING]
    for what, command in pairs:
        if not command.startswith("judgebench ") or "\n" in command or "\n" in what:
            raise ValueError(f"an example is one `judgebench ...` line: {command!r}")
        lines += [f"  # {what}", f"  {command}"]
    return "\n".join(lines)


def examples_in(help_text: str) -> list[tuple[str, str]]:
    """The (comment, command line) examples at the end of a `--help` text, as `examples`
    wrote them."""
    _, found, tail = help_text.rpartition(HEADING)
    pairs: list[tuple[str, str]] = []
    what: str | None = None
    for line in tail.splitlines() if found else []:
        text = line.strip()
        if text.startswith("# "):
            what = text[2:]
        elif text.startswith("judgebench ") and what is not None:
            pairs.append((what, text))
            what = None
    return pairs


def serves(comment: str) -> bool:
    """Whether the example starts a server that runs until interrupted."""
    return comment.endswith(SERVES)


def needs(comment: str) -> str | None:
    """What an example needs that a CPU machine without keys lacks (`an API key`), or None."""
    found = NEEDS.search(comment)
    return found.group(1) if found else None
