"""referee.verl's own logic: the key set, the NaN-free components, the router URL, the GDPO
overrides, the spec cache. How verl calls it (its managers, DataProto, GDPO's advantages) is
tested inside verl itself: python/live/verl."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest

import referee.verl as rv
from referee import _util

KEYS = {"score", "referee_ok", "referee_error", "referee_not_applicable",
        "referee/correct", "referee/correct/valid", "referee/boxed", "referee/boxed/valid"}


def test_every_row_has_the_same_finite_keys(specs: Path):
    spec = str(specs / "verl_math.yaml")
    rows = [
        rv.compute_score("openai/gsm8k", "\\boxed{72}", "72", {"index": 0}, spec=spec),
        rv.compute_score("lighteval/MATH", "no answer", "\\frac{", None, spec=spec),  # bad gold
        rv.compute_score("x", None, "1", None, spec=spec),  # never becomes a sample
    ]
    assert all(set(d) == KEYS for d in rows)
    assert all(isinstance(v, float) and math.isfinite(v) for d in rows for v in d.values())
    assert rows[0]["score"] == 1.0 and rows[0]["referee_ok"] == 1.0
    bad_gold, unmapped = rows[1], rows[2]
    assert bad_gold["referee_error"] == 1.0 and bad_gold["score"] == 0.0
    assert bad_gold["referee/correct"] == 0.0 and bad_gold["referee/correct/valid"] == 0.0
    assert bad_gold["referee/boxed/valid"] == 1.0
    assert unmapped["referee_error"] == 1.0 and unmapped["referee/boxed/valid"] == 0.0


def test_unknown_keywords_are_ignored_and_async_agrees(monkeypatch, specs: Path):
    spec = str(specs / "verl_math.yaml")
    monkeypatch.setenv("REFEREE_SPEC", spec)
    sync = rv.compute_score(data_source="a", solution_str="\\boxed{1}", ground_truth="1",
                            extra_info={}, experiment_name="e", something_new=3)
    got = asyncio.run(rv.compute_score_async(data_source="a", solution_str="\\boxed{1}",
                                             ground_truth="1", extra_info={}))
    assert sync == got and sync["score"] == 1.0


def test_router_url():
    assert rv.router_url("10.0.0.5:8001") == "http://10.0.0.5:8001/v1"
    assert rv.router_url("[::1]:8001") == "http://[::1]:8001/v1"
    assert rv.router_url("http://h:1/v1/") == "http://h:1/v1"


def test_router_becomes_the_fallback_judge(monkeypatch, specs: Path):
    seen = []
    monkeypatch.setattr(rv, "program", lambda spec, **opts: seen.append(opts) or _util.program(spec))
    spec = str(specs / "verl_math.yaml")

    class Tok:
        name_or_path = "/models/genrm"

    rv.compute_score("a", "1", "1", {}, reward_router_address="h:9", reward_model_tokenizer=Tok(), spec=spec)
    rv.compute_score("a", "1", "1", {}, reward_router_address="h:9", spec=spec, judge_model="m")
    rv.compute_score("a", "1", "1", {}, reward_router_address="h:9", spec=spec, judge="http://j/v1")
    rv.compute_score("a", "1", "1", {}, spec=spec)
    assert seen == [
        {"judge_fallback": "http://h:9/v1", "judge_model": "/models/genrm"},
        {"judge_fallback": "http://h:9/v1", "judge_model": "m"},
        {"judge": "http://j/v1"},
        {},
    ]


def test_gdpo_settings_and_overrides(specs: Path):
    spec = str(specs / "verl_math.yaml")
    assert rv.gdpo_settings(spec) == {"gdpo_reward_keys": ["referee/correct", "referee/boxed"],
                                      "gdpo_reward_weights": [0.9, 0.1]}
    assert rv.gdpo_overrides(spec) == [
        "algorithm.adv_estimator=gdpo",
        "++algorithm.gdpo_reward_keys=['referee/correct','referee/boxed']",
        "++algorithm.gdpo_reward_weights=[0.9,0.1]",
    ]
    # A spec that does not split into weighted parts: GDPO reads the one score.
    one = {"type": "regex", "pattern": "x"}
    assert rv.gdpo_settings(one)["gdpo_reward_keys"] == ["score"]


def test_compiled_once_and_cached(specs: Path):
    spec = str(specs / "verl_math.yaml")
    a = _util.program(spec)
    rv.compute_score("x", "\\boxed{1}", "1", None, spec=spec)
    assert _util.program(spec) is a


def test_missing_spec_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("REFEREE_SPEC", raising=False)
    with pytest.raises(ValueError, match="no spec"):
        rv.compute_score("x", "y", "z")


# --- multi-turn rows (what verl's agent loop hands the reward function) -----------------------

TURNS = [
    {"role": "user", "content": "Book LH123, seat 12A."},
    {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "book", "arguments": '{"flight": "LH123", "seat": "12A"}'}}]},
    {"role": "tool", "content": "booked LH123 seat 12A"},
    {"role": "assistant", "content": "<answer>booked</answer>"},
]
# The decoded response: every turn after the prompt, the tool's words among them.
DECODED = ('<tool_call>{"name": "book", ...}</tool_call>tool\n<tool_response>\nbooked LH123 seat 12A\n'
           '</tool_response>assistant\n<answer>booked</answer>')
GOLD = {"bookings": [{"flight": "LH123", "seat": "12A"}]}


def _extra(**kw):
    # As the naive manager builds it: the dataset's extra_info, the agent loop's extra fields
    # (raw_prompt as an object array, tool_rewards), num_turns as a numpy integer.
    base = {"index": np.int64(0), "raw_prompt": np.array(TURNS[:1], dtype=object),
            "tool_rewards": [0.0], "turn_scores": [], "num_turns": np.int64(4),
            "messages": TURNS, "state": {"bookings": [{"flight": "LH123", "seat": "12A"}]}}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


def test_a_trajectory_row_is_scored_as_the_cli_scores_it(specs: Path, cli):
    spec = specs / "verl_agent.yaml"
    cases = [
        _extra(),                                                  # booked, answered: 1.0
        _extra(state={"bookings": []}),                            # claims it, did not book
        _extra(messages=TURNS[:3] + [{"role": "assistant", "content": "booked"}]),  # no tags
        _extra(num_turns=np.int32(9)),                             # over the turn budget
        _extra(messages=None),                                     # no messages: the decoded text
        _extra(state=None),                                        # no state: cannot be scored
    ]
    got = [rv.compute_score("agent", DECODED, GOLD, e, spec=str(spec)) for e in cases]
    rows = [{"data_source": "agent", "reward_model": {"ground_truth": GOLD}, "response": DECODED,
             "extra_info": {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in e.items()}}
            for e in cases]
    want = cli(spec, rows, "--format", "verl")
    for g, w in zip(got, want):
        assert g["score"] == (w["reward"] if w["reward"] is not None else 0.0)
        assert g["referee_error"] == float(w["status"] == "error")
        for name in ("booked", "format", "turns"):
            assert g[f"referee/{name}"] == (w["components"].get(name) or 0.0)
    assert [g["score"] for g in got] == pytest.approx([1.0, 0.3, 0.8, 0.9, 0.8, -1.0])
    # Without messages the decoded response is graded, and it is no `<answer>` alone.
    assert got[4]["referee/format"] == 0.0
    # No state: an error with the spec's on_error, never a silent 0.
    assert got[5]["referee_error"] == 1.0 and got[5]["referee/booked/valid"] == 0.0


def test_the_tool_result_is_never_the_policys_answer(specs: Path):
    # The decoded response holds the tool's words; with the messages, only the last assistant
    # turn is graded, so a tool that echoes the gold earns nothing.
    spec = {"type": "regex", "pattern": "booked LH123"}
    ok = rv.compute_score("agent", DECODED, GOLD, _extra(), spec=spec)
    plain = rv.compute_score("agent", DECODED, GOLD, _extra(messages=None), spec=spec)
    assert ok["score"] == 0.0 and plain["score"] == 1.0
