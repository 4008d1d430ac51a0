"""Fixtures for the OpenRLHF live tests: a tokenizer trained in-process, a scripted generator in
vLLM's place, OpenRLHF's rollout modules, and a real `referee serve`.

What is OpenRLHF's own code here: everything under `openrlhf.*` (the executors, the reward file
and agent loaders, the HTTP client, `_process_response_into_experience`). What is not:
- vLLM. OpenRLHF's rollout modules import it at module level, and it only runs on a GPU, so a tiny
  package named `vllm` with the four names they import (`SamplingParams`, `AsyncEngineArgs`,
  `inputs.TokensPrompt`, `utils.random_uuid`) is put on `sys.path`. None of them runs here.
- The LLM engine the executors call (`await llm_engine.generate(token_ids, params)`): a scripted
  one returning the response tokens the test chose, in vLLM's `RequestOutput` shape
  (`outputs[0].token_ids/text/finish_reason/logprobs`), as OpenRLHF's own tests/test_agent.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SPEC = HERE / "spec.yaml"

# A Qwen-style chat template, applied by hand (OpenRLHF applies the tokenizer's template).
TEMPLATE = "<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]

_VLLM_STUB = {
    "__init__.py": (
        '"""Stands in for vLLM (GPU only) so OpenRLHF\'s rollout modules import; nothing here runs."""\n'
        "__version__ = '0.29.0'\n"
        "class SamplingParams:\n"
        "    def __init__(self, **kw):\n"
        "        self.max_tokens = None\n"
        "        self.logprobs = None\n"
        "        self.__dict__.update(kw)\n"
        "class AsyncEngineArgs:\n"
        "    def __init__(self, *a, **kw):\n"
        "        raise RuntimeError('vLLM is not installed in the live tests')\n"
        "class AsyncLLMEngine(AsyncEngineArgs):\n"
        "    pass\n"
    ),
    "inputs.py": "def TokensPrompt(**kw):\n    return dict(kw)\n",
    "utils.py": "import uuid\ndef random_uuid():\n    return uuid.uuid4().hex\n",
}


@pytest.fixture(scope="session")
def tokenizer():
    """A byte-level BPE tokenizer (Qwen's kind) trained in-process: no hub."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    corpus = [
        "What is 6*7? The answer is \\boxed{42}. Half of one is \\frac{1}{2}.",
        "<think>\nsix times seven\n</think>\nIt is \\boxed{42}.",
        "Read the long story carefully, then answer the question at the end.",
        "I don't know. Check your work and give the final answer.",
    ] * 20
    tok.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")


class ScriptedEngine:
    """vLLM's place: `generate` answers the next scripted response, tokenized."""

    def __init__(self, tokenizer, responses):
        self.tokenizer = tokenizer
        self.responses = list(responses)
        self.calls = []

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.calls.append(list(prompt_token_ids))
        text = self.responses.pop(0)
        ids = self.tokenizer(text=text, add_special_tokens=False)["input_ids"]
        out = SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[out])


@pytest.fixture
def engine(tokenizer):
    return lambda *responses: ScriptedEngine(tokenizer, responses)


@pytest.fixture(scope="session")
def rollout(tmp_path_factory):
    """OpenRLHF's rollout modules (`samples_generator`, `vllm_engine`), imported with the vLLM
    stand-in on sys.path, and `SamplingParams` as samples_generator builds it."""
    stub = tmp_path_factory.mktemp("vllm_stub")
    (stub / "vllm").mkdir()
    for name, text in _VLLM_STUB.items():
        (stub / "vllm" / name).write_text(text)
    sys.path.insert(0, str(stub))
    try:
        import vllm

        assert str(stub) in vllm.__file__, "a real vLLM is installed; the stand-in would not be used"
        from openrlhf.trainer.ppo_utils import samples_generator
        from openrlhf.trainer.ray import vllm_engine
    finally:
        sys.path.remove(str(stub))
    return SimpleNamespace(
        samples=samples_generator,
        vllm_engine=vllm_engine,
        SamplingParams=samples_generator.SamplingParams,
        # `_process_response_into_experience` reads no state: OpenRLHF's own tests call it so.
        to_experience=samples_generator.SamplesGenerator.__new__(samples_generator.SamplesGenerator)
        ._process_response_into_experience,
    )


@pytest.fixture(scope="session")
def server():
    """A real `referee serve` on a free loopback port with spec.yaml as `default`; killed after."""
    exe = os.environ.get("REFEREE_BIN", str(ROOT / "target" / "debug" / "referee"))
    proc = subprocess.Popen(
        [exe, "serve", "--host", "127.0.0.1", "--port", "0", "--spec", f"default={SPEC}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        yield json.loads(proc.stdout.readline())["listening"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def spec_env(monkeypatch):
    monkeypatch.setenv("REFEREE_SPEC", str(SPEC))
    return SPEC
