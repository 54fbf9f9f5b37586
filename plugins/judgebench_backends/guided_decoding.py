"""Constrained decoding for the transformers backend, with llguidance.

`ConstraintProcessor` is a transformers logits processor: one llguidance `LLMatcher` per
batch row (None for a row without a constraint) follows the tokens generated so far, and at
each step every token the constraint does not allow gets logit -inf (EOS is allowed only
once the answer is complete). `grammar` turns a `Constraint` into an llguidance grammar:
choices as a Lark alternation of string literals, a regex, or a JSON schema compiled without
free whitespace (a small model otherwise pads JSON with newlines up to `max_tokens`).

llguidance is imported only here and only when a constrained request runs; it is the pinned
optional dependency of the ``local`` extra. `available()` says whether it is installed.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from typing import Any

from judgebench.backends.base import Constraint

LIBRARY = "llguidance"
_TOKENIZERS: dict[int, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


def available() -> bool:
    return importlib.util.find_spec(LIBRARY) is not None


def grammar(constraint: Constraint) -> str:
    """The llguidance grammar of `constraint`."""
    from llguidance import LLMatcher

    if constraint.choices:
        return LLMatcher.grammar_from_lark(
            "start: " + " | ".join(json.dumps(choice) for choice in constraint.choices))
    if constraint.regex is not None:
        return LLMatcher.grammar_from_regex(constraint.regex)
    return LLMatcher.grammar_from_json_schema(
        constraint.json_schema or {}, defaults={"whitespace_flexible": False})


def ll_tokenizer(tokenizer: Any, eos_ids: list[int]) -> Any:
    """The llguidance view of a Hugging Face fast tokenizer (~1 s to build: one per
    tokenizer object)."""
    from llguidance.hf import from_tokenizer

    with _TOKENIZERS_LOCK:
        key = id(tokenizer)
        if key not in _TOKENIZERS:
            _TOKENIZERS[key] = (tokenizer, from_tokenizer(tokenizer, eos_token=eos_ids))
        return _TOKENIZERS[key][1]


def matcher(tokenizer: Any, eos_ids: list[int], constraint: Constraint) -> Any:
    """A fresh matcher for `constraint`; ValueError if llguidance rejects the grammar."""
    from llguidance import LLMatcher

    found = LLMatcher(ll_tokenizer(tokenizer, eos_ids), grammar(constraint), log_level=0)
    if found.is_error():
        raise ValueError(f"the {constraint.kind} constraint cannot be compiled: "
                         f"{found.get_error()}")
    return found


class ConstraintProcessor:
    """A logits processor (``model.generate(logits_processor=[...])``) masking each row's
    logits to the tokens its matcher allows. `prompt_width` is the padded prompt length:
    tokens after it are the generated ones."""

    def __init__(self, matchers: list[Any], prompt_width: int, eos_ids: list[int]) -> None:
        self.matchers = matchers
        self.prompt_width = prompt_width
        self.eos_ids = set(eos_ids)
        self._consumed = [0] * len(matchers)
        self._finished = [False] * len(matchers)
        self.errors: list[str | None] = [None] * len(matchers)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np
        import torch

        generated = input_ids[:, self.prompt_width:].tolist()
        scores = scores.clone()  # generate keeps `scores` as the raw logits (output_logits)
        for row, found in enumerate(self.matchers):
            if found is None or self._finished[row]:
                continue
            for token in generated[row][self._consumed[row]:]:
                self._consumed[row] += 1
                if token in self.eos_ids:
                    self._finished[row] = True
                    break
                if not found.consume_token(token):
                    self.errors[row] = found.get_error() or "a token the constraint refused"
                    self._finished[row] = True
                    break
            if self._finished[row]:
                continue
            allowed = np.frombuffer(found.compute_logit_bias(), dtype=np.uint8)
            vocab = scores.shape[-1]
            mask = torch.ones(vocab, dtype=torch.bool)
            width = min(vocab, allowed.shape[0])
            mask[:width] = torch.from_numpy(allowed[:width] == 0)
            if found.is_accepting():
                for eos in self.eos_ids:
                    if eos < vocab:
                        mask[eos] = False
            if bool(mask.all()):
                self.errors[row] = found.get_error() or "the constraint allows no next token"
                self._finished[row] = True
                continue
            scores[row] = scores[row].masked_fill(mask, float("-inf"))
        return scores
