"""`judgebench score -m lexical.chrf` with `--workers 1` and `--workers 2` against a plain
sacrebleu `sentence_chrf` loop, and a no-op `--resume`, at several sizes.

Inputs are SummEval (1,600 rows, 11 references each) repeated under new item ids. Every
command runs as a fresh process; wall time of the whole command; memory two ways: the
largest single process (`ru_maxrss` of RUSAGE_CHILDREN, from a wrapper process per command)
and the peak of the summed RSS of the process and its workers (psutil, sampled every 50 ms);
CPU seconds of the command and its workers (RUSAGE_CHILDREN), which a shared machine's load
changes much less than wall time.
The script checks that both worker counts wrote the same table and corpus file.

    python benchmarks/bench_workers.py [--rows 1600 20000] [--json benchmarks/out/workers.json]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
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
from sacrebleu.metrics import CHRF

chrf = CHRF()
with open(sys.argv[1], encoding="utf-8") as rows, open(sys.argv[2], "w") as out:
    for line in rows:
        r = json.loads(line)
        value = chrf.sentence_score(r["output"], r["reference"]).score
        out.write(f"{r['item']},{r['system']},{value}\n")
'''

WRAPPER = r'''
import json, resource, subprocess, sys, time
import psutil
t = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
peak = 0
while child.poll() is None:
    try:
        tree = [psutil.Process(child.pid), *psutil.Process(child.pid).children(recursive=True)]
        peak = max(peak, sum(p.memory_info().rss for p in tree))
    except psutil.Error:
        pass
    time.sleep(0.05)
if child.returncode:
    sys.exit(child.returncode)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "tree_mib": peak / 2**20, "max_process_mib": usage.ru_maxrss / 1024}))
'''


def generate(path: Path, rows: int) -> None:
    source = DATA.read_text(encoding="utf-8").splitlines()
    with path.open("w", encoding="utf-8") as handle:
        for n in range(rows):
            record = json.loads(source[n % len(source)])
            record["item"] = f"{record['item']}#{n // len(source)}"
            handle.write(json.dumps(record) + "\n")


def measure(command: list[str]) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # a user's shell
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{REPO / 'plugins'}"
    done = subprocess.run([sys.executable, "-c", WRAPPER, *command], env=env, check=True,
                          capture_output=True, text=True)
    return {k: round(v, 2) for k, v in json.loads(done.stdout).items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[1600, 20_000])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}; "
          f"{os.cpu_count()} CPUs", file=sys.stderr)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        loop = work / "loop.py"
        loop.write_text(PLAIN_LOOP)
        for rows in args.rows:
            data = work / f"gen{rows}.jsonl"
            generate(data, rows)
            runs = {"plain sentence_chrf loop": measure(
                [sys.executable, str(loop), str(data), str(work / "plain.csv")])}
            for workers in (1, 2):
                out = work / f"w{workers}"
                out.mkdir()
                score = [sys.executable, "-m", "judgebench.cli", "score", str(data),
                         "-m", "lexical.chrf", "-o", str(out / "scores.csv"),
                         "--corpus", str(out / "corpus.csv"), "--store", str(out / "s.db"),
                         "--workers", str(workers), "--no-progress"]
                runs[f"score --workers {workers}"] = measure(score)
                if workers == 2:
                    runs["score --workers 2 --resume (no-op)"] = measure([*score, "--resume"])
            for name in ("scores.csv", "corpus.csv"):
                if not filecmp.cmp(work / "w1" / name, work / "w2" / name, shallow=False):
                    raise SystemExit(f"--workers 1 and 2 wrote different {name} at {rows} rows")
            for name, run in runs.items():
                row = {"rows": rows, "what": name, **run}
                results.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
            for stale in (data, *work.glob("w*/*")):
                stale.unlink()
            for folder in work.glob("w*"):
                folder.rmdir()
            time.sleep(1)
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
          file=sys.stderr)
    print("| rows | what | seconds | CPU seconds, all processes | peak RSS, all processes (MiB) "
          "| largest process (MiB) |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['rows']:,} | {r['what']} | {r['seconds']} | {r['cpu_s']} "
              f"| {r['tree_mib']:.0f} | {r['max_process_mib']:.0f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
