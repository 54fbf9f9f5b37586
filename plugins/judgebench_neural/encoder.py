"""A Hugging Face encoder with length-sorted batching and an embedding cache.

One `Encoder` per (model directory, revision, device, dtype) is shared by every metric of a
process (`get_encoder`), with one cache keyed by (kind, text), so a text that recurs (e.g. 11
references shared by 16 systems) is embedded once whichever metric asks. Two kinds of
embedding:

- token embeddings of one layer, L2-normalised, with their token ids (BERTScore);
- one pooled sentence embedding per text, L2-normalised, pooled the way the model's
  sentence-transformers config says (mean, CLS, max or mean/sqrt(len)), else by mean.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judgebench.plugin_api import InputError, JudgebenchError
from judgebench_neural.loading import ModelRef, offline, resolve_device, resolve_dtype

#: Default bound on cached embeddings per encoder (bytes of float32 data).
CACHE_BYTES = 2 << 30


@dataclass(frozen=True)
class TokenEmbedding:
    """One text's token ids and its unit-length token vectors at one layer (float32)."""

    ids: np.ndarray  # (n,) int64
    vectors: np.ndarray  # (n, d) float32, rows of norm 1


class EmbeddingCache:
    """Least-recently-used map from (kind, text) to an embedding, bounded in bytes."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[tuple[str, str], tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Any | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: tuple[str, str], value: Any, size: int) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes and len(self._items) > 1:
                _, (_, old) = self._items.popitem(last=False)
                self.bytes -= old

    def __len__(self) -> int:
        return len(self._items)


class Encoder:
    """A local encoder (tokenizer + model) that embeds texts in length-sorted batches."""

    def __init__(self, ref: ModelRef, *, device: str = "auto", dtype: str = "auto",
                 cache_bytes: int = CACHE_BYTES) -> None:
        offline()
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        self.ref = ref
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        shown = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            self.config = AutoConfig.from_pretrained(ref.path, local_files_only=True)
            self.tokenizer = AutoTokenizer.from_pretrained(ref.path, local_files_only=True)
            if _needs_prefix_space(self.tokenizer):
                self.tokenizer = AutoTokenizer.from_pretrained(
                    ref.path, local_files_only=True, add_prefix_space=True
                )
            model = AutoModel.from_pretrained(
                ref.path, local_files_only=True, dtype=getattr(torch, self.dtype)
            )
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load encoder from {ref.path}: {exc}", field="model") from exc
        finally:
            if shown:
                hf_logging.enable_progress_bar()
        if getattr(self.config, "is_encoder_decoder", False):
            model = model.get_encoder()
        self.model = model.eval().to(self.device)
        self.num_layers = int(getattr(self.config, "num_hidden_layers", 0) or 0)
        self.max_length = _max_length(self.tokenizer, self.config)
        self.pooling, self.pooled_max_length, self.lowercase = _sentence_config(
            ref.path, self.max_length
        )
        # Padded tokens per forward pass: on 2 CPU cores ~8k tokens ran fastest (fewer,
        # larger matrix products; padding kept low by sorting); a GPU takes far more.
        self.max_batch_tokens = 65536 if self.device.startswith("cuda") else 8192
        self.cache = EmbeddingCache(cache_bytes)
        self._blocks = _layer_stack(model, self.num_layers)
        self._lock = threading.Lock()

    # -- tokens -------------------------------------------------------------------------
    def token_ids(self, texts: Sequence[str], max_length: int | None = None) -> list[list[int]]:
        """Ids with special tokens, as BERTScore tokenises: stripped text, truncated."""
        if not texts:
            return []
        encoded = self.tokenizer(
            [t.strip() for t in texts], add_special_tokens=True, truncation=True,
            max_length=max_length or self.max_length,
        )
        return [list(ids) for ids in encoded["input_ids"]]

    # -- token embeddings ---------------------------------------------------------------
    def token_embeddings(self, texts: Sequence[str], *, layer: int,
                         batch_size: int = 128) -> list[TokenEmbedding]:
        """Unit-length token vectors of `layer` (0 = input embeddings) for each text."""
        if not 0 <= layer <= self.num_layers:
            raise InputError(f"layer={layer} is out of range: {self.ref.name} has layers "
                             f"0..{self.num_layers}", field="layer")
        kind = f"tokens@{layer}"
        return self._cached(kind, texts, lambda todo: self._embed_tokens(todo, layer, batch_size))

    def _embed_tokens(self, texts: list[str], layer: int, batch_size: int) -> list[Any]:
        import torch

        ids = self.token_ids(texts)
        out: list[Any] = [None] * len(texts)
        for batch in _length_batches([len(i) for i in ids], batch_size, self.max_batch_tokens):
            hidden, mask = self._forward([ids[i] for i in batch], layer)
            hidden = torch.nn.functional.normalize(hidden.float(), dim=-1).cpu()
            lengths = mask.sum(dim=1).tolist()
            for row, index in enumerate(batch):
                vectors = hidden[row, : lengths[row]].numpy().copy()
                out[index] = (TokenEmbedding(np.asarray(ids[index], dtype=np.int64), vectors),
                              vectors.nbytes + len(ids[index]) * 8)
        return out

    def _forward(self, batch_ids: list[list[int]], layer: int) -> tuple[Any, Any]:
        """Hidden states of `layer` for a padded batch, stopping the model after that layer."""
        import torch

        padded = self.tokenizer.pad({"input_ids": batch_ids}, return_tensors="pt")
        input_ids = padded["input_ids"].to(self.device)
        mask = padded["attention_mask"].to(self.device)
        with self._lock, torch.inference_mode():
            if layer == self.num_layers:
                hidden = self.model(input_ids=input_ids, attention_mask=mask)[0]
            elif self._blocks is not None and layer > 0:
                hidden = _run_until(self.model, self._blocks[layer - 1], input_ids, mask)
            else:
                out = self.model(input_ids=input_ids, attention_mask=mask,
                                 output_hidden_states=True)
                hidden = out.hidden_states[layer]
        return hidden, mask.cpu()

    # -- sentence embeddings ------------------------------------------------------------
    def sentence_embeddings(self, texts: Sequence[str], *, batch_size: int = 128) -> np.ndarray:
        """(n, d) float32 unit vectors, pooled as the model's sentence config says."""
        rows = self._cached("pooled", texts, lambda todo: self._embed_sentences(todo, batch_size))
        if not rows:
            width = int(getattr(self.config, "hidden_size", 0) or 0)
            return np.zeros((0, width), dtype=np.float32)
        return np.stack(rows)

    def _embed_sentences(self, texts: list[str], batch_size: int) -> list[Any]:
        import torch

        prepared = [t.strip().lower() if self.lowercase else t.strip() for t in texts]
        encoded = self.tokenizer(prepared, add_special_tokens=True, truncation=True,
                                 max_length=self.pooled_max_length)
        ids = [list(i) for i in encoded["input_ids"]]
        out: list[Any] = [None] * len(texts)
        for batch in _length_batches([len(i) for i in ids], batch_size, self.max_batch_tokens):
            hidden, mask = self._forward([ids[i] for i in batch], self.num_layers)
            pooled = _pool(hidden.float().cpu(), mask, self.pooling)
            pooled = torch.nn.functional.normalize(pooled, dim=-1).numpy().astype(np.float32)
            for row, index in enumerate(batch):
                out[index] = (pooled[row], pooled[row].nbytes)
        return out

    # -- cache --------------------------------------------------------------------------
    def _cached(self, kind: str, texts: Sequence[str], embed: Any) -> list[Any]:
        results: list[Any] = [None] * len(texts)
        todo: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            hit = self.cache.get((kind, text))
            if hit is None:
                todo.setdefault(text, []).append(i)
            else:
                results[i] = hit
        if todo:
            unique = list(todo)
            for text, (value, size) in zip(unique, embed(unique), strict=True):
                self.cache.put((kind, text), value, size)
                for i in todo[text]:
                    results[i] = value
        return results


