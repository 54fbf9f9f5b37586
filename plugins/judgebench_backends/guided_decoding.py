"""Constrained decoding for the transformers backend, with llguidance.

`ConstraintProcessor` is a transformers logits processor: one llguidance `LLMatcher` per
batch row (None for a row without a constraint) follows the tokens generated so far, and at
each step every token the constraint does not allow gets logit -inf (EOS is allowed only
once the answer is complete). `grammar` turns a `Constraint` into an llguidance grammar:
choices as a Lark alternation of string literals, a regex, or a JSON schema compiled without
free whitespace (a small model otherwise pads JSON with newlines up to `max_tokens`) and
with its free top-level strings bounded so that the object closes within `max_tokens`.

llguidance is imported only here and only when a constrained request runs; it is the pinned
optional dependency of the ``local`` extra. `available()` says whether it is installed.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from typing import Any

from judgebench.plugin_api import Constraint

LIBRARY = "llguidance"
_TOKENIZERS: dict[int, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


def available() -> bool:
    return importlib.util.find_spec(LIBRARY) is not None


def grammar(constraint: Constraint, max_tokens: int | None = None) -> str:
    """The llguidance grammar of `constraint`; for a JSON schema with `max_tokens`, its free
    strings bounded (`bounded_strings`) so that the object can close in time."""
    from llguidance import LLMatcher

    if constraint.choices:
        return LLMatcher.grammar_from_lark(
            "start: " + " | ".join(json.dumps(choice) for choice in constraint.choices))
    if constraint.regex is not None:
        return LLMatcher.grammar_from_regex(constraint.regex)
    schema = constraint.json_schema or {}
    if max_tokens is not None:
        schema = bounded_strings(schema, max_tokens)
    return LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})


def bounded_strings(schema: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """`schema` with a ``maxLength`` on each top-level string property that has none, sharing
    what `max_tokens` leaves after the object's keys and punctuation (a token is at least
    one character of ASCII text). Without it a small model writes its feedback string until
    `max_tokens` cuts the JSON off unclosed."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return schema
    free = [name for name, spec in properties.items()
            if isinstance(spec, dict) and spec.get("type") == "string" and "maxLength" not in spec
            and "enum" not in spec]
    if not free:
        return schema
    overhead = 2 + sum(len(name) + 4 for name in properties) + 4 * len(properties)
    share = max(1, (max_tokens - overhead) // len(free))
    bounded = {name: ({**spec, "maxLength": share} if name in free else spec)
               for name, spec in properties.items()}
    return {**schema, "properties": bounded}


def ll_tokenizer(tokenizer: Any, eos_ids: list[int]) -> Any:
    """The llguidance view of a Hugging Face fast tokenizer, read from `tokenizer_json`
    (~1 s to build: one per tokenizer object)."""
    from llguidance import LLTokenizer

    with _TOKENIZERS_LOCK:
        key = id(tokenizer)
        if key not in _TOKENIZERS:
            built = LLTokenizer(tokenizer_json(tokenizer), eos_token=eos_ids)
            _TOKENIZERS[key] = (tokenizer, built)
        return _TOKENIZERS[key][1]


def tokenizer_json(tokenizer: Any) -> str:
    """`tokenizer` serialised for llguidance (no padding, no truncation), its decoder plain
    ``ByteLevel`` when any step of it is ``ByteLevel``.

    llguidance spells each token as bytes by the decoder's type alone: ``ByteLevel`` means
    GPT-2's byte alphabet (``Ġ`` is a space), a ``Sequence`` with ``ByteFallback`` means
    SentencePiece's spelling (``▁`` a space, ``<0xNN>`` a byte, every other character as its
    UTF-8). transformers 4 converts a byte-level GGUF vocabulary under a llama architecture
    (SmolLM2's, Llama 3's) with the decoder ``Sequence[ByteFallback, Fuse, Replace(▁, " "),
    ByteLevel]``: Hugging Face decodes it byte-level (the last step), llguidance read it as
    SentencePiece, and every constraint then refused ``Ġ``."""
    from copy import copy

    backend = copy(tokenizer.backend_tokenizer)
    backend.no_padding()
    backend.no_truncation()
    spec = json.loads(backend.to_str())
    decoder = spec.get("decoder") or {}
    steps = (decoder.get("decoders") or []) if decoder.get("type") == "Sequence" else [decoder]
    byte_level = [step for step in steps if step.get("type") == "ByteLevel"]
    if byte_level and decoder is not byte_level[0]:
        spec["decoder"] = byte_level[0]
    return json.dumps(spec, ensure_ascii=False)


def matcher(tokenizer: Any, eos_ids: list[int], constraint: Constraint,
            max_tokens: int | None = None) -> Any:
    """A fresh matcher for `constraint` (see `grammar`); ValueError if llguidance rejects
    the grammar."""
    from llguidance import LLMatcher

    found = LLMatcher(ll_tokenizer(tokenizer, eos_ids), grammar(constraint, max_tokens),
                      log_level=0)
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
