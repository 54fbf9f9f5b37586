"""Rebuild this folder's files (samples.jsonl.gz, human.jsonl.gz, suite.json) byte for byte.

    python build.py /path/to/LLMBar.git [commit]

The conversion is mt-bench/build.py's (LLMBar's processed sets share one layout), run on
`Dataset/Processed/LLMEval^2/`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent / "mt-bench" / "build.py"

if __name__ == "__main__":
    spec = importlib.util.spec_from_file_location("mt_bench_build", SHARED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build("llmeval2", *sys.argv[1:])
