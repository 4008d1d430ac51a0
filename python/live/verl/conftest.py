"""What verl's reward loop needs to run here, built as verl builds it: the trainer config composed
by hydra from verl's own ppo_trainer.yaml, a tokenizer on disk (trained in-process, byte-level, so
decoding gives the text back), a local Ray instance (loopback only), and the generated batch as a
`DataProto` made by verl's `collate_fn`. Only the model's outputs are ours: no GPU, no vLLM."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch

HERE = Path(__file__).resolve().parent
SPECS = HERE / "specs"
PROMPT_LEN, RESPONSE_LEN = 24, 48  # the test module relies on PROMPT_LEN

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<pad>", "<|eos|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(
        ["What is 6 times 12? The answer is \\boxed{72}. #### 72", "Compute 1/2 as a fraction."] * 20,
        trainer,
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<|eos|>",
        clean_up_tokenization_spaces=False,
    )
    out = tmp_path_factory.mktemp("tokenizer")
    fast.save_pretrained(out)
    return out


# A Qwen-style chat template with hermes tool calls, what verl's tool agent loop renders turns
# with (its `hermes` parser reads the calls back).
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'tool' %}<tool_response>\n{{ m['content'] }}\n</tool_response>"
    "{% else %}{{ m['content'] }}{% for tc in (m.get('tool_calls') or []) %}<tool_call>\n"
    "{\"name\": \"{{ tc['function']['name'] }}\", \"arguments\": {{ tc['function']['arguments'] | tojson }}}"
    "\n</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="session")
def chat_model_dir(tmp_path_factory) -> Path:
    """A model directory as verl's agent loop loads it (``HFModelConfig``): a byte-level
    tokenizer with chat-template special tokens (EOS ``<|im_end|>``) and the template above,
    and a config.json (the agent loop reads the model type; no weights: nothing runs a model)."""
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500, special_tokens=["<pad>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([
        '<tool_call>\n{"name": "book", "arguments": {"flight": "LH123", "seat": "12A"}}\n</tool_call>',
        "<tool_response>\nbooked LH123 seat 12A\n</tool_response> user assistant tool",
        "Book flight LH123, seat 12A. <answer>booked</answer>",
    ] * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    out = tmp_path_factory.mktemp("chat_model")
    fast.save_pretrained(out)
    (out / "config.json").write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 500,
        "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 512,
    }))
    return out


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    from verl.utils import hf_tokenizer

    return hf_tokenizer(str(tokenizer_dir))


@pytest.fixture(scope="session")
def free_port():
    def pick() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    return pick


@pytest.fixture(scope="session")
def referee_serve(root, free_port):
    """`referee serve` with the math spec as `default`, on loopback; killed afterwards."""
    exe = os.environ.get("REFEREE_BIN", str(root / "target" / "debug" / "referee"))
    port = free_port()
    proc = subprocess.Popen(
        [exe, "serve", "--spec", f"default={SPECS / 'math.yaml'}", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"referee serve did not start: {proc.stderr.read().decode()}")
            time.sleep(0.1)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory, referee_serve):
    """A local Ray on 127.0.0.1, as verl's run_ppo starts it (with a runtime env for the
    workers: here REFEREE_URL for the serve example)."""
    import ray

    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False,
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": {
            "REFEREE_URL": referee_serve, "TOKENIZERS_PARALLELISM": "false",
            "RAY_USAGE_STATS_ENABLED": "0",
        }},
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def verl_config(tokenizer_dir):
    """``verl_config(*overrides, model=dir)``: verl's trainer config, composed by hydra from its
    own ppo_trainer.yaml, with the overrides a user passes on the command line."""
    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")

    def make(*overrides: str, model=tokenizer_dir):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            return compose(config_name="ppo_trainer", overrides=[
                f"actor_rollout_ref.model.path={model}",
                "reward.num_workers=1",
                *overrides,
            ])

    return make


@pytest.fixture(scope="session")
def make_batch(tokenizer):
    """``make_batch(samples) -> DataProto``: the batch after generation, as the trainer holds it:
    dataset fields (collated by verl's collate_fn), left-padded prompts, right-padded responses
    ending in EOS, and ``__num_turns__`` as the agent loop sets it (np.int32)."""
    from verl import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn

    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id

    def make(samples: list[dict]) -> DataProto:
        rows = []
        for s in samples:
            p = tokenizer.encode(s["prompt"], add_special_tokens=False)[-PROMPT_LEN:]
            r = (tokenizer.encode(s["response"], add_special_tokens=False) + [eos])[:RESPONSE_LEN]
            prompt = torch.tensor([pad] * (PROMPT_LEN - len(p)) + p)
            response = torch.tensor(r + [pad] * (RESPONSE_LEN - len(r)))
            mask = torch.tensor([0] * (PROMPT_LEN - len(p)) + [1] * (len(p) + len(r))
                                + [0] * (RESPONSE_LEN - len(r)))
            rows.append({
                "prompts": prompt, "responses": response,
                "input_ids": torch.cat([prompt, response]), "attention_mask": mask,
                "position_ids": torch.clamp(torch.cumsum(mask, 0) - 1, min=0),
                "response_mask": mask[PROMPT_LEN:],
                "data_source": s["data_source"],
                "reward_model": {"style": "rule", "ground_truth": s["ground_truth"]},
                "extra_info": s["extra_info"],
                "raw_prompt": [{"role": "user", "content": s["prompt"]}],
                "index": s["extra_info"].get("index", 0),
                "tools_kwargs": s["extra_info"].get("tools_kwargs", {}),
                "uid": s["uid"],
            })
        data = DataProto.from_single_dict(collate_fn(rows))
        data.non_tensor_batch["__num_turns__"] = np.array([s["num_turns"] for s in samples], dtype=np.int32)
        return data

    return make


@pytest.fixture(scope="session")
def reward_step():
    """The trainer's reward step (ray_trainer: _compute_reward_colocate, union, extract_reward):
    ``reward_step(config, data)`` gives the batch with the manager's output, verl's reward
    tensor and its extra infos."""

    def run(config, data):
        import ray
        from verl.experimental.reward_loop import RewardLoopManager
        from verl.trainer.ppo.reward import extract_reward

        manager = RewardLoopManager(config)
        try:
            out = manager.compute_rm_score(data)
        finally:
            for w in manager.reward_loop_workers:
                ray.kill(w)
        batch = data.union(out)
        reward_tensor, extra = extract_reward(batch)
        return batch, reward_tensor, extra

    return run
