"""Likelihood of the output under a causal LM, BARTScore/GPTScore style.

BARTScore (Yuan et al., 2021) and GPTScore (Fu et al., 2023) score a text y given a context x
by its average token log-probability under a language model:

    score(y | x) = (1 / m) sum_{t=1..m} log p(y_t | prompt(x), y_<t)

with prompt(x) = `template` filled with the input (faithfulness, x -> y) or a reference
(precision, r -> y), or nothing (plain fluency; then the first token, which nothing
conditions, is not scored). `reduce=sum` gives the total log-probability instead.

It runs through any registered backend that returns prompt logprobs (`transformers` on the
CPU, `vllm` on a GPU): one request per (context, output) with ``max_tokens=0`` and
``prompt_logprobs=True``, and the tokens of the prompt part are found from the backend's
own tokenisation (`prompt_ids`, or a second request for the prompt alone), so each output
token is scored exactly once.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judgebench.plugin_api import (
    MAX_BATCH,
    EngineOptions,
    InputError,
    Metric,
    MetricInfo,
    Outcome,
    Sample,
    Status,
    given_engine_options,
    unset_engine_fields,
)
from judgebench_neural.base import EMBEDDED_EMPTY, output_contexts


def _merged() -> Outcome:
    return Outcome.failed(Status.ERROR, "the tokeniser merges the end of the prompt with the "
                          "output; end the template with a space or a newline")


class _LikelihoodCoreOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    backend: str = "transformers"
    model: str | None = None
    #: openai_compat: the base URL of a server you run (e.g. http://127.0.0.1:8000/v1)
    api_base: str | None = None
    #: openai_compat: the environment variable holding the server's API key
    api_key_env: str | None = None
    batch_size: int = Field(default=8, ge=1, le=MAX_BATCH)
    given: Literal["input", "reference", "none"] = "input"
    template: str = "{context}\n"
    reduce: Literal["mean", "sum"] = "mean"
    multi_ref: Literal["max", "mean"] = "max"

    @field_validator("template")
    @classmethod
    def _has_context(cls, value: str) -> str:
        if "{context}" not in value:
            raise ValueError("template must contain {context}")
        try:
            value.format(context="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"template has a placeholder other than {{context}}: {exc}") from None
        return value


class LikelihoodOptions(EngineOptions, _LikelihoodCoreOptions):
    """neural.likelihood's options, then the engine options (listed in this order)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class Likelihood(Metric[LikelihoodOptions]):
    """Mean token log-probability of the output given the input (or a reference)."""

    info = MetricInfo(
        name="neural.likelihood", version="1", kind="reference", requires=("output",),
        empty_text=EMBEDDED_EMPTY,
        value_range=(None, 0.0),
        description="BARTScore/GPTScore-style mean token log-probability of the output given "
                    "the input (given=input), a reference (given=reference) or nothing, under "
                    "a causal LM through any backend with prompt logprobs.",
        citation="Yuan, Neubig and Liu (2021). BARTScore: Evaluating Generated Text as Text "
                 "Generation. NeurIPS. Fu, Ng, Jiang and Liu (2024). GPTScore: Evaluate as You "
                 "Desire. NAACL.",
    )
    Options = LikelihoodOptions
    batch_size = 32
    parallel_safe = False  # calls a model backend

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._backend: Any = None

    @property
    def backend(self) -> Any:
        if self._backend is None:
            kwargs: dict[str, Any] = given_engine_options(self.options)
            if self.options.model is not None:
                kwargs["model"] = self.options.model
            for remote in ("api_base", "api_key_env"):
                if getattr(self.options, remote) is not None:
                    kwargs[remote] = getattr(self.options, remote)
            if self.options.backend == "transformers":
                kwargs["batch_size"] = self.options.batch_size
            try:
                backend = self.host.backend(self.options.backend, **kwargs)
            except (ValueError, RuntimeError) as exc:
                raise InputError(f"neural.likelihood: {exc}", field="model") from None
            if not backend.capabilities.prompt_logprobs:
                raise InputError(f"neural.likelihood needs prompt logprobs, which backend "
                                 f"'{self.options.backend}' cannot return; use transformers "
                                 "or vllm", field="backend")
            self._backend = backend
        return self._backend

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        for name in {"batch_size", "api_base", "api_key_env"} | unset_engine_fields(self.options):
            fields.pop(name, None)
        fields["template"] = json.dumps(self.options.template)
        identity = self.backend.identity()
        fields["model"] = identity.get("model", "none")
        fields["rev"] = identity.get("revision", "none")
        fields["dtype"] = identity.get("dtype", self.options.dtype or "default")
        fields.update({k: v for k, v in identity.items()
                       if k not in ("backend", "model", "revision", "dtype") and v})
        return fields

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        plans: list[list[tuple[str, str]] | Outcome] = []
        for sample in samples:
            contexts = output_contexts(sample, self.options.given)
            if isinstance(contexts, Outcome):
                plans.append(contexts)
                continue
            output = sample.output or ""  # non-blank: output_contexts checked it
            prefix = self.options.template
            plans.append([("" if c is None else prefix.format(context=c), output)
                          for c in contexts])
        pairs = list(dict.fromkeys(p for plan in plans if isinstance(plan, list) for p in plan))
        scored = dict(zip(pairs, self._score_pairs(pairs), strict=True))
        results: list[float | Outcome] = []
        for plan in plans:
            if isinstance(plan, Outcome):
                results.append(plan)
                continue
            found = [scored[p] for p in plan]
            failures = [f for f in found if isinstance(f, Outcome)]
            values = [f for f in found if not isinstance(f, Outcome)]
            if not values:
                results.append(failures[0])
            elif self.options.multi_ref == "max":
                results.append(max(values))
            else:
                results.append(math.fsum(values) / len(values))
        return results

    def _score_pairs(self, pairs: list[tuple[str, str]]) -> list[float | Outcome]:
        from judgebench.plugin_api import Request

        if not pairs:
            return []
        fulls = [Request(prompt=prefix + target, max_tokens=0, prompt_logprobs=True)
                 for prefix, target in pairs]
        boundaries = self._boundaries([prefix for prefix, _ in pairs], fulls)
        responses = self.backend.generate(fulls)
        results: list[float | Outcome] = []
        for response, boundary in zip(responses, boundaries, strict=True):
            if isinstance(boundary, Outcome):
                results.append(boundary)
                continue
            if not response.ok:
                results.append(Outcome.failed(Status.ERROR, f"backend: {response.error}"))
                continue
            count, head = boundary
            scored = response.prompt_logprobs or ()
            if head is not None and [t.token for t in scored[:count]] != head:
                results.append(_merged())
            else:
                results.append(self._reduce(scored, count))
        return results

    def _boundaries(self, prefixes: list[str], fulls: list[Any]
                    ) -> list[tuple[int, list[str] | None] | Outcome]:
        """How many prompt tokens belong to the prefix, and, where the backend cannot
        tokenise for us, the prefix's token strings to check the full prompt against."""
        from judgebench.plugin_api import Request

        backend = self.backend
        unique = list(dict.fromkeys(p for p in prefixes if p))
        out: list[tuple[int, list[str] | None] | Outcome] = []
        tokenise = getattr(backend, "prompt_ids", None)
        if tokenise is not None and len(inspect.signature(tokenise).parameters) == 1:
            heads = {p: tokenise(Request(prompt=p, max_tokens=0, prompt_logprobs=True))
                     for p in unique}
            for prefix, full in zip(prefixes, fulls, strict=True):
                if not prefix:
                    out.append((1, None))  # nothing conditions the first token
                elif list(tokenise(full)[: len(heads[prefix])]) != list(heads[prefix]):
                    out.append(_merged())
                else:
                    out.append((len(heads[prefix]), None))
            return out
        answers = backend.generate([Request(prompt=p, max_tokens=0, prompt_logprobs=True)
                                    for p in unique])
        strings: dict[str, list[str] | Outcome] = {}
        for prefix, answer in zip(unique, answers, strict=True):
            strings[prefix] = ([t.token for t in answer.prompt_logprobs or ()] if answer.ok
                               else Outcome.failed(Status.ERROR, f"backend: {answer.error}"))
        for prefix in prefixes:
            found = strings.get(prefix) if prefix else None
            if isinstance(found, Outcome):
                out.append(found)
            else:
                out.append((len(found), found) if found is not None else (1, None))
        return out

    def _reduce(self, logprobs: Sequence[Any], boundary: int) -> float | Outcome:
        values = [t.logprob for t in logprobs[boundary:]]
        if not values or any(v is None for v in values):
            return Outcome.failed(Status.ERROR, "backend returned no log-probability for "
                                  "some output tokens")
        total = math.fsum(values)
        return total if self.options.reduce == "sum" else total / len(values)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None
