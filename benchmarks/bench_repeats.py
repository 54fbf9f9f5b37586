"""What `score --repeats 5` costs against 5 separate runs: one `judge.rubric` at temperature 1
over N SummEval rows against the loopback server answering at random
(`tests/fault_server.py --random-scores`), timed as a user waits for it (each a fresh
`judgebench score` process), with the server's count of answered requests and the machine's
load average beside each.

    python benchmarks/bench_repeats.py [--rows 96] [--repeats 5] [--latency 0.02]

Cases: `--repeats K` once (fresh store and cache); K separate runs, each its own store and
judge cache (the only way to get K independent draws without --repeats: one cache would
replay the first run's answers); and the `--repeats K` run again (every draw replayed from
the judge cache). Prints one JSON line per case.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "data"))
import vendored  # noqa: E402  (the repository's data folder)
from fault_server import FaultServer  # noqa: E402


def score(where: Path, data: Path, spec: str, *extra: str) -> float:
    where.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "judgebench.cli", "score", str(data), "-m", spec,
           "--store", str(where / "runs.db"), "--cache", str(where / "cache.sqlite"),
           "-o", str(where / "out.csv"), *extra]
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=where,
                          env={**os.environ, "JUDGEBENCH_CACHE_DIR": str(where / "d")})
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with open(vendored.unpacked("summeval"), encoding="utf-8") as handle:
        records = [line for _, line in zip(range(args.rows), handle, strict=False)]
    k = args.repeats
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        data = tmp / "in.jsonl"
        data.write_text("".join(records), encoding="utf-8")
        with FaultServer("--random-scores", "1", "--latency", str(args.latency),
                         log=tmp / "served.jsonl") as srv:
            spec = ("judge.rubric:backend=openai_compat,model=judge,protocol=text,"
                    f"temperature=1,api_base={srv.url},concurrency={args.concurrency}")

            def case(name: str, run: object) -> None:
                before, load = len(srv.served()), os.getloadavg()[0]
                seconds = run()  # type: ignore[operator]
                print(json.dumps({"case": name, "rows": args.rows, "wall_s": round(seconds, 2),
                                  "requests": len(srv.served()) - before,
                                  "load_1min_before": round(load, 2),
                                  "load_1min_after": round(os.getloadavg()[0], 2)}),
                      flush=True)

            case(f"--repeats {k}", lambda: score(tmp / "repeats", data, spec, "--repeats",
                                                 str(k)))
            case(f"{k} separate runs", lambda: sum(score(tmp / f"run{i}", data, spec)
                                                   for i in range(k)))
            case(f"--repeats {k} again (replayed)",
                 lambda: score(tmp / "repeats", data, spec, "--repeats", str(k)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
