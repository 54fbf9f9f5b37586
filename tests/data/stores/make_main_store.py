"""Writes main-1710a54.db: a store made by judgebench at main's commit 1710a54 (schema
version 1), kept as a fixture for tests/test_store_migration.py. Run from the repository root
at that commit (it is kept for the record; rerunning it with newer code writes a newer store):

    PYTHONPATH=.:plugins python tests/data/stores/make_main_store.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fault_server import FaultServer  # noqa: E402

STORE = HERE / "main-1710a54.db"
#: The judge's answer has no "[RESULT] n", so every judge score is a parse_error.
REPLY = "I would say it is pretty good overall."


def main() -> None:
    STORE.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp, FaultServer(reply=REPLY) as server:
        judge = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
                 "protocol=text,max_attempts=1")
        subprocess.run(
            [sys.executable, "-m", "judgebench.cli", "score",
             str(ROOT / "examples" / "summeval-sample.jsonl"),
             "-m", "lexical.bleu", "-m", "lexical.rouge2", "-m", judge,
             "-o", f"{tmp}/scores.csv", "--store", str(STORE),
             "--cache", f"{tmp}/cache.sqlite", "--workers", "1"],
            cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
