"""Referee's reward functions inside a real TRL GRPOTrainer (2 steps on CPU, tiny random Qwen2,
fixed completions through TRL's rollout_func). What the trainer logs (``rewards/<name>/mean``
per step, the per-row rewards of its completions table, ``log_extra`` columns, ``log_metric``
metrics) must equal ``referee score`` on the completions TRL passed to the reward functions."""

from __future__ import annotations

import math

import numpy as np

import referee.trl

ADD = "Write a program that prints the sum of two integers."
TOOL = "Call the add tool on 1 and 2."
NAMES = ["tests", "think", "calls"]


def gold(live, with_tests: bool = True) -> dict[str, dict]:
    """The dataset columns of each prompt (``tests`` None: a row without its gold)."""
    return {
        ADD: {"tests": live.ADD_TESTS if with_tests else None, "calls": "[]"},
        TOOL: {"tests": [{"input": "", "output": "3\n"}], "calls": live.ADD_CALL_EXPECTED},
    }


def rows(columns: dict[str, dict], conversational: bool = False) -> list[dict]:
    def prompt(k):
        return [{"role": "user", "content": k}] if conversational else k

    return [{"prompt": prompt(k), **cols} for k, cols in columns.items()]


def cli_of_step(live, cli, spec, step, columns, extra=None) -> list[dict]:
    """``referee score --format trl`` on the step's completions, as TRL passed them."""
    data = [
        {"prompt": p, "completion": c, **columns[live.prompt_key(p)], **(extra or {})}
        for p, c in zip(step["prompts"], step["completions"])
    ]
    return cli(spec, data, "--format", "trl")


def assert_logged_equal_cli(live, step, want, names):
    logs = step["logs"]
    for name in names:
        exp = [w["components"][name] for w in want]
        assert live.same(step["rewards"][name], exp), (name, step["rewards"][name], exp)
        mean = logs[f"rewards/{name}/mean"]
        if live.nanmean(exp) is None:
            assert mean is None  # TRL logs an all-NaN column as None
        else:
            assert math.isclose(mean, live.nanmean(exp), abs_tol=1e-6), (name, mean, exp)


def test_standard_dataset(live, cli, spec, tmp_path):
    funcs = referee.trl.reward_funcs(spec)
    weights = referee.trl.reward_weights(spec)
    assert [f.__name__ for f in funcs] == NAMES and weights == [1.0, 0.5, 1.0]
    columns = gold(live)
    steps = live.train(tmp_path, rows(columns), funcs, weights)
    seen = set()
    for step in steps:
        # TRL decoded the fixed completion ids back to the texts (standard format: strings).
        assert all(c in live.COMPLETIONS[p] for p, c in zip(step["prompts"], step["completions"]))
        want = cli_of_step(live, cli, spec, step, columns)
        assert_logged_equal_cli(live, step, want, NAMES)
        # TRL's weighted sum of the functions is the spec's reward.
        assert math.isclose(step["logs"]["reward"], live.nanmean([w["reward"] for w in want]),
                            abs_tol=1e-6)
        assert step["extra"]["tests/status"] == ["ok"] * 8
        assert step["logs"]["referee/tests/errors"] == 0.0
        seen |= {w["components"]["tests"] for w in want} | {w["components"]["calls"] for w in want}
    assert {0.0, 0.5, 1.0} <= seen  # the sandbox ran: right, half right and wrong code


def test_conversational_dataset_with_numpy_fields(live, cli, spec, tmp_path):
    """Conversational prompts, no response parsing: completions are ``[{"role": "assistant",
    "content": text}]``. The rollout_func also returns a numpy field (as agent loops do), which
    TRL passes to the reward functions as a column."""
    funcs = referee.trl.reward_funcs(spec)
    columns = gold(live)
    steps = live.train(tmp_path, rows(columns, conversational=True), funcs,
                       referee.trl.reward_weights(spec), extra={"num_turns": np.int32(1)})
    for step in steps:
        for p, c in zip(step["prompts"], step["completions"]):
            assert c == [{"role": "assistant", "content": c[0]["content"]}]
            assert c[0]["content"] in live.COMPLETIONS[live.prompt_key(p)]
        want = cli_of_step(live, cli, spec, step, columns, extra={"num_turns": 1})
        assert_logged_equal_cli(live, step, want, NAMES)
        assert set(step["extra"]["tests/status"]) == {"ok"}


