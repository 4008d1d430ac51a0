"""OpenRLHF 0.11.2's reward path with Referee, live: its real `SingleTurnAgentExecutor` loads
examples/openrlhf/reward_func.py (`--reward.remote_url <file>.py`) or posts to a real
`referee serve`'s `/get_reward` (`--reward.remote_url http://...`), and its real
`_process_response_into_experience` turns the answer into the tensors training uses. Every result
is compared with `referee score` on the response the scripted generator produced (the CLI's
`referee` rows: item `{prompt, label}`, output the response)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
import torch
from openrlhf.utils.agent import SingleTurnAgentExecutor

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SPEC = HERE / "spec.yaml"
TEMPLATE = "<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"

REWARD_FILE = str(ROOT / "examples" / "openrlhf" / "reward_func.py")

# (question, label, response). The response tokens are what vLLM would return (EOS included).
CASES = [
    ("What is 6*7?", "42", "<think>\nsix times seven\n</think>\n<answer>\\boxed{42}</answer>"),
    ("What is 6*7?", "42", "It is \\boxed{42}.<|im_end|>"),
    ("What is 6*7?", "42", "\\boxed{41}<|im_end|>"),
    ("Half of one?", "\\frac{1}{2}", "So \\boxed{0.5}<|endoftext|>"),
    ("Half of one?", "\\frac{1}{2}", "I don't know"),
    ("Unreadable gold", "\\frac{", "\\boxed{1}"),  # nobody can score this row
]


def _value(x):
    """A reward/score/log value as OpenRLHF stores it (tensor, list of one, or number)."""
    if isinstance(x, torch.Tensor):
        return x.flatten()[0].item()
    if isinstance(x, list):
        assert len(x) == 1
        return _value(x[0])
    return float(x)


def _run(executor, engine, prompt, label, response, *, max_len=1024, max_tokens=None):
    from types import SimpleNamespace

    params = SimpleNamespace(max_tokens=max_tokens, logprobs=None)
    eng = engine(response)
    out = asyncio.run(executor.execute(prompt, label, params, max_len, eng.tokenizer, eng))
    return out, eng


def _want(cli, rows):
    res = cli(SPEC, rows, "--format", "referee")
    return [
        {
            "reward": 0.0 if r["reward"] is None else r["reward"],
            "error": float(r["status"] == "error"),
            "components": {k: (0.0 if v is None else v) for k, v in r.get("components", {}).items()},
        }
        for r in res
    ]


def _check(out, want, rollout):
    """One executor output against the CLI's result, and through OpenRLHF's tensor conversion."""
    assert out["reward"] is not None, "OpenRLHF would drop the reward (it logs and leaves None)"
    assert _value(out["reward"]) == pytest.approx(want["reward"])
    score = _value(out["scores"])
    assert 0.0 <= score <= 1.0 and score == pytest.approx(min(1.0, max(0.0, want["reward"])))
    logs = out["extra_logs"]
    assert _value(logs["referee_error"]) == want["error"]
    for name, v in want["components"].items():
        assert _value(logs[name]) == pytest.approx(v)
    for v in logs.values():
        assert math.isfinite(_value(v)), "OpenRLHF averages extra_logs: no NaN"
    exp = rollout.to_experience(out, max_len=1024)
    assert torch.isfinite(exp.rewards).all() and torch.isfinite(exp.scores).all()
    assert exp.rewards.flatten()[0].item() == pytest.approx(want["reward"])
    assert 0.0 <= exp.scores[0].item() <= 1.0  # what dynamic filtering reads


@pytest.mark.parametrize("url", ["file", "http"])
def test_executor_scores_like_the_cli(url, server, spec_env, engine, rollout, cli):
    executor = SingleTurnAgentExecutor(REWARD_FILE if url == "file" else server + "/get_reward")
    assert (executor.reward_func is not None) == (url == "file")
    rows = [{"item": {"prompt": TEMPLATE.format(q=q), "label": lab}, "sample": {"output_text": r}} for q, lab, r in CASES]
    wants = _want(cli, rows)
    assert [w["error"] for w in wants] == [0, 0, 0, 0, 0, 1]
    assert wants[0]["reward"] == 1.5 and wants[-1]["reward"] == -0.5  # both get clamped in scores
    for (q, lab, resp), want in zip(CASES, wants):
        out, _ = _run(executor, engine, TEMPLATE.format(q=q), lab, resp)
        _check(out, want, rollout)


def test_file_and_http_agree(server, spec_env, engine, rollout):
    local = SingleTurnAgentExecutor(REWARD_FILE)
    remote = SingleTurnAgentExecutor(server + "/get_reward")
    for q, lab, resp in CASES:
        a, _ = _run(local, engine, TEMPLATE.format(q=q), lab, resp)
        b, _ = _run(remote, engine, TEMPLATE.format(q=q), lab, resp)
        assert _value(a["reward"]) == _value(b["reward"]) and _value(a["scores"]) == _value(b["scores"])
        assert _value(a["extra_logs"]["referee_error"]) == _value(b["extra_logs"]["referee_error"])


LONG = "Read the long story carefully, then answer the question at the end. " * 12


@pytest.mark.parametrize("url", ["file", "http"])
def test_left_truncated_prompt_is_not_graded(url, server, spec_env, engine, rollout, cli):
    """OpenRLHF cuts a prompt longer than max_len - max_tokens from the left
    (`prompt_token_ids[-max_prompt_length:]`) and decodes the kept tokens plus the response as the
    query, while `prompts` holds the whole prompt. The prompt's tail here holds the right answer."""
    executor = SingleTurnAgentExecutor(REWARD_FILE if url == "file" else server + "/get_reward")
    prompt = TEMPLATE.format(q="Hint: the answer is \\boxed{42}. " + LONG + "Is the answer \\boxed{42}?")
    tok = engine("").tokenizer
    n_prompt = len(tok(text=prompt, add_special_tokens=False)["input_ids"])
    max_len, max_tokens = n_prompt // 2 + 16, 16
    for resp, right in [("I have no idea.", False), ("It is \\boxed{42}.", True)]:
        out, eng = _run(executor, engine, prompt, "42", resp, max_len=max_len, max_tokens=max_tokens)
        kept = eng.calls[0]
        assert len(kept) == max_len - max_tokens < n_prompt  # OpenRLHF truncated the prompt
        query = tok.decode(kept, skip_special_tokens=False)
        assert not query.startswith(prompt[:40]) and "\\boxed{42}" in query  # the answer is still in it
        reward, error = _value(out["reward"]), _value(out["extra_logs"]["referee_error"])
        if right:
            # the core found where the truncated prompt ends: the response alone is graded
            want = _want(cli, [{"item": {"prompt": prompt, "label": "42"}, "sample": {"output_text": resp}}])[0]
            _check(out, want, rollout)
        else:
            # never the prompt's \boxed{42}: a 0 for the response, or prompt_not_found (flagged)
            assert reward <= 0.0 and (reward == 0.0 or error == 1.0)
