"""Rebuild this folder's files (samples.jsonl.gz, human.jsonl.gz, suite.json) byte for byte.

    python build.py /path/to/UniEval.git [commit]

The conversion is topical-chat/build.py's (UniEval's meta-evaluation sets share one layout),
run on this set (its `SETS["sfhot"]`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent / "topical-chat" / "build.py"

if __name__ == "__main__":
    spec = importlib.util.spec_from_file_location("unieval_build", SHARED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build("sfhot", *sys.argv[1:])
