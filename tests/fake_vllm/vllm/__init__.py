"""Fake vllm (see ../README.md): records engine arguments and calls, answers shaped data."""

from types import SimpleNamespace

from vllm import sampling_params as sampling_params
from vllm.sampling_params import SamplingParams as SamplingParams

__version__ = "0.11.0"

#: every LLM built in this process, in order (tests read `.kwargs` and `.calls`)
ENGINES: list["LLM"] = []
#: the text every generation answers with
REPLY = '{"feedback": "Fine.", "score": 4}'


class Tokenizer:
    """One token per character (id = code point)."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)

    def apply_chat_template(self, messages, tokenize=True, add_generation_prompt=True,
                            continue_final_message=False):
        text = "".join(f"<{m['role']}>{m['content']}" for m in messages)
        if add_generation_prompt:
            text += "<assistant>"
        return self.encode(text)


def _logprob(token_id, value=-0.5):
    return {token_id: SimpleNamespace(logprob=value, rank=1, decoded_token=chr(token_id))}


class LLM:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls = []
        ENGINES.append(self)

    def get_tokenizer(self):
        return Tokenizer()

    def generate(self, prompts, params, use_tqdm=True, lora_request=None):
        self.calls.append({"method": "generate", "prompts": prompts, "params": params,
                           "lora_request": lora_request})
        outputs = []
        for prompt, param in zip(prompts, params, strict=False):
            ids = list(prompt["prompt_token_ids"])
            opts = param.kwargs
            token_ids = [ord(c) for c in REPLY]
            outputs.append(SimpleNamespace(
                prompt_token_ids=ids,
                prompt_logprobs=([None] + [_logprob(t) for t in ids[1:]]
                                 if opts.get("prompt_logprobs") else None),
                outputs=[SimpleNamespace(
                    text=REPLY, token_ids=token_ids, finish_reason="stop",
                    logprobs=[_logprob(t, -0.1) for t in token_ids]
                    if opts.get("logprobs") else None)],
            ))
        return outputs

    # -- pooling runners: one number (or vector) per input, from its length -------------------
    def _pool(self, method, inputs, lora_request, make):
        self.calls.append({"method": method, "inputs": inputs, "lora_request": lora_request})
        return [SimpleNamespace(outputs=make(text)) for text in inputs]

    def classify(self, prompts, use_tqdm=True, lora_request=None):
        return self._pool("classify", prompts, lora_request,
                          lambda t: SimpleNamespace(probs=[0.25, 0.75]))

    def reward(self, prompts, use_tqdm=True, lora_request=None):
        return self._pool("reward", prompts, lora_request,
                          lambda t: SimpleNamespace(data=[float(len(t))]))

    def embed(self, prompts, use_tqdm=True, lora_request=None):
        return self._pool("embed", prompts, lora_request,
                          lambda t: SimpleNamespace(embedding=[float(len(t)), 1.0]))

    def score(self, data_1, data_2, use_tqdm=True, lora_request=None):
        self.calls.append({"method": "score", "inputs": list(zip(data_1, data_2, strict=False)),
                           "lora_request": lora_request})
        return [SimpleNamespace(outputs=SimpleNamespace(score=len(a) / (len(a) + len(b))))
                for a, b in zip(data_1, data_2, strict=False)]
