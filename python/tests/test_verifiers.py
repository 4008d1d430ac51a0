"""referee.verifiers: the legacy Rubric reward-function convention (parameters injected by name:
prompt, completion, answer, info, state), compared with `referee score` on the same rollouts.

The verifiers on PyPI (0.4.0) installs here without torch but ships only its v1 Task/Judge API
(no `vf.Rubric`), so scripts/test_py.sh does not install it and these tests check the documented
legacy convention, not a live vf.Rubric."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import referee.verifiers as rvf


def test_rubric_shape_and_scores_match_cli(cli, specs: Path, trl_batch):
    prompts, completions, solutions = trl_batch
    spec = specs / "math_format.yaml"
    rubric = rvf.rubric(spec)
    assert [f.__name__ for f in rubric.funcs] == ["accuracy", "format"]
    assert rubric.weights == [1.0, 0.5]
    for f in rubric.funcs:
        params = inspect.signature(f).parameters
        assert {"prompt", "completion", "answer", "info", "state"} <= set(params)
    # The legacy spec reads item.answer: re-point the math component at it.
    spec2 = spec.read_text().replace("{{item.solution}}", "{{item.answer}}")
    rubric = rvf.rubric(spec2)
    rows = []
    got = []
    for p, c, s in zip(prompts, completions, solutions):
        prompt = [{"role": "user", "content": p}]
        completion = [{"role": "assistant", "content": c}]
        state: dict = {}
        got.append(rubric.score_rollout_sync(prompt, completion, answer=s, state=state, info={"k": 1}))
        assert set(state["referee"]) == {"accuracy", "format"}
        rows.append({"item": {"prompt": prompt, "answer": s, "info": {"k": 1}},
                     "sample": {"messages": completion}})
    want = cli(specs / "math_format.yaml", [
        {"item": {**r["item"], "solution": r["item"]["answer"]}, "sample": r["sample"]} for r in rows])
    assert [g["reward"] for g in got] == [w["reward"] for w in want]
    assert [g["metrics"] for g in got] == [w["components"] for w in want]


def test_string_completion_and_async(specs: Path):
    rubric = rvf.rubric(specs / "label.yaml")
    (f,) = rubric.funcs
    # verifiers injects by name; a label spec reads item.label, absent here: an error, scored 0
    state: dict = {}
    assert f(prompt="q", completion="\\boxed{3}", answer="3", info={}, state=state) == 0.0
    assert state["referee"]["correct"]["status"] == "error"
    spec = {"type": "math_equiv", "name": "correct", "reference": "{{item.answer}}"}
    rubric = rvf.rubric(spec)
    out = asyncio.run(rubric.score_rollout("q", "\\boxed{3}", answer="3"))
    assert out == {"reward": 1.0, "metrics": {"correct": 1.0}}
