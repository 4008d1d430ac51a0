"""examples/openrlhf/agent_func.py and tool_agent_func.py through OpenRLHF 0.11.2's own loader
(`_load_agent_executor`, what `--train.agent_func_path` runs) and its real
`MultiTurnAgentExecutor`, on CPU: the scripted generator answers each turn in vLLM's place. The
episode's reward (the spec on the last answer; for the tool agent, the trajectory: its turns and
the environment's final state) is compared with `referee score`, and goes through OpenRLHF's
tensor conversion."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SPEC = HERE / "spec.yaml"
AGENT_FILE = str(ROOT / "examples" / "openrlhf" / "agent_func.py")
PROMPT = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"

EPISODES = [
    # (label, turn 1, turn 2): the spec grades turn 2
    ("42", "\\boxed{41}", "<think>\nsix times seven\n</think>\n<answer>\\boxed{42}</answer>"),
    ("42", "\\boxed{42}", "I don't know"),
    ("\\frac{", "\\boxed{1}", "\\boxed{1}"),  # unscorable: on_error, flagged
]


def _episode(rollout, engine, label, turns):
    executor = rollout.vllm_engine._load_agent_executor(AGENT_FILE)
    eng = engine(*turns)
    params = rollout.SamplingParams(temperature=1.0, max_tokens=None, logprobs=None)
    out = asyncio.run(executor.execute(PROMPT, label, params, 512, eng.tokenizer, eng))
    return out, eng


@pytest.mark.parametrize("label,first,last", EPISODES)
def test_agent_episode_reward_is_the_specs(label, first, last, spec_env, engine, rollout, cli):
    out, eng = _episode(rollout, engine, label, [first, last])
    assert len(eng.calls) == 2 and len(out["action_ranges"]) == 2  # two turns ran
    want = cli(SPEC, [{"item": {"prompt": PROMPT, "label": label}, "sample": {"output_text": last}}], "--format", "referee")[0]
    reward = want["reward"] if want["reward"] is not None else 0.0
    assert out["reward"] == pytest.approx(reward)  # turn 1 gave 0; OpenRLHF sums the turns
    score = out["scores"].item()
    assert 0.0 <= score <= 1.0 and score == pytest.approx(min(1.0, max(0.0, reward)))
    logs = out["extra_logs"]
    assert logs["referee_error"] == float(want["status"] == "error")
    for name, v in want["components"].items():
        assert logs[name] == (0.0 if v is None else v)
    assert all(math.isfinite(v) for v in logs.values())
    exp = rollout.to_experience(out, max_len=512)
    assert torch.isfinite(exp.rewards).all() and 0.0 <= exp.scores.flatten()[0].item() <= 1.0
    assert set(logs) <= set(exp.info)


def test_agent_feedback_reaches_the_second_turn(spec_env, engine, rollout):
    out, eng = _episode(rollout, engine, "42", ["\\boxed{41}", "\\boxed{42}"])
    second_prompt = eng.tokenizer.decode(eng.calls[1], skip_special_tokens=False)
    assert second_prompt.startswith(PROMPT + "\\boxed{41}") and "Check your work" in second_prompt


def test_agent_grades_the_episode_when_asked(spec_env, engine, rollout, monkeypatch):
    # grade = "episode": everything after the prompt, as an `openrlhf` row (prompt boundary found
    # by the core); the turn-1 answer is in it.
    executor = rollout.vllm_engine._load_agent_executor(AGENT_FILE)
    monkeypatch.setattr(executor.agent_instance_cls, "grade", "episode")
    eng = engine("\\boxed{42}", "I am not sure any more.")
    params = rollout.SamplingParams(max_tokens=None, logprobs=None)
    out = asyncio.run(executor.execute(PROMPT, "42", params, 512, eng.tokenizer, eng))
    assert out["extra_logs"]["referee_error"] == 0.0 and out["reward"] == 1.0


def test_agent_episode_with_a_left_truncated_prompt(spec_env, engine, rollout, monkeypatch):
    # MultiTurnAgentExecutor cuts a long first observation from the left and decodes the kept
    # tokens as `observation_text`; the prompt's tail here holds the right answer.
    executor = rollout.vllm_engine._load_agent_executor(AGENT_FILE)
    monkeypatch.setattr(executor.agent_instance_cls, "grade", "episode")
    prompt = PROMPT.replace("What is 6*7?", "Hint: \\boxed{42}. " + "Read the long story carefully. " * 10 + "Is it \\boxed{42}?")
    eng = engine("I have no idea.", "Still no idea.")
    n = len(eng.tokenizer(text=prompt, add_special_tokens=False)["input_ids"])
    params = rollout.SamplingParams(max_tokens=32, logprobs=None)
    out = asyncio.run(executor.execute(prompt, "42", params, n // 2 + 32, eng.tokenizer, eng))
    assert len(eng.calls[0]) == n // 2 < n  # OpenRLHF truncated the prompt
    assert "\\boxed{42}" in eng.tokenizer.decode(eng.calls[0], skip_special_tokens=False)
    reward, error = out["reward"], out["extra_logs"]["referee_error"]
    assert reward <= 0.0 and (reward == 0.0 or error == 1.0)  # never the prompt's answer


# --- a tool-using episode scored as a trajectory (examples/openrlhf/tool_agent_func.py) --------

TOOL_AGENT = str(ROOT / "examples" / "openrlhf" / "tool_agent_func.py")
TOOL_SPEC = ROOT / "examples" / "openrlhf" / "tool_spec.yaml"
TOOL_PROMPT = "<|im_start|>user\nBook flight LH123, seat 12A.<|im_end|>\n<|im_start|>assistant\n"
GOLD = {"bookings": [{"flight": "LH123", "seat": "12A"}]}
CALL = '<tool_call>\n{{"name": "book", "arguments": {{"flight": "LH123", "seat": "{}"}}}}\n</tool_call>'
ANSWER = "<answer>booked</answer>"

TOOL_EPISODES = [
    # (the policy's turns, the reward): 0.8 for the bookings, 0.2 for the final answer's tags
    ([CALL.format("12A"), ANSWER], 1.0),
    ([ANSWER], 0.2),                                  # claims the booking, never made it
    ([CALL.format("12B"), ANSWER], 0.2),              # booked the wrong seat
    (["<tool_call>{not json</tool_call>"], 0.0),      # a broken call is no call: it ends there
    ([CALL.format("12A")] * 4, 0.8),                  # stopped at max_turns, mid-call
]


def _tool_episode(rollout, engine, turns, monkeypatch, final_state=None):
    import referee.openrlhf as ro

    monkeypatch.setenv("REFEREE_SPEC", str(TOOL_SPEC))
    executor = rollout.vllm_engine._load_agent_executor(TOOL_AGENT)
    if final_state is not None:
        monkeypatch.setattr(executor.agent_instance_cls, "final_state", final_state)
    scored = []
    real = ro.score_rows
    monkeypatch.setattr(ro, "score_rows", lambda prog, batch: scored.extend(batch) or real(prog, batch))
    eng = engine(*turns)
    params = rollout.SamplingParams(temperature=1.0, max_tokens=None, logprobs=None)
    out = asyncio.run(executor.execute(TOOL_PROMPT, GOLD, params, 1024, eng.tokenizer, eng))
    return out, eng, scored


@pytest.mark.parametrize("turns,reward", TOOL_EPISODES)
def test_tool_episode_reward_is_the_trajectory_specs(turns, reward, engine, rollout, cli, monkeypatch):
    out, eng, scored = _tool_episode(rollout, engine, turns, monkeypatch)
    assert len(eng.calls) == len(turns) == len(out["action_ranges"])  # every turn ran
    (row,) = scored  # scored once, at done
    want = cli(TOOL_SPEC, [row], "--format", "openrlhf")[0]
    assert want["status"] == "ok" and out["reward"] == pytest.approx(want["reward"]) == reward
    assert out["extra_logs"]["referee_error"] == 0.0
    assert out["extra_logs"]["booked"] == want["components"]["booked"]
    assert out["scores"].item() == pytest.approx(min(1.0, max(0.0, reward)))
    exp = rollout.to_experience(out, max_len=1024)  # OpenRLHF's own tensor conversion
    assert exp.rewards.tolist() == pytest.approx([reward]) and "booked" in exp.info


def test_tool_episode_trajectory(engine, rollout, monkeypatch):
    out, eng, (row,) = _tool_episode(rollout, engine, [CALL.format("12A"), ANSWER], monkeypatch)
    # The environment's answer reached the policy's second turn, in the chat template's tool turn.
    second = eng.tokenizer.decode(eng.calls[1], skip_special_tokens=False)
    assert second.startswith(TOOL_PROMPT + CALL.format("12A"))
    assert "<tool_response>\nbooked LH123 seat 12A\n</tool_response>" in second
    call = {"id": "call_1_0", "type": "function",
            "function": {"name": "book", "arguments": '{"flight": "LH123", "seat": "12A"}'}}
    assert row["messages"] == [
        {"role": "user", "content": TOOL_PROMPT},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1_0", "name": "book", "content": "booked LH123 seat 12A"},
        {"role": "assistant", "content": ANSWER},
    ]
    assert row["state"] == GOLD and row["label"] == GOLD
    # A template selects the tool's turn through the call it answers.
    spec = {"type": "string_check", "operation": "eq", "reference": "booked LH123 seat 12A",
            "input": "{{sample.messages[tool=book][-1].content}}"}
    assert score_one(spec, row) == 1.0


def score_one(spec, row):
    from referee import compile

    (r,) = compile(spec).score_detailed([row], format="openrlhf")
    return r.reward


def test_tool_episode_without_a_state_is_flagged(engine, rollout, cli, monkeypatch):
    # An environment that records no final state: the state_match cannot be scored. The reward
    # is the spec's on_error (-1), flagged, a number OpenRLHF can turn into a tensor.
    out, _, (row,) = _tool_episode(rollout, engine, [CALL.format("12A"), ANSWER], monkeypatch,
                                   final_state=lambda self: None)
    want = cli(TOOL_SPEC, [row], "--format", "openrlhf")[0]
    assert want["status"] == "error" and want["reason"] == "missing_field"
    assert out["reward"] == -1.0 and out["extra_logs"]["referee_error"] == 1.0
    assert out["scores"].item() == 0.0
    exp = rollout.to_experience(out, max_len=1024)
    assert exp.rewards.tolist() == [-1.0] and exp.info["referee_error"].tolist() == [1.0]
