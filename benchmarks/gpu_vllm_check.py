"""Run the vllm backend's real engine on a GPU machine and record what works and how fast.

CPU CI cannot start vLLM, so tests/test_backends_vllm.py covers everything up to the engine
(sampling parameters, structured-output parameters, output parsing). This script is the other
half; a session with a GPU runs it as-is:

    python benchmarks/gpu_vllm_check.py --model /path/to/local/model [--n 512] [--out r.json]

It needs `vllm` importable and a local model directory (nothing is downloaded; the model may
also be a hub id if that machine can reach the hub). It checks, each with a pass/fail line:

1. greedy chat generation with token logprobs (top 20), as judge.geval uses them;
2. prompt logprobs with max_tokens=0 (log p(text)), as a likelihood metric uses them, and,
   where transformers is installed, their agreement with a direct forward pass;
3. structured output from a JSON schema, parsed by judge.rubric's strict JSON parser;
4. seeded sampling: the same seed gives the same text;
5. throughput: `--n` judge.rubric-style requests in one batch (requests/s, output tokens/s),
   with prefix caching on.

Record the printed JSON in benchmarks/README.md ("judges" section).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugins"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    from judgebench_backends.vllm_backend import VLLMBackend
    from judgebench_judges import parsing
    from judgebench_judges.rubric import score_schema

    from judgebench.backends import Request

    report: dict = {"model": args.model, "checks": {}}
    checks = report["checks"]
    try:
        import torch
        import vllm

        report["vllm"] = vllm.__version__
        report["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError as exc:
        print(json.dumps({"error": f"vllm is not importable here: {exc}"}))
        return 2

    started = time.perf_counter()
    backend = VLLMBackend(model=args.model, max_model_len=args.max_model_len)
    backend.engine()
    report["engine_start_s"] = round(time.perf_counter() - started, 1)

    def record(name: str, ok: bool, **detail: object) -> None:
        checks[name] = {"ok": bool(ok), **detail}
        print(f"{'PASS' if ok else 'FAIL'} {name} {json.dumps(detail)[:300]}", file=sys.stderr)

    question = "Rate the fluency of this sentence from 1 to 5: 'The cat sat on the mat.'"
    r = backend.generate([Request.chat(("user", question), max_tokens=8, logprobs=True,
                                       top_logprobs=20)])[0]
    record("logprobs", r.ok and r.logprobs is not None and len(r.logprobs[0].top) == 20,
           text=r.text, error=str(r.error) if r.error else None)

    text = "The capital of France is Paris."
    s = backend.generate([Request(prompt=text, max_tokens=0, prompt_logprobs=True)])[0]
    total = sum(t.logprob for t in (s.prompt_logprobs or ())[1:] if t.logprob is not None)
    detail: dict = {"sum_logprob": total, "tokens": s.tokens_in}
    agree = s.ok and s.prompt_logprobs is not None and s.prompt_logprobs[0].logprob is None
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(args.model)
        ref_model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            logp = torch.log_softmax(ref_model(input_ids=torch.tensor([ids])).logits[0], -1)
        reference = sum(float(logp[i - 1, ids[i]]) for i in range(1, len(ids)))
        detail["transformers_sum_logprob"] = reference
        agree = agree and math.isclose(total, reference, abs_tol=0.05 * len(ids))
        del ref_model
    except Exception as exc:  # transformers missing or the model is not an HF directory
        detail["transformers_check"] = f"skipped: {exc}"
    record("prompt_logprobs", agree, **detail)

    schema = score_schema(1, 5, "feedback")
    j = backend.generate([Request.chat(("user", question + " Answer in JSON."), max_tokens=128,
                                       json_schema=schema)])[0]
    try:
        data = parsing.json_object(j.text, schema)
        record("structured_output", True, parsed=data)
    except parsing.ParseError as exc:
        record("structured_output", False, text=j.text, reason=str(exc))

    seeded = Request.chat(("user", "Name a colour."), max_tokens=8, temperature=1.0, seed=7)
    a, b = backend.generate([seeded, seeded.with_sample(1, seed=7)])
    record("seeded_sampling", a.ok and a.text == b.text, first=a.text, second=b.text)

    system = "You are a fair evaluator. Answer: Feedback: <one sentence> [RESULT] <1-5>."
    batch = [Request.chat(("system", system),
                          ("user", f"Response {i}: the answer to {i} + {i} is {2 * i}."),
                          max_tokens=64) for i in range(args.n)]
    started = time.perf_counter()
    out = backend.generate(batch)
    elapsed = time.perf_counter() - started
    tokens = sum(o.tokens_out or 0 for o in out)
    parsed = 0
    for o in out:
        try:
            parsing.result_score(o.text, 1, 5)
            parsed += 1
        except parsing.ParseError:
            pass
    record("throughput", all(o.ok for o in out), requests=args.n, seconds=round(elapsed, 2),
           requests_per_s=round(args.n / elapsed, 1), output_tokens_per_s=round(tokens / elapsed),
           parsed_rubric_answers=parsed)

    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return 0 if all(c["ok"] for c in checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
