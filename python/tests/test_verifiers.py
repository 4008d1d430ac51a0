"""referee.verifiers, pure logic: how a Referee result becomes the mapping verifiers sums, and
the removed legacy entry points. The plugin inside verifiers 0.4 itself is tested live in
python/live/verifiers/ (scripts/test_live.sh verifiers)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

import referee.verifiers as rvf


def result(reward, status="ok"):
    return SimpleNamespace(reward=reward, status=status, reason=None, message=None, components={})


def test_contributions_are_weighted_values_when_they_add_up():
    parts = [("accuracy", 1.0, 1.0), ("format", 0.5, 0.0), ("tool", 0.25, 1.0)]
    assert rvf.contributions(result(1.25), parts) == {"accuracy": 1.0, "format": 0.0, "tool": 0.25}


def test_contributions_rescaled_when_a_component_did_not_apply():
    # normalize: sum, weights [2, 1, 1] -> parts 0.5/0.25/0.25; `format` did not apply, so the
    # root renormalised over 3: reward (2*1 + 1*0.5)/3. The shares are w·v/Σw over those applied.
    parts = [("accuracy", 0.5, 1.0), ("format", 0.25, None), ("tool", 0.25, 0.5)]
    got = rvf.contributions(result(2.5 / 3), parts)
    assert set(got) == {"accuracy", "tool"}
    assert got["accuracy"] == pytest.approx(2 / 3) and got["tool"] == pytest.approx(0.5 / 3)
    assert sum(got.values()) == pytest.approx(2.5 / 3)


def test_contributions_single_part_is_the_reward():
    assert rvf.contributions(result(0.3), [("reward", 1.0, None)]) == {"reward": 0.3}


def test_contributions_nothing_to_scale():
    got = rvf.contributions(result(0.2), [("a", 0.5, 0.0), ("b", 0.5, 0.0)])
    assert sum(got.values()) == pytest.approx(0.2)


def test_row_from_duck_typed_task_and_trace():
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    trace = SimpleNamespace(messages=msgs, state=None)
    assert rvf.row({"answer": "4"}, trace) == {"item": {"answer": "4"}, "sample": {"messages": msgs}}


def test_plugin_scores_and_raises(specs):
    plugin = rvf.make_reward(specs / "label.yaml")
    ok = SimpleNamespace(messages=[{"role": "assistant", "content": "\\boxed{3}"}], state=None,
                         metrics={}, info={})
    assert asyncio.run(plugin(task={"label": "3"}, trace=ok)) == {"correct": 1.0}
    assert ok.metrics == {"referee_error": 0.0, "referee/correct": 1.0}
    bad = SimpleNamespace(messages=ok.messages, state=None, metrics={}, info={})
    with pytest.raises(rvf.UnscoredError, match="missing_field"):
        asyncio.run(plugin(task={}, trace=bad))
    assert bad.metrics["referee_error"] == 1.0


def test_legacy_entry_points_point_to_the_plugin(specs):
    for f in (rvf.rubric, rvf.reward_funcs):
        with pytest.raises(RuntimeError, match="referee.verifiers:reward"):
            f(specs / "math_format.yaml")
