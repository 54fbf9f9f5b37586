"""Shared fixtures: the SummEval data, small subsets of it, and a CLI runner in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SUMMEVAL = REPO.parent / "shared" / "data" / "summeval" / "summeval.jsonl"
EXAMPLE = REPO / "examples" / "summeval-sample.jsonl"


def summeval_records(limit: int | None = None) -> list[dict]:
    path = SUMMEVAL if SUMMEVAL.exists() else EXAMPLE
    records = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            records.append(json.loads(line))
            if limit is not None and len(records) >= limit:
                break
    return records


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


@pytest.fixture
def summeval_small(tmp_path: Path) -> Path:
    """32 SummEval rows: 2 documents x 16 systems, 11 references each."""
    return write_jsonl(tmp_path / "small.jsonl", summeval_records(32))


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `judgebench ARGS` in a fresh interpreter, as a user would."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "judgebench.cli", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"judgebench {' '.join(args)} failed:\n{proc.stderr}")
    return proc
