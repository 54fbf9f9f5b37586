"""`judgebench score --engine ray` on a local Ray instance against the plain local run
(`--workers 1` and `--workers 2`): the whole command, Ray's start-up included, and the
per-batch costs that decide how it scales on N machines.

Input: SummEval (1,600 rows, 11 references each), repeated under new item ids for `--rows`
above 1,600; metrics: lexical.rouge1, lexical.bleu (with its corpus score), lexical.chrf.
Every command runs as a fresh process; wall time and the CPU seconds of the command and all
its descendants (Ray's processes included: sampled with psutil every 0.1 s, so a process
that lives under 0.1 s is missed). The script checks that every run
wrote the same table and corpus file as `--workers 1`.

Per-batch costs, measured separately on the same machine:
- compute: each column's seconds per sample, from the local run's store (`elapsed_s`);
- Ray start-up: `ray.init` of a local instance and 2 actors ready (a fresh process);
- round trip: one 256-sample batch sent to an actor and its outcomes back, with nothing
  computed (what the driver pays per batch besides the commit).

    python benchmarks/bench_ray.py [--rows 1600] [--json benchmarks/out/ray.json]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_workers import generate  # SummEval repeated under new item ids

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "data"))
import vendored  # noqa: E402  (the repository's data folder)

DATA = vendored.unpacked("summeval")
METRICS = ("lexical.rouge1", "lexical.bleu", "lexical.chrf")

WRAPPER = r'''
import json, subprocess, sys, time
import psutil
t = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
cpu = {}  # pid -> user + system seconds, last seen (Ray's processes are not waited for)
while child.poll() is None:
    try:
        tree = [psutil.Process(child.pid), *psutil.Process(child.pid).children(recursive=True)]
    except psutil.Error:
        tree = []
    for proc in tree:
        try:
            times = proc.cpu_times()
            cpu[proc.pid] = times.user + times.system
        except psutil.Error:
            pass
    time.sleep(0.1)
seconds = time.perf_counter() - t
if child.returncode:
    sys.exit(child.stderr.read())
print(json.dumps({"seconds": seconds, "cpu_s": sum(cpu.values())}))
'''

ROUND_TRIP = r'''
import json, os, time
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
t = time.perf_counter()
from judgebench.engine import ray_engine
ray_engine.connect(ray_engine.RayConfig(num_cpus=2))
import ray
from judgebench.models import Outcome, Sample

@ray.remote(num_cpus=1)
class Echo:
    def score(self, column, batch):
        return ray_engine.BatchResult([Outcome(value=1.0) for _ in batch], 0.0, None, 0)

actors = [Echo.remote() for _ in range(2)]
ray.get([a.score.remote("x", []) for a in actors])
startup = time.perf_counter() - t
rows = [json.loads(line) for line in open(os.environ["DATA"], encoding="utf-8")][:256]
batch = [Sample(**{k: v for k, v in r.items() if k in Sample.model_fields}) for r in rows]
ray.get(actors[0].score.remote("x", batch))
t = time.perf_counter()
for _ in range(20):
    ray.get(actors[0].score.remote("x", batch))
trip = (time.perf_counter() - t) / 20
ray.shutdown()
print(json.dumps({"startup_s": startup, "round_trip_256_s": trip}))
'''


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{REPO / 'plugins'}"
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0")
    return env


def measure(command: list[str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", WRAPPER, *command], env=environment(),
                          check=True, capture_output=True, text=True)
    return {k: round(v, 2) for k, v in json.loads(done.stdout).items()}


def per_sample(store: Path) -> dict[str, float]:
    """Each column's mean seconds per sample over its batches (what workers would compute)."""
    with sqlite3.connect(store) as conn:
        return {metric: round(seconds, 6) for metric, seconds in conn.execute(
            "SELECT metric, AVG(elapsed_s) FROM scores GROUP BY metric")}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1600)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"uptime: {uptime()}; {os.cpu_count()} CPUs", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "gen.jsonl"
        generate(data, args.rows)
        runs: dict[str, dict[str, float]] = {}
        for name, extra in (("score --workers 1", ["--workers", "1"]),
                            ("score --workers 2", ["--workers", "2"]),
                            ("score --engine ray (local instance, 2 CPUs)", ["--engine", "ray"])):
            out = work / str(len(runs))
            out.mkdir()
            command = [sys.executable, "-m", "judgebench.cli", "score", str(data),
                       *(a for m in METRICS for a in ("-m", m)), "-o", str(out / "scores.csv"),
                       "--corpus", str(out / "corpus.csv"), "--store", str(out / "s.db"),
                       "--no-progress", *extra]
            runs[name] = measure(command)
            print(json.dumps({name: runs[name]}), file=sys.stderr, flush=True)
        for index in (1, 2):
            for file in ("scores.csv", "corpus.csv"):
                if not filecmp.cmp(work / "0" / file, work / str(index) / file, shallow=False):
                    raise SystemExit(f"run {index} wrote a different {file}")
        costs = per_sample(work / "0" / "s.db")
        trip = subprocess.run([sys.executable, "-c", ROUND_TRIP], env={**environment(),
                              "DATA": str(data)}, check=True, capture_output=True, text=True)
        ray_costs = {k: round(v, 4) for k, v in json.loads(trip.stdout).items()}
    base = runs["score --workers 1"]["seconds"]
    report = {"rows": args.rows, "metrics": METRICS, "runs": runs,
              "ratio_to_workers_1": {k: round(v["seconds"] / base, 2) for k, v in runs.items()},
              "seconds_per_sample": costs, **ray_costs, "uptime_after": uptime()}
    print(f"uptime: {report['uptime_after']}", file=sys.stderr)
    print("| what | seconds | CPU seconds, all processes | x --workers 1 |")
    print("|---|---:|---:|---:|")
    for name, run in runs.items():
        print(f"| {name} | {run['seconds']} | {run['cpu_s']} "
              f"| {report['ratio_to_workers_1'][name]} |")
    print(json.dumps({k: report[k] for k in ("seconds_per_sample", "startup_s",
                                             "round_trip_256_s")}, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
