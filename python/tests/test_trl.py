"""referee.trl's own logic: names, weights, the rows it builds from TRL's keyword arguments, the
async and single-function forms. Inside the real GRPOTrainer (and compared with the CLI there):
python/live/trl/."""

from __future__ import annotations

import asyncio
import inspect
import pickle
from pathlib import Path

import pytest

import referee
import referee.trl
from referee.trl import _rows


def test_names_and_weights(specs: Path):
    funcs = referee.trl.reward_funcs(specs / "math_format.yaml")
    assert [f.__name__ for f in funcs] == ["accuracy", "format"]
    assert referee.trl.reward_weights(specs / "math_format.yaml") == [1.0, 0.5]
    assert all(not inspect.iscoroutinefunction(f.__call__) for f in funcs)
    afuncs = referee.trl.reward_funcs(specs / "math_format.yaml", asynchronous=True)
    assert [f.__name__ for f in afuncs] == ["accuracy", "format"]
    assert all(inspect.iscoroutinefunction(f.__call__) for f in afuncs)


def test_rows_keep_data_columns_and_skip_the_rest():
    class Image:  # what a PIL image is to the adapter: not row data
        pass

    rows = _rows(
        ["p1", "p2"], ["c1", "c2"],
        {"solution": ["1", "2"], "images": [Image(), Image()], "short": ["x"],
         "trainer_state": [1, 2], "log_extra": print, "meta": [{"a": 1}, None]},
    )
    assert rows == [
        {"solution": "1", "meta": {"a": 1}, "prompt": "p1", "completion": "c1"},
        {"solution": "2", "meta": None, "prompt": "p2", "completion": "c2"},
    ]
    assert _rows(None, ["c"], {}) == [{"completion": "c"}]


def test_rows_keep_numpy_columns():
    np = pytest.importorskip("numpy")
    rows = _rows(["p"], ["c"], {"num_turns": [np.int32(2)], "arr": [np.arange(2)]})
    assert rows[0]["num_turns"] == 2 and list(rows[0]["arr"]) == [0, 1]


def test_completions_pass_through_unchanged():
    msg = {"role": "assistant", "reasoning_content": "r", "tool_calls": [{"type": "function"}]}
    (row,) = _rows([[{"role": "user", "content": "q"}]], [[msg]], {})
    assert row["completion"] == [msg] and row["completion"][0] is msg


def test_one_function_for_a_spec_that_is_not_a_sum(specs: Path):
    (f,) = referee.trl.reward_funcs(specs / "label.yaml")
    assert f.__name__ == "correct"
    assert referee.trl.reward_weights(specs / "label.yaml") == [1.0]
    assert f(prompts=["q"], completions=["\\boxed{7}"], label=["7"]) == [1.0]
    assert f(completions=["\\boxed{8}"], label=["7"]) == [0.0]  # without prompts
    with pytest.raises(TypeError, match="completions"):
        f(prompts=["q"])


def test_program_and_dict_specs(specs: Path):
    prog = referee.compile(specs / "math_format.yaml")
    assert [f.__name__ for f in referee.trl.reward_funcs(prog)] == ["accuracy", "format"]
    spec = {"type": "weighted_sum", "normalize": "abs_sum", "weights": [3, -1],
            "inputs": [{"type": "format", "style": "r1"}, {"type": "regex", "pattern": "sorry"}]}
    funcs = referee.trl.reward_funcs(spec)
    assert [f.__name__ for f in funcs] == ["format", "regex"]
    assert referee.trl.reward_weights(spec) == [0.75, -0.25]
    assert funcs[1](prompts=["q"], completions=["I am sorry"]) == [1.0]
    whole = referee.trl.reward_func(spec)
    assert whole.__name__ == "referee"
    assert whole(prompts=["q"], completions=["I am sorry"]) == [-0.25]
    # Dict specs pickle too (async_grpo's rollout process recompiles them).
    back = pickle.loads(pickle.dumps(funcs + [whole]))
    assert back[2](prompts=["q"], completions=["I am sorry"]) == [-0.25]


