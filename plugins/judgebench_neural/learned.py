"""Learned metrics: COMET checkpoints and any local sequence-classification model.

`learned.classifier` reads one number per sample from a model with a score head: the single
logit of a reward model or regression cross-encoder (num_labels = 1; `transform=probability`
applies the sigmoid), or for a classifier the logit or softmax probability of one label.
The model sees the output alone, or the pair (input or reference, output) as a cross-encoder.

`learned.comet` runs a COMET checkpoint (Rei et al., 2020) through the `unbabel-comet`
package on src = input, mt = output, ref = each reference.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from judgebench.plugin_api import (
    MAX_BATCH,
    MAX_TOKENS,
    EmptyText,
    InputError,
    JudgebenchError,
    MetricInfo,
    Outcome,
    Sample,
    Status,
    require,
)
from judgebench_neural.base import EMBEDDED_EMPTY, Dtype, ModelMetric, ModelOptions, output_contexts
from judgebench_neural.encoder import _length_batches, _max_length
from judgebench_neural.loading import ModelRef, offline, resolve_device, revision_of
from judgebench_neural.pooling import (
    PooledModel,
    PoolingOptions,
    classifier_task,
    classifier_value,
    pooling_signature,
    uses_pooling,
)


class ClassifierOptions(PoolingOptions, ModelOptions):
    dtype: Dtype = "auto"  # ModelOptions' (the engine option of the same name is a str)
    model: str  # no default: a local sequence-classification model directory
    pair: Literal["none", "input", "reference"] = "none"
    label: int | None = Field(default=None, ge=0, le=MAX_BATCH)
    transform: Literal["logit", "probability"] = "logit"
    multi_ref: Literal["max", "mean"] = "max"
    max_length: int | None = Field(default=None, ge=2, le=MAX_TOKENS)


class Classifier(ModelMetric[ClassifierOptions]):
    """The score head of a local sequence-classification model on the output (or a pair)."""

    info = MetricInfo(
        name="learned.classifier", version="1", kind="learned", requires=("output",),
        empty_text=EMBEDDED_EMPTY,
        description="Any local sequence-classification or reward model (model=DIR): the logit "
                    "or probability of `label` (the single logit when num_labels=1) for the "
                    "output, or for the pair (input|reference, output) with pair=...; "
                    "backend=vllm|vllm_server runs it on vLLM's pooling runner.",
        citation="Cite the model you load. Loading: Wolf et al. (2020). Transformers: "
                 "State-of-the-Art Natural Language Processing. EMNLP (System Demonstrations).",
    )
    Options = ClassifierOptions
    batch_size = 64

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._lock = threading.Lock()
        self._scores: dict[tuple[str | None, str], float] = {}
        self._pooled = PooledModel(self)

    def pooler(self) -> Any:
        return self._pooled.get(self.options, str(self.model_ref.path))

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["label"] = str(self.label)
        return pooling_signature(fields, self.options,
                                 self.pooler() if uses_pooling(self.options) else None)

    def close(self) -> None:
        self._pooled.close()

    @cached_property
    def loaded(self) -> tuple[Any, Any, str]:
        offline()
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        device = resolve_device(self.options.device)
        dtype = getattr(torch, self.resolved_dtype())
        path = self.model_ref.path
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True, dtype=dtype
            )
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load a sequence-classification model from {path}: {exc}",
                             field="model") from exc
        return tokenizer, model.eval().to(device), device

    @cached_property
    def num_labels(self) -> int:
        import json

        config = json.loads((self.model_ref.path / "config.json").read_text())
        if "num_labels" in config:
            return int(config["num_labels"])
        return len(config.get("id2label") or {0: "LABEL_0", 1: "LABEL_1"})

    @property
    def label(self) -> int:
        n = self.num_labels
        if self.options.label is not None:
            if self.options.label >= n:
                raise InputError(f"label={self.options.label} but the model has {n} labels "
                                 f"(0..{n - 1})", field="label")
            return self.options.label
        if n <= 2:
            return n - 1  # the single score, or the positive class of a binary classifier
        raise InputError(f"the model has {n} labels: choose one with label=0..{n - 1}",
                         field="label")

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        label = self.label
        jobs: list[tuple[str | None, str]] = []
        plans: list[list[tuple[str | None, str]] | Outcome] = []
        for sample in samples:
            contexts = output_contexts(sample, self.options.pair)
            if isinstance(contexts, Outcome):
                plans.append(contexts)
                continue
            output = sample.output or ""  # non-blank: output_contexts checked it
            pairs = [(c, output) for c in contexts]
            plans.append(pairs)
            jobs.extend(p for p in pairs if p not in self._scores)
        run = self._run_pooled if uses_pooling(self.options) else self._run
        run(list(dict.fromkeys(jobs)), label)
        results: list[float | Outcome] = []
        for plan in plans:
            if isinstance(plan, Outcome):
                results.append(plan)
                continue
            values = np.array([self._scores[p] for p in plan])
            results.append(float(values.max() if self.options.multi_ref == "max"
                                 else values.mean()))
        return results

    def _run(self, pairs: list[tuple[str | None, str]], label: int) -> None:
        import torch

        if not pairs:
            return
        tokenizer, model, device = self.loaded
        limit = self.options.max_length or _max_length(tokenizer, model.config)
        firsts = [a if a is not None else b for a, b in pairs]
        seconds = [b for a, b in pairs] if self.options.pair != "none" else None
        encoded = tokenizer(firsts, seconds, truncation=True, max_length=limit)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        with self._lock, torch.inference_mode():
            for batch in _length_batches(lengths, self.options.batch_size):
                features = tokenizer.pad(
                    {k: [encoded[k][i] for i in batch] for k in encoded},
                    return_tensors="pt",
                )
                logits = model(**{k: v.to(device) for k, v in features.items()}).logits.float()
                values = _read_head(logits, label, self.options.transform).cpu().tolist()
                for index, value in zip(batch, values, strict=True):
                    self._scores[pairs[index]] = float(value)


    def _run_pooled(self, pairs: list[tuple[str | None, str]], label: int) -> None:
        """`_run` on the pooling backend: see judgebench_neural.pooling for the tasks."""
        if not pairs:
            return
        task = classifier_task(self.num_labels, self.options.pair != "none",
                               self.options.transform)
        inputs: list[Any] = [(a, b) if task == "score" else b for a, b in pairs]
        with self._lock:
            for start in range(0, len(inputs), self.options.batch_size):
                chunk = inputs[start:start + self.options.batch_size]
                vectors = self.pooler().pool(task, chunk)
                for offset, vector in enumerate(vectors):
                    self._scores[pairs[start + offset]] = classifier_value(
                        task, vector, label, self.options.transform)


def _read_head(logits: Any, label: int, transform: str) -> Any:
    import torch

    if logits.shape[-1] == 1:
        column = logits[:, 0]
        return torch.sigmoid(column) if transform == "probability" else column
    if transform == "probability":
        return torch.softmax(logits, dim=-1)[:, label]
    return logits[:, label]


# -- COMET ----------------------------------------------------------------------------------
class CometOptions(ModelOptions):
    model: str  # no default: the path of a COMET checkpoint (.ckpt) on this machine
    batch_size: int = Field(default=16, ge=1, le=MAX_BATCH)
    multi_ref: Literal["max", "mean"] = "max"


COMET_EMPTY = EmptyText(
    output="skipped", reference="scored", input="scored",
    note="an empty (or blank) output is skipped ('empty output'); an empty reference or "
         "source goes to COMET as the empty text it is")


class Comet(ModelMetric[CometOptions]):
    """COMET through the `unbabel-comet` package, from a local checkpoint."""

    info = MetricInfo(
        name="learned.comet", version="1", kind="learned", requires=("output",),
        empty_text=COMET_EMPTY,
        description="COMET (Rei et al. 2020) from a local checkpoint (model=/path/model.ckpt) "
                    "through unbabel-comet: src=input, mt=output, ref=each reference "
                    "(multi_ref=max|mean); reference-free checkpoints need no reference.",
        citation="Rei, Stewart, Farinha and Lavie (2020). COMET: A Neural Framework for MT "
                 "Evaluation. EMNLP.",
    )
    Options = CometOptions
    model_label = "COMET checkpoint"
    batch_size = 64
    extra = "comet"
    modules = ("comet",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.model_ref  # noqa: B018 - fail now, naming what is missing
        self._model: Any = None

    @cached_property
    def model_ref(self) -> ModelRef:
        comet = _import_comet()
        path = Path(self.options.model).expanduser()
        if path.is_dir():  # a downloaded COMET repo: checkpoints/model.ckpt inside
            path = path / "checkpoints" / "model.ckpt"
        if not path.is_file():
            raise InputError(
                f"COMET checkpoint not found at {path}. judgebench never downloads models: "
                "download a checkpoint once (e.g. `huggingface-cli download "
                "Unbabel/wmt22-comet-da --local-dir DIR`, with its encoder in the local "
                "Hugging Face cache) and pass model=DIR or model=DIR/checkpoints/model.ckpt",
                field="model",
            )
        del comet
        return ModelRef(name=self.options.model, path=path.resolve(), revision=revision_of(path))

    def _load(self) -> Any:
        if self._model is None:
            offline()
            comet = _import_comet()
            load = comet.load_from_checkpoint
            kwargs: dict[str, Any] = {}
            if "local_files_only" in inspect.signature(load).parameters:
                kwargs["local_files_only"] = True
            try:
                self._model = load(str(self.model_ref.path), **kwargs)
            except Exception as exc:
                raise JudgebenchError(
                    f"COMET could not load {self.model_ref.path} offline ({exc}); its encoder "
                    "(e.g. xlm-roberta-large) must be in the local Hugging Face cache"
                ) from exc
        return self._model

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        rows: list[dict[str, str]] = []
        owners: list[int] = []
        results: list[float | Outcome | None] = [None] * len(samples)
        for index, sample in enumerate(samples):
            source = sample.input_text
            if not sample.output or not sample.output.strip():
                results[index] = Outcome.failed(Status.SKIPPED, "empty output")
                continue
            refs: Sequence[str | None] = sample.references or [None]
            for ref in refs:
                row = {"src": source or "", "mt": sample.output}
                if ref is not None:
                    row["ref"] = ref
                rows.append(row)
                owners.append(index)
        if rows:
            gpus = 1 if resolve_device(self.options.device).startswith("cuda") else 0
            predicted = self._load().predict(rows, batch_size=self.options.batch_size,
                                             gpus=gpus, progress_bar=False)
            by_sample: dict[int, list[float]] = {}
            for owner, value in zip(owners, predicted.scores, strict=True):
                by_sample.setdefault(owner, []).append(float(value))
            for owner, values in by_sample.items():
                agg = max(values) if self.options.multi_ref == "max" else float(np.mean(values))
                results[owner] = agg
        return [r if r is not None else Outcome.failed(Status.ERROR, "no COMET score")
                for r in results]


def _import_comet() -> Any:
    require("learned.comet", "comet", "comet")
    import comet

    return comet
