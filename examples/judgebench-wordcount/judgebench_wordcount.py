"""A complete judgebench metric plugin: the output's length relative to its reference."""

from pydantic import BaseModel, ConfigDict

from judgebench.plugin_api import Metric, MetricInfo, Outcome, Status, hookimpl


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt option is an error, not ignored
    unit: str = "words"  # or "chars"; set with -m wordcount.ratio:unit=chars


class LengthRatio(Metric[Options]):  # typed: self.options is an Options
    info = MetricInfo(
        name="wordcount.ratio",
        kind="reference",
        requires=("output", "reference"),
        higher_is_better=False,
        value_range=(0.0, None),
        description="output length / shortest reference length",
    )
    Options = Options

    def _length(self, text: str) -> int:
        return len(text) if self.options.unit == "chars" else len(text.split())

    def score(self, samples):
        results = []
        for sample in samples:
            shortest = min(self._length(r) for r in sample.references)
            if shortest == 0:
                results.append(Outcome.failed(Status.SKIPPED, "empty reference"))
            else:
                results.append(self._length(sample.output) / shortest)
        return results


@hookimpl
def register_metrics(register):
    register(LengthRatio)
