class StructuredOutputsParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class SamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