def test_single_function_sums_the_components(specs: Path):
    spec = specs / "math_format.yaml"
    comps = referee.trl.reward_funcs(spec)
    whole = referee.trl.reward_func(spec, asynchronous=True, name="math")
    assert whole.__name__ == "math"
    kwargs = dict(prompts=["q"] * 3, completions=["\\boxed{1}", "<think>a</think><answer>2</answer>",
                                                  "\\boxed{3}"], solution=["1", "2", "\\frac{"])
    got = asyncio.run(whole(**kwargs))
    acc, fmt = (f(**kwargs) for f in comps)
    assert got[:2] == [a + 0.5 * b for a, b in zip(acc[:2], fmt[:2])]
    assert acc[2] is None and got[2] is None  # an unparseable gold: no reward, not a 0


def test_status_and_errors_are_logged(specs: Path):
    (acc, _) = referee.trl.reward_funcs(specs / "math_format.yaml")
    extra, metrics = {}, {}
    out = acc(prompts=["q", "q"], completions=["\\boxed{1}", "\\boxed{2}"], solution=["1", "\\frac{"],
              log_extra=lambda col, vals: extra.__setitem__(col, list(vals)),
              log_metric=lambda name, v: metrics.__setitem__(name, v))
    assert out[0] == 1.0 and out[1] is None
    assert extra["accuracy/status"][0] == "ok" and extra["accuracy/status"][1] not in ("ok", "error")
    assert metrics["referee/accuracy/errors"] == 1.0


def test_a_bad_spec_fails_when_the_functions_are_made():
    with pytest.raises(referee.SpecError):
        referee.trl.reward_func({"type": "nonesuch"})


# Environments (``environment_factory``): TRL passes ``environments`` and multi-turn completions.
ENV_SPEC = """
grader:
  type: weighted_sum
  normalize: none
  weights: [1.0, 0.5]
  inputs:
    - {type: state_match, name: booked, expected: "{{item.expected_state}}", mode: exact}
    - {type: string_check, name: confirmed, operation: eq, reference: "{{item.confirmation}}",
       input: "{{sample.messages[tool=book][-1].content}}"}
"""
BOOKED = {"bookings": [{"day": "tue", "time": "10:00"}]}


def call(name: str, **arguments) -> dict:
    """An assistant turn as TRL's response parser writes it: tool calls, no ids, no content."""
    return {"role": "assistant",
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]}


TOOL_TURN = {"role": "tool", "name": "book", "content": "booked tue 10:00"}
LAST = {"role": "assistant", "content": "Done."}


class PropEnv:
    """The recommended form: a property (TRL offers public methods to the model as tools)."""

    def __init__(self, bookings):
        self.bookings = bookings

    @property
    def referee_state(self):
        return {"bookings": self.bookings}


class MethodEnv:
    def __init__(self, state):
        self._state = state

    def referee_state(self):
        return self._state


class AttrEnv:
    def __init__(self, state):
        self.state = state


class Opaque:
    def book(self, day: str, time: str) -> str:
        return "booked"


class Broken:
    @property
    def referee_state(self):
        raise RuntimeError("database closed")


class AsyncEnv:
    def __init__(self, state):
        self._state = state

    async def referee_state(self):
        await asyncio.sleep(0)
        return self._state


def test_env_state_protocol():
    from dataclasses import dataclass

    @dataclass
    class Db:
        bookings: list

    from referee.trl import env_state

    assert env_state(PropEnv([1])) == {"bookings": [1]}
    assert env_state(MethodEnv({"a": 1})) == {"a": 1}
    db = Db([1])
    assert env_state(AttrEnv(db)) is db  # converted by the core, not here
    assert env_state(Opaque()) is None and env_state(None) is None

    class Both(MethodEnv):
        state = {"not": "this"}

    # `referee_state` wins, and its None means no state (`state` is not tried after it).
    assert env_state(Both({"x": 1})) == {"x": 1}
    assert env_state(Both(None)) is None
    with pytest.raises(ValueError, match="Broken.referee_state: RuntimeError: database closed"):
        env_state(Broken())
    with pytest.raises(ValueError, match="asynchronous=True"):
        env_state(AsyncEnv({"a": 1}))
    assert asyncio.run(referee.trl.env_state_async(AsyncEnv({"a": 1}))) == {"a": 1}


