"""`score --engine ray` with a vLLM judge on a GPU machine: equality with the local vLLM run,
and throughput per replica. CPU CI cannot start vLLM (tests/test_ray_engine.py runs the same
actor path with a judge on a loopback server); a session with a GPU runs this as-is:

    python benchmarks/gpu_ray_check.py --model /path/to/local/model [--rows 256] [--out r.json]

Three runs of `judgebench score` on the first `--rows` SummEval rows with judge.rubric (text
protocol) on the project's own vllm backend, each with its own judge cache (nothing is
reused between them):

1. local: `--workers 1`, one engine in this process's child;
2. ray, one replica: `--engine ray --replicas 1 --gpus-per-replica 1`;
3. ray, two replicas on one GPU: `--replicas 2 --gpus-per-replica 0.5`, each engine with
   `--fraction` of the GPU's memory, if the model fits twice (else recorded as skipped).

The engines take their memory share from a `-p` plugin backend, `vllm_fraction` (the vllm
backend with `gpu_memory_utilization` from $JUDGEBENCH_GPU_FRACTION: a judge's options do not
reach engine arguments), so the same plugin, signature and decoding serve every run. Checks:
each Ray run's table has the local run's cells (greedy decoding: the same scores; the share
that agrees is recorded, since batch composition can change a tie in rare cases), and each
run's rows per second, per replica. Record the printed JSON in benchmarks/README.md.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "data"))
import vendored  # noqa: E402  (the repository's data folder)

DATA = vendored.unpacked("summeval")

PLUGIN = '''
import os
from judgebench.hookspecs import hookimpl
from judgebench_backends.vllm_backend import VLLMBackend


class VLLMFraction(VLLMBackend):
    """The vllm backend with its memory share and context length from the environment."""

    name = "vllm_fraction"

    def __init__(self, model, revision=None):
        super().__init__(model, revision,
                         gpu_memory_utilization=float(os.environ["JUDGEBENCH_GPU_FRACTION"]),
                         max_model_len=int(os.environ.get("JUDGEBENCH_MAX_MODEL_LEN", "4096")))


@hookimpl
def register_backends(register):
    register("vllm_fraction", VLLMFraction)
'''


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a local model directory (or hub id)")
    parser.add_argument("--rows", type=int, default=256, help="SummEval rows to judge")
    parser.add_argument("--data", type=Path, default=DATA, help="generations (JSONL)")
    parser.add_argument("--fraction", type=float, default=0.4,
                        help="GPU memory share of each engine when two share the GPU")
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--out", type=Path, help="write the report here too")
    return parser.parse_args(argv)


def run(work: Path, name: str, data: Path, spec: str, plugin: Path, fraction: float,
        max_model_len: int, *extra: str) -> dict[str, object]:
    out = work / name
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}",
           "JUDGEBENCH_GPU_FRACTION": str(fraction),
           "JUDGEBENCH_MAX_MODEL_LEN": str(max_model_len), "RAY_USAGE_STATS_ENABLED": "0"}
    command = [sys.executable, "-m", "judgebench.cli", "-p", str(plugin), "score", str(data),
               "-m", spec, "-o", str(out / "scores.csv"), "--store", str(out / "s.db"),
               "--cache", str(out / "cache.sqlite"), "--no-progress", "--allow-failures",
               *extra]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    result: dict[str, object] = {"ok": done.returncode == 0, "seconds": round(seconds, 1),
                                 "table": str(out / "scores.csv")}
    if done.returncode != 0:
        result["stderr"] = done.stderr[-2000:]
    return result


def agreement(local: Path, other: Path) -> float:
    mine = local.read_text().splitlines()[1:]
    theirs = other.read_text().splitlines()[1:]
    if len(mine) != len(theirs) or not mine:
        return 0.0
    return sum(a == b for a, b in zip(mine, theirs, strict=True)) / len(mine)


def gpu_memory_gib() -> float | None:
    try:
        import torch

        if torch.cuda.is_available():
            _, total = torch.cuda.mem_get_info(0)
            return round(total / 2**30, 1)
    except ImportError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import vllm
    except ImportError as exc:
        print(json.dumps({"error": f"vllm is not importable here: {exc}"}))
        return 2
    report: dict[str, object] = {"model": args.model, "vllm": vllm.__version__,
                                 "gpu_memory_gib": gpu_memory_gib(), "rows": args.rows}
    spec = f"judge.rubric:backend=vllm_fraction,model={args.model},protocol=text"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plugin = work / "vllm_fraction_plugin.py"
        plugin.write_text(PLUGIN, encoding="utf-8")
        data = work / "gen.jsonl"
        lines = args.data.read_text(encoding="utf-8").splitlines()[:args.rows]
        data.write_text("\n".join(lines) + "\n", encoding="utf-8")
        common = (data, spec, plugin)
        runs = {"local": run(work, "local", *common, 0.85, args.max_model_len, "--workers", "1")}
        runs["ray_1_replica"] = run(work, "ray1", *common, 0.85, args.max_model_len,
                                    "--engine", "ray", "--replicas", "1",
                                    "--gpus-per-replica", "1")
        runs["ray_2_replicas_one_gpu"] = run(work, "ray2", *common, args.fraction,
                                             args.max_model_len, "--engine", "ray",
                                             "--replicas", "2", "--gpus-per-replica", "0.5")
        local_table = Path(str(runs["local"]["table"]))
        for name, result in runs.items():
            if result["ok"]:
                result["rows_per_s"] = round(args.rows / float(str(result["seconds"])), 2)
            if name != "local" and result["ok"] and runs["local"]["ok"]:
                result["agreement_with_local"] = agreement(local_table,
                                                           Path(str(result["table"])))
            if name == "ray_2_replicas_one_gpu" and not result["ok"]:
                result["skipped"] = "two engines did not fit on one GPU (see stderr)"
            result.pop("table")
        report["runs"] = runs
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)
    first = runs["ray_1_replica"]
    return 0 if runs["local"]["ok"] and first["ok"] and first.get(
        "agreement_with_local", 0) >= 0.99 else 1


if __name__ == "__main__":
    raise SystemExit(main())
