"""Framework overhead of `judgebench score` against a plain loop over sacrebleu / rouge-score.

Both run as fresh processes over the 1,600 SummEval samples (11 references each), with
lexical.chrf and lexical.rouge2 (max over references, Porter stemmer), best of N runs. Also
times `import judgebench` and `judgebench --help`.

    python benchmarks/bench_score.py [--repeats 3] [--data PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "data"))
import vendored  # noqa: E402  (the repository's data folder)

DATA = vendored.unpacked("summeval")

PLAIN_LOOP = r'''
import json, sys
import sacrebleu
from rouge_score import rouge_scorer

chrf = sacrebleu.metrics.CHRF()
scorer = rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True)
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
out = []
for r in rows:
    c = chrf.sentence_score(r["output"], r["reference"]).score
    g = scorer.score_multi(r["reference"], r["output"])["rouge2"].fmeasure
    out.append((r["item"], r["system"], c, g))
with open(sys.argv[2], "w") as f:
    for row in out:
        f.write(",".join(map(str, row)) + "\n")
'''


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        loop = tmpdir / "loop.py"
        loop.write_text(PLAIN_LOOP)
        plain, ours = [], []
        for i in range(args.repeats):
            plain.append(timed([py, str(loop), str(args.data), str(tmpdir / "plain.csv")]))
            ours.append(timed([py, "-m", "judgebench.cli", "score", str(args.data),
                               "-m", "lexical.chrf", "-m", "lexical.rouge2",
                               "-o", str(tmpdir / "ours.csv"),
                               "--store", str(tmpdir / f"run{i}.db"), "--no-progress"]))
        imports = [timed([py, "-c", "import judgebench"]) for _ in range(5)]
        helps = [timed([py, "-m", "judgebench.cli", "--help"]) for _ in range(5)]
    print(f"data: {args.data.name}, best of {args.repeats}")
    print(f"plain loop (sacrebleu + rouge-score): {min(plain):.2f} s "
          f"(median {statistics.median(plain):.2f})")
    print(f"judgebench score (store, table, corpus chrF): {min(ours):.2f} s "
          f"(median {statistics.median(ours):.2f})")
    print(f"ratio judgebench / plain: {min(ours) / min(plain):.2f}x")
    print(f"import judgebench: {min(imports):.3f} s; judgebench --help: {min(helps):.3f} s")


if __name__ == "__main__":
    main()