def test_env_rows_are_referee_rows():
    from referee.trl import env_rows

    prompt = [{"role": "user", "content": "Book tue 10:00."}]
    c = [call("book", day="tue", time="10:00"), TOOL_TURN, LAST]
    rows = env_rows([prompt, prompt, "q"], [c, [LAST], "text"],
                    {"expected_state": [BOOKED] * 3, "environment": ["cal"] * 3,
                     "trainer_state": [1, 2, 3]},
                    [BOOKED, None, {"n": 1}])
    assert rows[0] == {"item": {"expected_state": BOOKED, "environment": "cal", "prompt": prompt},
                       "sample": {"messages": c, "state": BOOKED}}
    assert rows[0]["sample"]["messages"] is c  # the trajectory as TRL built it
    assert rows[1]["sample"] == {"messages": [LAST]}  # no state: no key
    assert rows[2]["sample"] == {"output_text": "text", "state": {"n": 1}}


def env_batch():
    """Four rollouts of one prompt: booked right, a claim with no call, two bookings (the
    confirmation text is right, the state is not), and an environment with no state."""
    prompt = [{"role": "user", "content": "Book tue 10:00."}]
    right = [call("book", day="tue", time="10:00"), TOOL_TURN, LAST]
    claim = [{"role": "assistant", "content": "I booked tue 10:00 for you."}]
    spray = [call("book", day="tue", time="11:00"),
             {"role": "tool", "name": "book", "content": "booked tue 11:00"},
             call("book", day="tue", time="10:00"), TOOL_TURN, LAST]
    envs = [PropEnv(BOOKED["bookings"]), PropEnv([]),
            AttrEnv({"bookings": [{"day": "tue", "time": "11:00"}, *BOOKED["bookings"]]}),
            Opaque()]
    kwargs = dict(prompts=[prompt] * 4, completions=[right, claim, spray, list(right)],
                  completion_ids=[[1]] * 4, expected_state=[BOOKED] * 4,
                  confirmation=["booked tue 10:00"] * 4, environments=envs)
    return kwargs


def test_environments_reach_the_spec(cli, tmp_path):
    kwargs = env_batch()
    booked, confirmed = referee.trl.reward_funcs(ENV_SPEC)
    whole = referee.trl.reward_func(ENV_SPEC)
    extra = {}
    got_booked = booked(**kwargs, log_extra=lambda col, vals: extra.__setitem__(col, list(vals)))
    got_confirmed = confirmed(**kwargs)
    got = whole(**kwargs)
    # The state decides the booking; the last `book` result decides the confirmation; the
    # environment without state is not scored by any function (None, not 0).
    assert got_booked == [1.0, 0.0, 0.0, None]
    assert got_confirmed == [1.0, 0.0, 1.0, None]
    assert got == [1.5, 0.0, 0.5, None]
    assert extra["booked/status"] == ["ok", "ok", "ok", "missing_field"]
    # The CLI on the same rows, written independently of the adapter.
    states = [BOOKED, {"bookings": []}, kwargs["environments"][2].state, None]
    rows = [{"item": {"prompt": p, "expected_state": e, "confirmation": k},
             "sample": {"messages": c, **({"state": s} if s is not None else {})}}
            for p, c, e, k, s in zip(kwargs["prompts"], kwargs["completions"],
                                     kwargs["expected_state"], kwargs["confirmation"], states)]
    spec = tmp_path / "env.yaml"
    spec.write_text(ENV_SPEC)
    want = cli(spec, rows)
    assert got == [w["reward"] for w in want]
    assert got_booked == [w["components"].get("booked") if w["reward"] is not None else None
                          for w in want]


def test_environments_async_and_unreadable_state(caplog):
    kwargs = env_batch()
    kwargs["environments"] = [AsyncEnv(BOOKED), Broken(), AsyncEnv({"bookings": []}), Opaque()]
    whole = referee.trl.reward_func(ENV_SPEC, asynchronous=True)
    with caplog.at_level("WARNING", logger="referee.trl"):
        got = asyncio.run(whole(**kwargs))
    assert got == [1.5, None, 0.5, None]  # the state that could not be read is not a 0
    assert "1 of 4 environments" in caplog.text and "database closed" in caplog.text
    # The synchronous form cannot await the getter: those states are unreadable, not scored.
    sync = referee.trl.reward_func(ENV_SPEC)
    assert sync(**kwargs) == [None, None, None, None]
    with pytest.raises(ValueError, match="3 environments for 4 completions"):
        sync(**{**kwargs, "environments": kwargs["environments"][:3]})
