"""`judgebench score -m lexical.chrf` (segment scores and a corpus score per system) against a
plain sacrebleu loop, with peak RSS and wall time, for this checkout and another one (the
code before corpus scores came from summed statistics), in the same run.

The input is SummEval (1,600 rows, 16 systems, 11 references per item) repeated under new
item ids up to `--rows`. Each command runs in a fresh process under a wrapper, so the peak
RSS (`ru_maxrss`) is that process's alone. The plain loop reads the same file line by line
and does what `sentence_score` does per row (`_extract_corpus_statistics` on the sentence,
`_aggregate_and_compute`), keeping a sum of the statistics per system for its corpus chrF.

    python benchmarks/bench_corpus_stats.py --reference /tmp/jb-ref [--rows 20000]
        [--json benchmarks/out/corpus_stats.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "data"))
import vendored  # noqa: E402  (the repository's data folder)

SUMMEVAL = vendored.unpacked("summeval")

PLAIN_LOOP = """
import json, sys
from sacrebleu.metrics import CHRF
sentence, corpus = CHRF(), CHRF()
totals = {}
with open(sys.argv[1], encoding="utf-8") as handle:
    for line in handle:
        row = json.loads(line)
        refs = row["reference"] if isinstance(row["reference"], list) else [row["reference"]]
        stats = sentence._extract_corpus_statistics([row["output"]], [[r] for r in refs])
        sentence._aggregate_and_compute(stats)  # = sentence_score(output, refs)
        (stats,) = stats
        total = totals.get(row["system"])
        totals[row["system"]] = stats if total is None else [a + b for a, b in zip(total, stats)]
print(len([corpus._compute_score_from_stats(t).score for t in totals.values()]))
"""

WRAPPER = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
           "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
           "print(time.perf_counter() - t, "
           "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def generate(path: Path, rows: int) -> None:
    records = [json.loads(line) for line in SUMMEVAL.read_text(encoding="utf-8").splitlines()]
    with path.open("w", encoding="utf-8") as handle:
        for index in range(rows):
            record = dict(records[index % len(records)])
            record["item"] = f"{record['item']}#{index // len(records)}"
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one process."""
    done = subprocess.run([sys.executable, "-c", WRAPPER, *command], env=env, check=True,
                          capture_output=True, text=True)
    seconds, kib = done.stdout.split()
    return round(float(seconds), 1), round(int(kib) / 1024, 1)


def score(code: Path, data: Path, workdir: Path) -> tuple[float, float]:
    out, store, corpus = workdir / "out.csv", workdir / "s.db", workdir / "corpus.csv"
    for stale in (out, corpus, store, Path(f"{store}-wal"), Path(f"{store}-shm")):
        stale.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{code / 'plugins'}",
           "HF_HUB_OFFLINE": "1"}
    return timed([sys.executable, "-c", "from judgebench.cli import main; main()", "score",
                  str(data), "-m", "lexical.chrf", "-o", str(out), "--corpus", str(corpus),
                  "--store", str(store), "--no-progress"], env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000])
    parser.add_argument("--reference", type=Path, default=None,
                        help="a checkout of the code before (none: not run)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for rows in args.rows:
            data = workdir / f"summeval{rows}.jsonl"
            generate(data, rows)
            row: dict[str, object] = {"rows": rows}
            row["plain_s"], row["plain_mib"] = timed(
                [sys.executable, "-c", PLAIN_LOOP, str(data)], dict(os.environ))
            row["new_s"], row["new_mib"] = score(REPO, data, workdir)
            if args.reference is not None:
                row["old_s"], row["old_mib"] = score(args.reference, data, workdir)
            results.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print("| rows | plain loop s | plain MiB | this s | this MiB | before s | before MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['rows']:,} | {r['plain_s']} | {r['plain_mib']} | {r['new_s']} "
              f"| {r['new_mib']} | {r.get('old_s', '-')} | {r.get('old_mib', '-')} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
