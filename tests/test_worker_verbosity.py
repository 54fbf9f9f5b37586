"""A run's worker processes (`--workers`) print what the run itself prints of third-party
libraries: without `-v` nothing, with `-v` their warnings (issue 42: sacrebleu's "forgot to
detokenize" warning came once per batch scored in a worker, ten times in a bench run).

A fresh process runs `judgebench score` with the pool's threshold at 0, so every batch after
the first (timed in process) goes to the two workers; every output ends in " ." so that
sacrebleu warns for each batch it sees."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, write_jsonl

WARNING = "It looks like you forgot to detokenize your test data"
BATCHES = 3  # lexical.bleu scores 256 samples a batch
SCRIPT = ("import sys\n"
          "import judgebench.engine.pool as pool\n"
          "pool.POOL_MIN_SECONDS = 0.0\n"
          "from judgebench.cli import main\n"
          "main(sys.argv[1:])\n")


def _score(tmp_path: Path, *verbose: str) -> subprocess.CompletedProcess[str]:
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": f"i{k}", "system": f"s{k % 2}", "output": f"the cat {k} sat on the mat .",
         "reference": "the cat sat on the mat ."} for k in range(256 * BATCHES)])
    env = {**os.environ, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "plugins"),
                                          os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *verbose, "score", str(data), "-m", "lexical.bleu",
         "--workers", "2", "-o", str(tmp_path / "out.csv"), "--store",
         str(tmp_path / "runs.db")], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("verbose", [False, True])
def test_workers_print_a_librarys_warnings_only_with_verbose(tmp_path: Path,
                                                             verbose: bool) -> None:
    proc = _score(tmp_path, *(["-v"] if verbose else []))
    assert proc.returncode == 0, proc.stderr
    assert "scored 768 rows" in proc.stderr
    assert proc.stderr.count(WARNING) == (BATCHES if verbose else 0), proc.stderr