def test_parsed_messages_async(live, cli, spec, tmp_path):
    """A tokenizer with a response template: TRL parses each completion into
    ``{"role", "reasoning_content", "content", "tool_calls"}`` (transformers 5 response parsing;
    TRL's parse_response sets a missing content to ""). ``async def`` reward functions, which TRL
    awaits together on its event loop."""
    funcs = referee.trl.reward_funcs(spec, asynchronous=True)
    assert all(live.is_async(f) for f in funcs)
    columns = gold(live)
    steps = live.train(tmp_path, rows(columns, conversational=True), funcs,
                       referee.trl.reward_weights(spec), parse=True)
    by_text = {}
    for step in steps:
        want = cli_of_step(live, cli, spec, step, columns)
        assert_logged_equal_cli(live, step, want, NAMES)
        for c, w in zip(step["completions"], want):
            (msg,) = c
            by_text[(msg.get("reasoning_content"), msg["content"], str(msg.get("tool_calls")))] = (
                msg, w["components"])
    msgs = [m for m, _ in by_text.values()]
    assert any("tool_calls" in m and m["content"] == "" for m in msgs)
    assert any("reasoning_content" in m for m in msgs)
    for msg, comp in by_text.values():
        if msg.get("reasoning_content") == "Read both, add them.":
            # The reasoning section is `reasoning_content`; the code is the content.
            assert comp == {"tests": 1.0, "think": 1.0, "calls": 1.0}
        if msg.get("reasoning_content") == "I will call add.":
            assert msg["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 1, "b": 2}}
            assert comp["calls"] == 1.0  # the structured tool_calls are the output tools
        if msg.get("reasoning_content") == "Wrong tool.":
            assert comp["calls"] == 0.0


def test_unscorable_row_is_none(live, cli, spec, tmp_path):
    """A row without its gold (``tests`` null): the spec has no reward for it (the CLI's reward
    is null), so **every** component's function returns None for it, not only ``tests``: TRL
    would otherwise sum ``think`` and ``calls`` and pay the row a reward the spec never gave.
    TRL leaves the row out (no advantage); the run goes on; the statuses and error counts
    reach the trainer's logs."""
    columns = gold(live, with_tests=False)
    steps = live.train(tmp_path, rows(columns), referee.trl.reward_funcs(spec),
                       referee.trl.reward_weights(spec))
    for step in steps:
        want = cli_of_step(live, cli, spec, step, columns)
        no_gold = [live.prompt_key(p) == ADD for p in step["prompts"]]
        assert sum(no_gold) == 4
        for name in NAMES:
            exp = [None if w["reward"] is None else w["components"][name] for w in want]
            assert live.same(step["rewards"][name], exp), (name, step["rewards"][name], exp)
            scored = [e for e in exp if e is not None]
            assert math.isclose(step["logs"][f"rewards/{name}/mean"], sum(scored) / len(scored),
                                abs_tol=1e-6)
        for missing, w, status in zip(no_gold, want, step["extra"]["tests/status"]):
            assert (w["reward"] is None) == missing
            assert status == ("bad_tests" if missing else "ok")
        assert step["extra"]["think/status"] == [
            "bad_tests in tests" if m else "ok" for m in no_gold]
        assert step["logs"]["referee/tests/errors"] == 4.0
        assert step["logs"]["referee/calls/errors"] == 4.0
        # The scored rows' weighted sum is the spec's reward; the others have no advantage.
        assert math.isclose(step["logs"]["reward"],
                            live.nanmean([w["reward"] for w in want]), abs_tol=1e-6)
        for missing, a in zip(no_gold, step["advantages"]):
            assert not math.isnan(a) and (a == 0.0 if missing else True)


def test_single_function_mode(live, cli, spec, tmp_path):
    """``reward_func(spec)``: one function, the whole spec's reward (for trainers that sum
    rewards without weights). One prompt per step: the step of the prompt without its gold has
    every reward None, so TRL logs its mean as None and gives those rows no advantage."""
    f = referee.trl.reward_func(spec)
    assert f.__name__ == "referee"
    columns = gold(live, with_tests=False)
    steps = live.train(tmp_path, rows(columns), [f], batch=4, generations=4)
    assert {live.prompt_key(s["prompts"][0]) for s in steps} == {ADD, TOOL}
    for step in steps:
        want = cli_of_step(live, cli, spec, step, columns)
        got = step["rewards"]["referee"]
        assert live.same(got, [w["reward"] for w in want])
        if live.prompt_key(step["prompts"][0]) == ADD:
            assert all(math.isnan(r) for r in got)
            assert step["logs"]["rewards/referee/mean"] is None
            assert step["advantages"] == [0.0] * 4
            assert step["extra"]["referee/status"] == ["bad_tests"] * 4
            assert step["logs"]["referee/referee/errors"] == 4.0
        else:
            assert math.isclose(step["logs"]["rewards/referee/mean"],
                                live.nanmean([w["reward"] for w in want]), abs_tol=1e-6)
            assert max(got) > 0


def test_step_spec_gives_the_aggregate_and_warns_once(live, cli, tmp_path, caplog):
    """TRL has no per-token rewards: a spec with step credit (each_step) reaches the trainer as
    its aggregate reward per completion, and the adapter says so once, not every batch."""
    import logging

    import referee.trl as rt

    spec = tmp_path / "steps.yaml"
    spec.write_text(
        "grader: {type: each_step, name: process, aggregate: mean, steps: {split: lines},\n"
        "         grader: {type: regex, mode: forbid, pattern: '(?i)do not know|print\\(3\\)'}}\n")
    rt._dense_warned = False
    funcs = referee.trl.reward_funcs(spec)
    assert [f.__name__ for f in funcs] == ["process"]
    with caplog.at_level(logging.WARNING, logger="referee.trl"):
        steps = live.train(tmp_path, rows(gold(live)), funcs)
    warned = [r for r in caplog.records if "per-step credit" in r.getMessage()]
    assert len(steps) == 2 and len(warned) == 1
    seen = set()
    for step in steps:
        want = cli(spec, [{"prompt": p, "completion": c}
                          for p, c in zip(step["prompts"], step["completions"])], "--format", "trl")
        assert all(w["step_rewards"] for w in want)  # the spec did give step credit
        assert live.same(step["rewards"]["process"], [w["reward"] for w in want])
        seen |= {w["reward"] for w in want}
    assert len(seen) > 1 and 0.0 in seen  # the aggregate varies with the steps
