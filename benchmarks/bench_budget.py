"""Does `--budget-usd` hold under load? N budgeted `judgebench score` processes (P at once) at
concurrency C against one loopback server whose reported usage is SCALE times the engine's
estimate before a call (1: exact estimates). Per run: the server's bill (its log of answered
calls at the judge's prices), the limit, what the store committed and the runs row.

    python benchmarks/bench_budget.py --runs 30 --concurrency 64 --parallel 3

Prints one JSON line per run and a summary; exits 1 if, with SCALE <= 1, any run's bill
exceeds its limit or any paid call is not committed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "data"))
import vendored  # noqa: E402  (the repository's data folder)
from budget_runs import judge_spec, score_args, spent, start_run  # noqa: E402
from fault_server import FaultServer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rows", type=int, default=96)
    parser.add_argument("--limit", type=float, default=40.0, help="USD; a call is about $1")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--latency", type=float, default=0.02)
    args = parser.parse_args()
    records = []
    with open(vendored.unpacked("summeval"), encoding="utf-8") as handle:
        for line in handle:
            records.append(line)
            if len(records) == args.rows:
                break
    bad = 0
    overs: list[float] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        data = tmp / "in.jsonl"
        data.write_text("".join(records), encoding="utf-8")
        with FaultServer("--usage-scale", str(args.scale), "--latency", str(args.latency),
                         log=tmp / "served.jsonl", reply="Feedback: ok. [RESULT] {score}") as srv:
            for start in range(0, args.runs, args.parallel):
                wave = []
                for i in range(start, min(args.runs, start + args.parallel)):
                    model, where = f"judge-{i}", tmp / f"run{i}"
                    spec = judge_spec(srv, model, args.concurrency)
                    wave.append((model, where, start_run(
                        score_args(where, data, spec, args.limit), where)))
                for model, where, proc in wave:
                    proc.communicate(timeout=600)
                    run = spent(where, srv, model, args.limit)
                    overs.append(run.over)
                    wrong = (run.stored_cost - run.billed > 1e-9
                             or run.billed - run.stored_cost > 1e-9
                             or (args.scale <= 1 and run.over > 1e-9))
                    bad += wrong
                    print(json.dumps({"run": model, "exit": proc.returncode,
                                      "over_usd": round(run.over, 6), "wrong": wrong,
                                      **asdict(run)}), flush=True)
    print(json.dumps({"runs": args.runs, "concurrency": args.concurrency,
                      "parallel": args.parallel, "scale": args.scale, "limit": args.limit,
                      "max_over_usd": round(max(overs), 6),
                      "runs_over_limit": sum(o > 1e-9 for o in overs), "wrong": bad}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
