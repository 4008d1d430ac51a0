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
