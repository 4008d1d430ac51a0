"""referee.verl's own logic: the key set, the NaN-free components, the router URL, the GDPO
overrides, the spec cache. How verl calls it (its managers, DataProto, GDPO's advantages) is
tested inside verl itself: python/live/verl."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

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
