"""referee.openrlhf's pure logic: rows, the numbers every row gets, flags (the answer itself is
core's `input::openrlhf::reward_answer`, unit-tested there).
OpenRLHF itself runs in python/live/openrlhf/ (its real executors, `/get_reward`, truncation)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from referee.openrlhf import reward_func, rows, score_rows

TEMPLATE = "<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"


def _list(x):
    return x.tolist() if hasattr(x, "tolist") else list(x)


def test_rows_are_openrlhf_rows():
    assert rows(["pq"], ["p"], [{"a": 1}]) == [{"query": "pq", "prompt": "p", "label": {"a": 1}}]
    assert rows(["q", "r"], None, None) == [
        {"query": "q", "prompt": "", "label": None},
        {"query": "r", "prompt": "", "label": None},
    ]


def test_a_batch_the_core_refuses_becomes_flagged_rows():
    class Broken:
        component_names = ["a"]

        def openrlhf_answer(self, *a, **k):
            raise RuntimeError("boom")

    out = score_rows(Broken(), [{}, {}])
    assert out == {"rewards": [0.0, 0.0], "scores": [0.0, 0.0],
                   "extra_logs": {"a": [0.0, 0.0], "referee_error": [1.0, 1.0]}}


def test_prompt_text_is_never_graded(specs: Path):
    prompt = TEMPLATE.format(q="Is it \\boxed{42}?")
    out = reward_func([prompt + "no idea"], [prompt], ["42"], spec=str(specs / "label.yaml"))
    assert _list(out["rewards"]) == [0.0] and out["extra_logs"]["referee_error"] == [0.0]
    out = reward_func([prompt + "\\boxed{42}<|im_end|>"], [prompt], ["42"], spec=str(specs / "label.yaml"))
    assert _list(out["rewards"]) == [1.0]
    # A query that holds no part of its prompt: the boundary is unknown, so an error, not a grade.
    out = reward_func(["\\boxed{42}"], ["something else"], ["42"], spec=str(specs / "label.yaml"))
    assert _list(out["rewards"]) == [0.0] and out["extra_logs"]["referee_error"] == [1.0]


def test_unscorable_rows_get_zero_and_a_flag(specs: Path):
    out = reward_func(["\\boxed{1}"], [""], ["\\frac{"], spec=str(specs / "label.yaml"))
    assert _list(out["rewards"]) == [0.0] and out["scores"] == [0.0]
    assert out["extra_logs"] == {"correct": [0.0], "referee_error": [1.0]}


def test_no_spec_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("REFEREE_SPEC", raising=False)
    with pytest.raises(ValueError, match="no spec"):
        reward_func(["q"], ["p"], ["l"])


# --- agent episodes as trajectories (RefereeAgent's pieces; the agent itself runs in OpenRLHF:
# python/live/openrlhf/test_agent.py) ---------------------------------------------------------

from referee.openrlhf import _feedback, assistant_message, tool_result  # noqa: E402


def test_actions_become_assistant_messages():
    text = ('Let me book.<tool_call>\n{"name": "book", "arguments": {"flight": "LH123"}}\n</tool_call>'
            '<tool_call>{"name": "book", "arguments": "{\\"flight\\": \\"BA456\\"}"}</tool_call>')
    m = assistant_message(text, turn=2)
    assert m == {"role": "assistant", "content": "Let me book.", "tool_calls": [
        {"id": "call_2_0", "type": "function", "function": {"name": "book", "arguments": '{"flight": "LH123"}'}},
        {"id": "call_2_1", "type": "function", "function": {"name": "book", "arguments": '{"flight": "BA456"}'}},
    ]}
    assert assistant_message("<answer>42</answer>") == {"role": "assistant", "content": "<answer>42</answer>"}
    # What is not a call stays in the content as written (a format check still sees it).
    for bad in ["<tool_call>{not json</tool_call>", '<tool_call>["book"]</tool_call>',
                '<tool_call>{"name": 3}</tool_call>', "<tool_call>" + "[" * 100000 + "</tool_call>",
                "<tool_call>unclosed", "<tool_call>" * 200000 + "x"]:
        assert assistant_message(bad) == {"role": "assistant", "content": bad}
    # A call after a broken block is still a call; the broken one stays as written.
    m = assistant_message('<tool_call>{x</tool_call>a<tool_call>{"name": "f"}</tool_call>b')
    assert m["content"] == "<tool_call>{x</tool_call>ab" and m["tool_calls"][0]["function"] == {
        "name": "f", "arguments": "{}"}


def test_tool_results_answer_their_call():
    call = assistant_message('<tool_call>{"name": "book", "arguments": {}}</tool_call>', 1)["tool_calls"][0]
    assert tool_result(call, "booked") == {"role": "tool", "tool_call_id": "call_1_0", "name": "book",
                                           "content": "booked"}
    assert tool_result(call, {"ok": True})["content"] == '{"ok": true}'


def test_feedback_forms():
    turns = [{"role": "tool", "content": "x"}]
    assert _feedback("fb") == ("fb", False, None)
    assert _feedback(None) == ("", False, None)
    assert _feedback(("fb", True)) == ("fb", True, None)
    assert _feedback(("fb", 1, turns)) == ("fb", True, turns)
    assert _feedback({"text": "fb", "done": True, "messages": turns}) == ("fb", True, turns)
    assert _feedback({"done": True}) == ("", True, None)


EPISODE = [
    {"role": "user", "content": TEMPLATE.format(q="Book LH123 seat 12A.")},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1_0", "type": "function", "function": {
        "name": "book", "arguments": '{"flight": "LH123", "seat": "12A"}'}}]},
    {"role": "tool", "tool_call_id": "call_1_0", "name": "book", "content": "booked LH123 seat 12A"},
    {"role": "assistant", "content": "<answer>booked</answer>"},
]
TRAJECTORY_SPEC = {"type": "weighted_sum", "normalize": "none", "weights": [0.8, 0.2], "on_error": -1.0,
                   "inputs": [{"type": "state_match", "name": "booked", "expected": "{{item.label}}"},
                              {"type": "format", "name": "format", "tags": ["answer"],
                               "input": "{{sample.messages[-1].content}}"}]}


def test_episode_rows_score_as_the_cli_scores_them(tmp_path: Path, cli):
    import json

    from referee import _util

    prompt = EPISODE[0]["content"]
    gold = {"bookings": [{"flight": "LH123", "seat": "12A"}]}
    batch = [
        {"query": prompt + "<answer>booked</answer>", "prompt": prompt, "label": gold,
         "messages": EPISODE, "state": gold},
        {"query": prompt + "<answer>booked</answer>", "prompt": prompt, "label": gold,
         "messages": EPISODE, "state": {"bookings": []}},           # said it, did not do it
        {"prompt": prompt, "label": gold, "messages": EPISODE[:2], "state": gold},  # turns alone
        {"query": prompt + "x", "prompt": prompt, "label": gold, "messages": EPISODE, "state": None},
    ]
    ans = score_rows(_util.program(TRAJECTORY_SPEC), batch)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(TRAJECTORY_SPEC))
    want = cli(spec, batch, "--format", "openrlhf")
    assert ans["rewards"] == [w["reward"] if w["reward"] is not None else 0.0 for w in want]
    assert ans["rewards"] == pytest.approx([1.0, 0.2, 0.8, -1.0])
    # No final state: not scored, and says so (the reward is the spec's on_error).
    assert ans["extra_logs"]["referee_error"] == [0.0, 0.0, 0.0, 1.0]
    assert ans["scores"] == [1.0, 0.2, 0.8, 0.0]
