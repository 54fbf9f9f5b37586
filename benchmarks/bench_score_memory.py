"""Peak memory of `judgebench score` against the number of input rows.

Generates synthetic JSONL generations (about 300 characters of output and a reference per
row), then runs the real CLI in a fresh process per size,

    judgebench score FILE -m lexical.length -m lexical.exact_match -o out.csv --store s.db

and reports its peak RSS (`ru_maxrss` of the finished child) and wall time. The reference is
the same command run by another checkout of judgebench (`--reference PATH`, e.g. the code
before streaming), in the same run.

    python benchmarks/bench_score_memory.py [--rows 20000 100000 200000]
        [--reference /tmp/jb-ref] [--reference-rows 20000 100000 200000]
        [--json benchmarks/out/score_memory.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
METRICS = ("lexical.length", "lexical.exact_match")
WORDS = ("the", "model", "summary", "said", "report", "on", "a", "new", "of", "in", "and",
         "government", "council", "people", "year", "city", "police", "club", "match", "won")


def text(rng: random.Random, chars: int) -> str:
    """Words up to about `chars` characters."""
    words: list[str] = []
    length = 0
    while length < chars:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def generate(path: Path, rows: int, *, seed: int = 0) -> None:
    """`rows` samples: 100 systems per item, ~300-character outputs, one ~300-character
    reference and a human score."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for index in range(rows):
            record = {
                "item": f"doc{index // 100:06d}", "system": f"sys{index % 100:03d}",
                "output": text(rng, 300), "reference": text(rng, 300),
                "human": {"coherence": rng.randint(1, 5)},
            }
            handle.write(json.dumps(record) + "\n")


def measure(code: Path, data: Path, workdir: Path) -> tuple[float, float]:
    """(peak RSS in MiB, wall seconds) of one `judgebench score` process run from `code`."""
    out, store = workdir / "out.csv", workdir / "s.db"
    for stale in (out, store, Path(f"{store}-wal"), Path(f"{store}-shm")):
        stale.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{code / 'plugins'}"}
    command = [sys.executable, "-c", "from judgebench.cli import main; main()", "score",
               str(data), *(arg for m in METRICS for arg in ("-m", m)), "-o", str(out),
               "--store", str(store), "--no-progress"]
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: run each under a fresh
    # wrapper process so the number is this child's alone.
    wrapper = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
               "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
               "print(time.perf_counter() - t, "
               "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", wrapper, *command], env=env, check=True,
                          capture_output=True, text=True)
    seconds, kib = done.stdout.split()
    return int(kib) / 1024, float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000, 100_000, 200_000])
    parser.add_argument("--reference", type=Path, default=None,
                        help="a checkout of the code to compare against, e.g. an export of "
                             "the commit before streaming (none: not run)")
    parser.add_argument("--reference-rows", type=int, nargs="*", default=None,
                        help="sizes to run the reference on (default: all of --rows)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    reference_rows = args.rows if args.reference_rows is None else args.reference_rows
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for rows in args.rows:
            data = workdir / f"gen{rows}.jsonl"
            generate(data, rows)
            size_mb = data.stat().st_size / 1e6
            row = {"rows": rows, "input_mb": round(size_mb, 1)}
            row["rss_mib"], row["seconds"] = (round(v, 1) for v in measure(REPO, data, workdir))
            if args.reference is not None and rows in reference_rows:
                ref = measure(args.reference, data, workdir)
                row["reference_rss_mib"], row["reference_seconds"] = (round(v, 1) for v in ref)
            data.unlink()
            results.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print("| rows | input (MB) | peak RSS (MiB) | seconds | reference peak RSS (MiB) "
          "| reference seconds |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['rows']:,} | {r['input_mb']} | {r['rss_mib']} | {r['seconds']} "
              f"| {r.get('reference_rss_mib', '-')} | {r.get('reference_seconds', '-')} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
