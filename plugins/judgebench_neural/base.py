"""What every model-based metric of this plugin shares: model, device, dtype, batch options
and a signature that names the model and its revision."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from judgebench.plugin_api import MAX_BATCH, EmptyText, Metric, Outcome, Sample, Status, require
from judgebench_neural.encoder import Encoder, get_encoder
from judgebench_neural.loading import DEFAULT_ENCODER, ModelRef, resolve_device, resolve_model

#: Options that change speed or memory but never a score; kept out of signatures.
RUNTIME_OPTIONS = ("device", "batch_size")


Dtype = Literal["auto", "float32", "float16", "bfloat16"]


class ModelOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = DEFAULT_ENCODER
    device: str = Field(default="auto", pattern=r"^(auto|cpu|cuda(:\d+)?)$")
    dtype: Dtype = "auto"
    batch_size: int = Field(default=128, ge=1, le=MAX_BATCH)  # texts per forward pass, at most


ModelOptionsT = TypeVar("ModelOptionsT", bound=ModelOptions)


class ModelMetric(Metric[ModelOptionsT]):
    """A metric that runs one local model given by the `model` option."""

    model_label = "model"
    parallel_safe = False  # one model in memory, not one per worker process
    #: The extra of pyproject.toml that brings `modules`, which the signature checks import.
    extra: ClassVar[str] = "neural"
    modules: ClassVar[tuple[str, ...]] = ("torch", "transformers")

    @cached_property
    def model_ref(self) -> ModelRef:
        return resolve_model(self.options.model, what=self.model_label)

    def resolved_dtype(self) -> str:
        from judgebench_neural.loading import resolve_dtype

        return resolve_dtype(self.options.dtype, resolve_device(self.options.device))

    def signature_fields(self) -> dict[str, str]:
        require(self.info.name, self.extra, *self.modules)
        fields = super().signature_fields()
        for name in RUNTIME_OPTIONS:
            fields.pop(name, None)
        fields["model"] = self.model_ref.name
        fields["rev"] = self.model_ref.revision
        fields["dtype"] = self.resolved_dtype()
        return fields


class EncoderMetric(ModelMetric[ModelOptionsT]):
    """A metric over embeddings from the shared, cached encoder of its model."""

    @property
    def encoder(self) -> Encoder:
        return get_encoder(self.model_ref, device=self.options.device, dtype=self.options.dtype)


#: What the neural metrics do with an empty text: an empty (or blank) output is skipped, as
#: its embedding or likelihood holds only the model's special tokens; an empty text it is
#: compared with is left out, and the sample skipped when none is left.
EMBEDDED_EMPTY = EmptyText(
    output="skipped", reference="skipped", input="skipped",
    note="skipped with the reason 'empty output' (a blank text has no tokens of its own); an "
         "empty reference or input is left out, and the sample skipped when none is left")
SET_EMPTY = EmptyText(
    output="skipped", reference="skipped", input="skipped",
    note="empty (or blank) outputs and texts are left out of the system's sets; the system "
         "is skipped, with the reason, when too few are left")


def texts_or_reason(samples: Sequence[Sample], field: str) -> list[str | Outcome]:
    """Each sample's non-blank `field` text, or a skipped Outcome saying it is missing."""
    found: list[str | Outcome] = []
    for sample in samples:
        text = getattr(sample, field)
        if text is None or not str(text).strip():
            found.append(Outcome.failed(Status.SKIPPED, f"sample has no {field} text"))
        else:
            found.append(str(text))
    return found


def context_texts(sample: Sample, against: str) -> list[str]:
    """The non-blank texts an output is compared with: its references or its input."""
    if against == "input":
        text = sample.input_text
        candidates = [] if text is None else [text]
    else:
        candidates = sample.references
    return [t for t in candidates if t and t.strip()]


def output_contexts(sample: Sample, given: str) -> list[str | None] | Outcome:
    """What a sample's output is scored against: ``[None]`` when `given` is "none", else its
    non-blank `given` texts (see `context_texts`); a skipped Outcome for a blank output or
    when there is no such text."""
    if not sample.output or not sample.output.strip():
        return Outcome.failed(Status.SKIPPED, "empty output")
    if given == "none":
        return [None]
    contexts = context_texts(sample, given)
    if not contexts:
        return Outcome.failed(Status.SKIPPED, f"sample has no {given} text")
    return list(contexts)