# -- shared encoders ------------------------------------------------------------------------
_ENCODERS: dict[tuple[str, str, str, str], Encoder] = {}
_ENCODERS_LOCK = threading.Lock()


def get_encoder(ref: ModelRef, *, device: str = "auto", dtype: str = "auto") -> Encoder:
    """The process-wide encoder for this model, device and dtype (loaded on first use)."""
    resolved = resolve_device(device)
    key = (str(ref.path), ref.revision, resolved, resolve_dtype(dtype, resolved))
    with _ENCODERS_LOCK:
        encoder = _ENCODERS.get(key)
        if encoder is None:
            encoder = Encoder(ref, device=resolved, dtype=key[3])
            _ENCODERS[key] = encoder
        return encoder


def release_encoders() -> None:
    """Drop every loaded encoder and its cache (frees memory; the next use reloads)."""
    with _ENCODERS_LOCK:
        _ENCODERS.clear()


# -- helpers --------------------------------------------------------------------------------
def _length_batches(lengths: Sequence[int], batch_size: int,
                    max_tokens: int = 32768) -> list[list[int]]:
    """Indices sorted by length (longest first), cut into batches of at most `batch_size`
    texts and `max_tokens` padded tokens, so little compute goes to padding."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = lengths[current[0]] if current else lengths[index]
        if current and (len(current) >= batch_size or (len(current) + 1) * width > max_tokens):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


class _Stop(Exception):
    def __init__(self, hidden: Any) -> None:
        self.hidden = hidden


def _run_until(model: Any, block: Any, input_ids: Any, mask: Any) -> Any:
    """Run `model` until `block` has produced its output, skipping the layers above it."""

    def hook(_module: Any, _inputs: Any, output: Any) -> None:
        raise _Stop(output[0] if isinstance(output, tuple) else output)

    handle = block.register_forward_hook(hook)
    try:
        model(input_ids=input_ids, attention_mask=mask)
    except _Stop as stop:
        return stop.hidden
    finally:
        handle.remove()
    raise JudgebenchError("encoder finished without reaching the requested layer")


def _layer_stack(model: Any, num_layers: int) -> Any | None:
    """The ModuleList of transformer blocks (BERT `encoder.layer`, GPT-2 `h`, T5 `block`)."""
    import torch

    if num_layers <= 0:
        return None
    for _name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == num_layers:
            return module
    return None


def _pool(hidden: Any, mask: Any, mode: str) -> Any:
    import torch

    weights = mask.unsqueeze(-1).to(hidden.dtype)
    if mode == "cls":
        return hidden[:, 0]
    if mode == "max":
        return hidden.masked_fill(weights == 0, float("-inf")).max(dim=1).values
    summed = (hidden * weights).sum(dim=1)
    counts = weights.sum(dim=1).clamp(min=1e-9)
    if mode == "mean_sqrt_len":
        return summed / torch.sqrt(counts)
    return summed / counts


def _needs_prefix_space(tokenizer: Any) -> bool:
    # BERTScore encodes GPT-2/RoBERTa-family text with a leading space, as inside a sentence.
    name = type(tokenizer).__name__
    return any(family in name for family in ("GPT2", "Roberta", "Bart", "Longformer"))


def _max_length(tokenizer: Any, config: Any) -> int:
    limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
    positions = int(getattr(config, "max_position_embeddings", 0) or 0)
    if positions and (not limit or limit > positions):
        limit = positions
    return limit or 512


def _sentence_config(path: Path, max_length: int) -> tuple[str, int, bool]:
    """Pooling mode, max length and lowercasing from a sentence-transformers model folder."""
    pooling, lowercase = "mean", False
    bert_config = path / "sentence_bert_config.json"
    if bert_config.is_file():
        data = json.loads(bert_config.read_text())
        max_length = min(max_length, int(data.get("max_seq_length") or max_length))
        lowercase = bool(data.get("do_lower_case", False))
    modules = path / "modules.json"
    if modules.is_file():
        for module in json.loads(modules.read_text()):
            if module.get("type", "").endswith("Pooling"):
                config = path / module.get("path", "") / "config.json"
                if config.is_file():
                    pooling = _pooling_mode(json.loads(config.read_text()))
    return pooling, max_length, lowercase


def _pooling_mode(config: dict[str, Any]) -> str:
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config.get("pooling_mode_max_tokens"):
        return "max"
    if config.get("pooling_mode_mean_sqrt_len_tokens"):
        return "mean_sqrt_len"
    return "mean"
