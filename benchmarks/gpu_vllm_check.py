"""Run judgebench's vLLM paths for real on a GPU machine and write one JSON file of results.

CPU CI cannot start vLLM: tests/test_vllm_engine_options.py, tests/test_vllm_server_lifecycle.py
and tests/test_openai_compat_vllm.py check judgebench's side against a fake engine module and
a fake server. This script is the other half; a session with a GPU runs it as-is, offline:

    python benchmarks/gpu_vllm_check.py --model /models/Qwen2.5-0.5B-Instruct --out vllm.json

MODEL is a small Hugging Face causal LM in a local directory (the machine needs no
internet). Each check prints a PASS/FAIL line on stderr and goes into the JSON file:

  judges.vllm / judges.vllm_server
      every registered judge (rubric, geval, reference, pairwise, panel, dag) on --samples
      SummEval-style samples, through in-process vLLM and through a managed `vllm serve`
      (backend=vllm_server); statuses counted. PASS: no error, and no parse_error under the
      json protocol (structured output never fails to parse).
  likelihood
      prompt logprobs of the same texts from in-process vLLM, from `vllm serve` (completions
      with echo) and from transformers (float32, on the GPU when there is one); PASS: every
      token agrees with transformers within --tolerance (default 1e-3); neural.likelihood's
      values on each backend are recorded too.
  throughput
      judge.rubric (json protocol, judge cache off) on --n samples through judgebench against
      raw `LLM.generate` on the same token ids with the same sampling parameters, on the same
      engine (after a warm-up both find the same prefix cache; best of --repeats); PASS:
      judgebench takes at most 1.2x the raw time (the goal: within 20% of raw vLLM).
  pooling (with --classifier-model / --embedding-model)
      learned.classifier and neural.embedding-cosine on vLLM's pooling runner against
      transformers, on the same samples; PASS: agreement within --pooling-tolerance.

Exit status: 0 if every check passed, 1 if one failed, 2 if vllm is not importable here (the
JSON file then says so). It imports vllm only after parsing its arguments, so `--help` works
on any machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugins"))
EXAMPLE = ROOT / "examples" / "summeval-sample.jsonl"
LIKELIHOOD_TEXTS = [
    "The capital of France is Paris.",
    "Judges should answer in the format they are asked for.",
    "A short summary keeps the main facts and drops the rest.",
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gpu_vllm_check.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True,
                        help="local directory of a small HF causal LM (judge and likelihood)")
    parser.add_argument("--out", default="gpu_vllm_check.json", help="the JSON results file")
    parser.add_argument("--samples", type=int, default=16,
                        help="samples per judge for the judge checks (default 16)")
    parser.add_argument("--n", type=int, default=256,
                        help="samples for the throughput check (default 256)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="throughput runs of each side; the best is kept (default 2)")
    parser.add_argument("--data", default=str(EXAMPLE),
                        help="JSONL samples (default examples/summeval-sample.jsonl)")
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.2,
                        help="per engine: in-process vLLM and `vllm serve` share the GPU")
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest allowed |vLLM - transformers| per prompt-token logprob")
    parser.add_argument("--serve-command", default=None,
                        help="start command of the server (default: $JUDGEBENCH_VLLM_SERVE "
                             "or `vllm serve`)")
    parser.add_argument("--skip-server", action="store_true",
                        help="leave out the `vllm serve` checks")
    parser.add_argument("--classifier-model", default=None,
                        help="local sequence-classification / reward model for the pooling "
                             "check")
    parser.add_argument("--embedding-model", default=None,
                        help="local sentence-embedding model for the pooling check")
    parser.add_argument("--pooling-tolerance", type=float, default=1e-2)
    return parser.parse_args(argv)


class Report:
    def __init__(self, path: Path, **header: Any) -> None:
        self.path = path
        self.data: dict[str, Any] = {**header, "checks": {}}

    def record(self, name: str, ok: bool, **detail: Any) -> None:
        self.data["checks"][name] = {"ok": bool(ok), **detail}
        print(f"{'PASS' if ok else 'FAIL'} {name} {json.dumps(detail, default=str)[:400]}",
              file=sys.stderr, flush=True)
        self.write()

    def failed(self, name: str, exc: BaseException) -> None:
        self.record(name, False, error=f"{type(exc).__name__}: {exc}",
                    traceback=traceback.format_exc()[-3000:])

    def write(self) -> None:
        self.path.write_text(json.dumps(self.data, indent=2, default=str))

    @property
    def all_ok(self) -> bool:
        return all(c["ok"] for c in self.data["checks"].values())


def load_samples(path: str, n: int) -> list[Any]:
    from judgebench.models import Sample

    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    while len(records) < n:  # repeat the file to reach n
        records += [{**r, "item": f"{r['item']}#{len(records)}"} for r in records[:n]]
    return [Sample(**r) for r in records[:n]]


def pairwise_samples(samples: list[Any]) -> list[Any]:
    from judgebench.models import Sample

    pairs = []
    for first, second in zip(samples[::2], samples[1::2], strict=False):
        pairs.append(Sample(item=first.item, system=f"{first.system} vs {second.system}",
                            input=first.input, source=first.source, system_a=first.system,
                            system_b=second.system, output_a=first.output,
                            output_b=second.output))
    return pairs


def judge_options(name: str) -> dict[str, Any]:
    if name == "judge.panel":
        return {"judge": "judge.rubric", "criterion": "coherence"}
    if name in ("judge.rubric", "judge.geval"):
        return {"criterion": "coherence"}
    if name == "judge.dag":  # the bundled five-node judge, every node on the backend
        return {"path": str(ROOT / "examples" / "dag.toml")}
    return {}


def check_judges(report: Report, backend: str, backend_options: dict[str, Any],
                 samples: list[Any]) -> None:
    from judgebench.plugins import build_host

    host = build_host()
    judges = sorted(name for name, entry in host.metrics().items()
                    if entry.info.kind == "judge")
    results: dict[str, Any] = {}
    ok = True
    for name in judges:
        info = host.metric(name).info
        inputs = pairwise_samples(samples) if "output_a" in info.requires else samples
        options = {**judge_options(name), **backend_options, "backend": backend}
        if name == "judge.panel":
            options = {"judge": "judge.rubric", "criterion": "coherence",
                       "backends": backend, "models": backend_options["model"]}
        metric: Any = None
        try:
            metric = host.metric(name).build(**options)
            started = time.perf_counter()
            outcomes: list[Any] = list(metric.score(inputs))
            elapsed = time.perf_counter() - started
            statuses: dict[str, int] = {}
            for outcome in outcomes:
                status = str(getattr(outcome.status, "value", outcome.status))
                statuses[status] = statuses.get(status, 0) + 1
            protocol = getattr(metric, "protocol", None)
            errors = statuses.get("error", 0)
            parse_errors = statuses.get("parse_error", 0)
            judge_ok = errors == 0 and not (protocol == "json" and parse_errors)
            reasons = sorted({o.reason for o in outcomes if o.reason})[:5]
            results[name] = {"ok": judge_ok, "protocol": protocol, "statuses": statuses,
                             "seconds": round(elapsed, 2), "reasons": reasons,
                             "signature": str(metric.signature())}
            ok = ok and judge_ok
        except Exception as exc:
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            ok = False
        finally:
            if metric is not None:
                metric.close()
    report.record(f"judges.{backend}", ok, judges=results)


def prompt_logprobs(backend: Any, texts: list[str]) -> list[list[float | None]]:
    from judgebench.backends import Request

    answers = backend.generate([Request(prompt=t, max_tokens=0, prompt_logprobs=True)
                                for t in texts])
    out = []
    for answer in answers:
        if not answer.ok:
            raise RuntimeError(f"{backend.name}: {answer.error}")
        out.append([t.logprob for t in answer.prompt_logprobs or ()])
    return out


def largest_difference(left: list[list[float | None]], right: list[list[float | None]]
                       ) -> tuple[float, str]:
    worst, where = 0.0, ""
    for index, (a, b) in enumerate(zip(left, right, strict=True)):
        if len(a) != len(b):
            return math.inf, f"text {index}: {len(a)} vs {len(b)} tokens"
        for position, (x, y) in enumerate(zip(a, b, strict=True)):
            if x is None or y is None:
                continue
            if abs(x - y) > worst:
                worst, where = abs(x - y), f"text {index} token {position}"
    return worst, where


def check_likelihood(report: Report, args: argparse.Namespace, engine: dict[str, Any],
                     server: dict[str, Any] | None, samples: list[Any]) -> None:
    from judgebench.backends import get_backend
    from judgebench.plugins import build_host

    reference = get_backend("transformers", model=args.model, dtype="float32")
    expected = prompt_logprobs(reference, LIKELIHOOD_TEXTS)
    detail: dict[str, Any] = {"tolerance": args.tolerance, "texts": len(LIKELIHOOD_TEXTS)}
    ok = True
    sides: list[tuple[str, dict[str, Any]]] = [("vllm", engine)]
    if server is not None:
        sides.append(("vllm_server", server))
    for name, options in sides:
        backend = get_backend(name, **{**options, "dtype": "float32"})
        try:
            found = prompt_logprobs(backend, LIKELIHOOD_TEXTS)
            worst, where = largest_difference(found, expected)
            detail[name] = {"max_abs_difference": worst, "at": where}
            ok = ok and worst <= args.tolerance
        finally:
            backend.close()
    values: dict[str, Any] = {}
    for name, options in [("transformers", {"model": args.model, "dtype": "float32"}), *sides]:
        metric = build_host().metric("neural.likelihood").build(
            backend=name, given="input", **{**options, "dtype": "float32"})
        try:
            values[name] = [v if isinstance(v, float) else str(v)
                            for v in metric.score(samples[:4])]
        finally:
            metric.close()
    detail["neural.likelihood"] = values
    reference.close()
    report.record("likelihood", ok, **detail)


def check_throughput(report: Report, args: argparse.Namespace, engine: dict[str, Any]) -> None:
    import vllm
    from judgebench_backends.vllm_backend import sampling_params_dict, to_sampling_params

    from judgebench.plugins import build_host

    samples = load_samples(args.data, args.n)
    judge: Any = build_host().metric("judge.rubric").build(
        backend="vllm", criterion="coherence", cache=False, protocol="json", **engine)
    inner = judge.backend.inner
    llm = inner.engine()
    tokenizer = llm.get_tokenizer()
    requests = [judge.planned_requests(s)[0] for s in samples]
    prompts = [{"prompt_token_ids": inner.prompt_ids(r, tokenizer)} for r in requests]
    params = [to_sampling_params(sampling_params_dict(r), vllm) for r in requests]
    llm.generate(prompts[:8], params[:8], use_tqdm=False)  # warm up
    raw_times, judge_times = [], []
    outcomes: list[Any] = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        llm.generate(prompts, params, use_tqdm=False)
        raw_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        outcomes = list(judge.score(samples))
        judge_times.append(time.perf_counter() - started)
    raw, ours = min(raw_times), min(judge_times)
    parse_errors = sum(1 for o in outcomes if str(getattr(o.status, "value", o.status))
                       == "parse_error")
    judge.close()
    report.record("throughput", ours <= 1.2 * raw and parse_errors == 0, samples=args.n,
                  raw_generate_s=round(raw, 3), judgebench_s=round(ours, 3),
                  ratio=round(ours / raw, 3), raw_samples_per_s=round(args.n / raw, 1),
                  judgebench_samples_per_s=round(args.n / ours, 1), parse_errors=parse_errors,
                  goal="judgebench within 20% of raw LLM.generate")


def check_pooling(report: Report, args: argparse.Namespace, engine: dict[str, Any],
                  samples: list[Any]) -> None:
    from judgebench.plugins import build_host

    host = build_host()
    runs = []
    if args.classifier_model:
        runs.append(("learned.classifier", {"model": args.classifier_model,
                                            "transform": "probability"}))
    if args.embedding_model:
        runs.append(("neural.embedding-cosine", {"model": args.embedding_model}))
    vllm_options = {k: engine[k] for k in ("gpu_memory_utilization", "max_model_len")}
    for name, options in runs:
        values = {}
        for backend, extra in (("transformers", {"dtype": "float32"}),
                               ("vllm", {"dtype": "float32", **vllm_options})):
            metric = host.metric(name).build(backend=backend, **options, **extra)
            try:
                values[backend] = [v if isinstance(v, float) else math.nan
                                   for v in metric.score(samples)]
            finally:
                metric.close()
        worst = max(abs(a - b) for a, b in zip(values["transformers"], values["vllm"],
                                                strict=True))
        report.record(f"pooling.{name}", worst <= args.pooling_tolerance,
                      max_abs_difference=worst, values=values)


def free_gpu_memory() -> None:
    """Give back what a closed engine held (vLLM frees it lazily within a process)."""
    import gc

    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    report = Report(out, model=args.model, started=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                 time.gmtime()))
    try:
        import torch
        import vllm
    except ImportError as exc:
        report.data["error"] = f"vllm is not importable here ({exc}): run this on a GPU " \
                               "machine with `pip install 'judgebench[vllm]'`"
        report.write()
        print(report.data["error"], file=sys.stderr)
        return 2
    report.data["vllm"] = vllm.__version__
    report.data["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    report.data["batch_invariant"] = os.environ.get("VLLM_BATCH_INVARIANT", "")
    os.environ.setdefault("JUDGEBENCH_CACHE_DIR", tempfile.mkdtemp(prefix="jb-gpu-cache-"))
    if args.serve_command:
        os.environ["JUDGEBENCH_VLLM_SERVE"] = args.serve_command
    engine = {"model": args.model, "max_model_len": args.max_model_len,
              "gpu_memory_utilization": args.gpu_memory_utilization}
    server = None if args.skip_server else dict(engine)
    samples = load_samples(args.data, args.samples)

    steps: list[tuple[str, Any]] = [
        ("judges.vllm", lambda: check_judges(report, "vllm", engine, samples))]
    if server is not None:
        steps.append(("judges.vllm_server",
                      lambda: check_judges(report, "vllm_server", server, samples)))
    steps += [("likelihood", lambda: check_likelihood(report, args, engine, server, samples)),
              ("throughput", lambda: check_throughput(report, args, engine))]
    if args.classifier_model or args.embedding_model:
        steps.append(("pooling", lambda: check_pooling(report, args, engine, samples)))
    for name, step in steps:
        try:
            step()
        except Exception as exc:
            report.failed(name, exc)
        free_gpu_memory()
    report.data["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report.write()
    print(f"results: {out}", file=sys.stderr)
    return 0 if report.all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
