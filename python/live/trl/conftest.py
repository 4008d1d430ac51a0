"""What the TRL live tests train with, all built in-process (no hub): a byte-level BPE tokenizer
trained here and wrapped as a transformers fast tokenizer with TRL's Qwen3 chat template (and,
for parsed messages, TRL's Qwen3 response template), a random-weight Qwen2 model of width 32,
and a ``rollout_func`` that hands TRL fixed completions (a random model writes gibberish, which
scores 0 everywhere). Everything after the rollout is TRL's own: decoding or response parsing,
with ``environment_factory`` its tool loop (the completions' calls run in the environments, the
model writes the turn after each result), ``_calculate_rewards``, advantages, the loss, the logs."""

from __future__ import annotations

import copy
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM, TrainerCallback
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import add_response_schema, qwen3_chat_template
from trl.trainer.utils import is_async_callable as is_async  # TRL's own test

HERE = Path(__file__).resolve().parent
SPEC = HERE / "spec.yaml"
END = "<|im_end|>"

# The tests of the sandboxed component: a program reading two integers and printing their sum.
ADD_TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "2 5\n", "output": "7\n"}]
ADD_CODE = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
ADD_CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
ADD_CALL_EXPECTED = '[{"name": "add", "arguments": {"a": 1, "b": 2}}]'

# Fixed completions, by prompt: right, half right, wrong, unformatted (ids end with <|im_end|>).
COMPLETIONS = {
    "Write a program that prints the sum of two integers.": [
        f"<think>\nRead both, add them.\n</think>\n{ADD_CODE}",
        "<think>\nThe first test wants 3.\n</think>\n```python\nprint(3)\n```",
        "```python\nprint(a + b)\n```",
        "I do not know.",
    ],
    "Call the add tool on 1 and 2.": [
        f"<think>\nI will call add.\n</think>\n\n{ADD_CALL}",
        ADD_CALL,
        '<think>\nWrong tool.\n</think>\n\n<tool_call>\n{"name": "sub", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
        "<think>\nNo call.\n</think>\n\nThe sum is 3.",
    ],
}

_SPECIAL = ["<|endoftext|>", "<|im_start|>", END]


def _corpus(completions: dict[str, list[str]]) -> list[str]:
    texts = [t for ts in completions.values() for t in ts] + list(completions)
    texts += ["<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_start|>system\n"]
    return texts * 4


