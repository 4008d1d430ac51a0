"""referee.verifiers, pure logic: how a Referee result becomes the mapping verifiers sums, and
the removed legacy entry points. The plugin inside verifiers 0.4 itself is tested live in
python/live/verifiers/ (scripts/test_live.sh verifiers)."""

from __future__ import annotations

import asyncio
from pathlib import Path
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


def test_row_of_a_typed_task_and_state():
    """verifiers' shapes, without verifiers: a frozen TaskData-like model (fields left at None
    are not given), a State-like model (its `artifacts` are files, not state)."""
    pydantic = pytest.importorskip("pydantic")

    class Task(pydantic.BaseModel):
        prompt: str
        expected_state: dict | None = None
        info: dict = {}

    class State(pydantic.BaseModel):
        artifacts: dict = {}
        bookings: list = []
        cancelled: str | None = None

    msgs = [{"role": "user", "content": "q"}]
    trace = SimpleNamespace(messages=msgs, state=State(artifacts={"f": b"x"}, bookings=[1]))
    r = rvf.row(Task(prompt="q", expected_state={"bookings": [1]}), trace)
    assert r == {"item": {"prompt": "q", "expected_state": {"bookings": [1]}, "info": {}},
                 "sample": {"messages": msgs, "state": {"bookings": [1], "cancelled": None}}}
    # An unset field is absent, so a spec reading it cannot score the row (not a null to match).
    assert "expected_state" not in rvf.row(Task(prompt="q"), trace)["item"]
    class Base(pydantic.BaseModel):  # verifiers' `State`: only `artifacts`
        artifacts: dict = {}

    # A state with no fields of its own is no state; a mapping is taken as it is.
    assert "state" not in rvf.row({}, SimpleNamespace(messages=msgs, state=Base()))["sample"]
    assert rvf.row({}, SimpleNamespace(messages=msgs, state={"n": 1, "artifacts": {}}))["sample"] == {
        "messages": msgs, "state": {"n": 1}}


def test_plugin_reads_the_state_and_the_tool_turns(tmp_path):
    """The booking spec on a verifiers-shaped trajectory: the final state decides, the last
    result of a `calendar_book` call is the confirmation (matched through its tool_call_id to
    the flat call), and a task without an expected state is unscored, not 0."""
    spec = Path(__file__).resolve().parents[2] / "examples" / "verifiers-booking" / "spec.yaml"
    plugin = rvf.make_reward(spec)
    msgs = [{"role": "user", "content": "Book tuesday 10:00."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "name": "calendar_book",
                 "arguments": '{"day": "tuesday", "time": "10:00"}'}]},
            {"role": "tool", "tool_call_id": "c1", "content": "booked tuesday 10:00"},
            {"role": "assistant", "content": "Booked."}]
    task = {"expected_state": {"bookings": [{"day": "tuesday", "time": "10:00"}]},
            "info": {"confirmation": "booked tuesday 10:00"}}

    def trace(bookings):
        return SimpleNamespace(messages=msgs, state={"bookings": bookings}, metrics={}, info={})

    done = trace(task["expected_state"]["bookings"])
    assert asyncio.run(plugin(task=task, trace=done)) == {"booked": 1.0, "confirmed": 0.5}
    assert asyncio.run(plugin(task=task, trace=trace([]))) == {"booked": 0.0, "confirmed": 0.5}
    bad = trace([])
    with pytest.raises(rvf.UnscoredError, match="missing_field"):
        asyncio.run(plugin(task={"info": task["info"]}, trace=bad))
    assert bad.metrics["referee_error"] == 1.0
    stateless = SimpleNamespace(messages=msgs, state=None, metrics={}, info={})
    with pytest.raises(rvf.UnscoredError, match="missing_field"):
        asyncio.run(plugin(task=task, trace=stateless))


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
