"""Budgeted judge runs against the loopback server, and what they really spent: the server's
own log of every answered call (its reported usage at the judge's prices) is the bill, the
store is what the run says. Used by tests/test_budget_load.py and benchmarks/bench_budget.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fault_server import FaultServer

#: USD per million tokens: a call of ~1,200 tokens costs about $1.2.
PRICE_IN, PRICE_OUT = 1000.0, 1000.0


def judge_spec(server: FaultServer, model: str, concurrency: int) -> str:
    return (f"judge.rubric:backend=openai_compat,model={model},api_base={server.url},"
            f"protocol=text,price_in={PRICE_IN:g},price_out={PRICE_OUT:g},cache=false,"
            f"concurrency={concurrency},timeout_s=30")


def score_args(tmp: Path, data: Path, spec: str, limit: float, *extra: str) -> list[str]:
    tmp.mkdir(parents=True, exist_ok=True)
    return ["score", str(data), "-m", spec, "--store", str(tmp / "store.db"), "--budget-usd",
            repr(limit), "-o", str(tmp / "scores.csv"), "--no-progress",
            "--cache", str(tmp / "cache.sqlite"), *extra]


def start_run(args: list[str], tmp: Path) -> subprocess.Popen[str]:
    """`judgebench ARGS` in a fresh interpreter (as `conftest.run_cli_process` runs it), not
    waited for."""
    env = {**os.environ, "OPENAI_API_KEY": "unused", "JUDGEBENCH_CACHE_DIR": str(tmp)}
    return subprocess.Popen([sys.executable, "-m", "judgebench.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def billed(server: FaultServer, model: str) -> list[float]:
    """What the server billed for each call it answered for `model`."""
    return [(e["usage"]["prompt_tokens"] * PRICE_IN + e["usage"]["completion_tokens"]
             * PRICE_OUT) / 1e6 for e in server.served() if e["model"] == model]


@dataclass
class Spent:
    """One budgeted run: what the server billed, what the store and its `runs` row say."""

    limit: float
    calls: int
    billed: float
    stored_scores: int
    stored_cost: float
    outcome: str
    statuses: dict[str, dict[str, int]]
    run_cost: float | None
    error: str | None

    @property
    def over(self) -> float:
        return self.billed - self.limit


def spent(tmp: Path, server: FaultServer, model: str, limit: float) -> Spent:
    bills = billed(server, model)
    with sqlite3.connect(tmp / "store.db") as conn:
        scores, cost = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(cost_usd), 0) FROM scores").fetchone()
        outcome, statuses, run_cost, error = conn.execute(
            "SELECT outcome, statuses, cost_usd, error FROM runs").fetchone()
    found: Any = json.loads(statuses or "{}")
    return Spent(limit, len(bills), sum(bills), scores, cost, outcome, found, run_cost, error)