def make_tokenizer(parse: bool, completions: Optional[dict] = None) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained in-process (every text round-trips), as a transformers fast
    tokenizer with TRL's Qwen3 chat template. ``parse``: with TRL's Qwen3 response template,
    so GRPOTrainer parses completions into ``{"role", "reasoning_content", "content",
    "tool_calls"}`` messages (transformers 5's response parsing). ``completions``: the fixed
    completions it is trained on (default ``COMPLETIONS``)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=_SPECIAL, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(completions or COMPLETIONS), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=END, pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = qwen3_chat_template
    if parse:
        add_response_schema(fast)  # TRL's own: recognises the Qwen3 template
    return fast


def make_model(tokenizer, max_positions: int = 256) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None, tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(config)


def prompt_key(prompt: Any) -> str:
    return prompt[-1]["content"] if isinstance(prompt, list) else prompt


class FixedRollout:
    """TRL's ``rollout_func``: each prompt's fixed completions in turn (one group of
    ``num_generations`` per prompt gets them all), as token ids ending with ``<|im_end|>``."""

    def __init__(self, tokenizer, completions: dict[str, list[str]], extra: Optional[dict] = None):
        self.tok = tokenizer
        self.completions = completions
        self.extra = extra or {}  # extra fields: TRL hands them to the reward functions as columns
        self.turn: dict[str, int] = defaultdict(int)

    def _ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def __call__(self, prompts: list, trainer) -> dict:
        prompt_ids, completion_ids = [], []
        for p in prompts:
            if isinstance(p, list):
                text = self.tok.apply_chat_template(p, add_generation_prompt=True, tokenize=False)
            else:
                text = p
            key = prompt_key(p)
            options = self.completions[key]
            completion = options[self.turn[key] % len(options)]
            self.turn[key] += 1
            prompt_ids.append(self._ids(text))
            completion_ids.append(self._ids(completion + END))
        out = {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}
        out.update({k: [v] * len(prompts) for k, v in self.extra.items()})
        return out


class Steps(TrainerCallback):
    """Per logging step: the trainer's logs and its completions table (``trainer._logs``: the
    prompts, completions, per-function rewards, ``log_extra`` columns and advantages of the
    step's generation batch, exactly as TRL computed them), and with ``environment_factory``
    copies of the step's environment instances as the reward functions saw them (TRL resets
    them only at the next generation)."""

    def __init__(self):
        self.trainer: Optional[GRPOTrainer] = None
        self.steps: list[dict] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or not any(k.startswith("rewards/") for k in logs):
            return
        t = self.trainer._logs
        self.steps.append({
            "logs": dict(logs),
            "prompts": list(t["prompt"]),
            "completions": list(t["completion"]),
            "rewards": {k: list(v) for k, v in t["rewards"].items()},
            "extra": {k: list(v) for k, v in t["extra"].items()},
            "advantages": list(t["advantages"]),
            "environments": copy.deepcopy(self.trainer.environments),
        })


def train(tmp_path: Path, rows: list[dict], reward_funcs, reward_weights=None, *, parse=False,
          batch: int = 8, generations: int = 4, steps: int = 2,
          extra: Optional[dict] = None, completions: Optional[dict] = None,
          environment_factory=None, max_completion_length: int = 64) -> list[dict]:
    """A real GRPOTrainer: ``steps`` optimizer steps on CPU, one log per step. Returns
    ``Steps.steps``. ``completions``: the fixed completions by prompt (default
    ``COMPLETIONS``); ``environment_factory`` as TRL takes it (then TRL runs the tool calls of
    those completions in the environments and the model writes the turn after each result)."""
    completions = completions or COMPLETIONS
    tok = make_tokenizer(parse, completions)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, fp16=False,
        per_device_train_batch_size=batch, num_generations=generations,
        max_completion_length=max_completion_length, max_steps=steps, logging_steps=1,
        learning_rate=1e-3,
        beta=0.0, report_to="none", save_strategy="no", seed=0,
        reward_weights=reward_weights, dataloader_num_workers=0,
    )
    # Room for the prompt, the completion, tool results and the model's turns after them.
    trainer = GRPOTrainer(
        model=make_model(tok, max_positions=4 * max_completion_length),
        reward_funcs=reward_funcs, args=args,
        train_dataset=Dataset.from_list(rows), processing_class=tok,
        rollout_func=FixedRollout(tok, completions, extra),
        environment_factory=environment_factory,
    )
    cb = Steps()
    cb.trainer = trainer
    trainer.add_callback(cb)
    trainer.train()
    assert len(cb.steps) == steps
    return cb.steps


def nan(v: Optional[float]) -> float:
    return float("nan") if v is None else float(v)


def same(a: list, b: list, tol: float = 1e-6) -> bool:
    """Float lists equal, NaN (or None) matching NaN."""
    if len(a) != len(b):
        return False
    for x, y in zip(map(nan, a), map(nan, b)):
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif abs(x - y) > tol:
            return False
    return True


def nanmean(xs: list) -> Optional[float]:
    vals = [x for x in map(nan, xs) if not math.isnan(x)]
    return sum(vals) / len(vals) if vals else None


@pytest.fixture(scope="session")
def spec() -> Path:
    return SPEC


@pytest.fixture(scope="session")
def live():
    """This module: the helpers above (test files cannot import a conftest by name)."""
    import sys

    return sys.modules[__name__]
