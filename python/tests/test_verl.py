"""referee.verl, called as verl's reward managers call a custom reward function, against
`referee score --format verl` on the same rows."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

import referee.verl as rv
from referee import _util

ROWS = [
    ("openai/gsm8k", "Let me think... #### 72 so \\boxed{72}", "72", {"index": 0, "split": "train"}),
    ("openai/gsm8k", "\\boxed{71}", "72", {"index": 1, "split": "train"}),
    ("lighteval/MATH", "The final answer is \\frac{1}{2}", "0.5", {"index": 2}),
    ("lighteval/MATH", "no answer", "\\frac{", None),  # unparseable gold: an error status
]


def cli_rows():
    return [{"data_source": ds, "reward_model": {"style": "rule", "ground_truth": gt},
             "extra_info": ei or {}, "response": s} for ds, s, gt, ei in ROWS]


def test_compute_score_matches_cli(cli, specs: Path):
    spec = str(specs / "verl_math.yaml")
    want = cli(spec, cli_rows(), "--format", "verl")
    got = [rv.compute_score(ds, s, gt, ei, spec=spec) for ds, s, gt, ei in ROWS]
    keys = {"score", "referee_ok", "referee_error", "referee_not_applicable",
            "referee/correct", "referee/boxed"}
    assert all(set(g) == keys for g in got)
    assert all(isinstance(v, float) for g in got for v in g.values())
    for g, w in zip(got, want):
        assert g["score"] == (w["reward"] if w["reward"] is not None else 0.0)
        assert g["referee_error"] == float(w["status"] == "error")
        for name, v in w["components"].items():
            gv = g[f"referee/{name}"]
            assert (math.isnan(gv) and v is None) or gv == v
    assert [g["score"] for g in got[:3]] == [1.0, 0.1, 0.9]
    assert got[3]["referee_error"] == 1.0 and got[3]["referee_ok"] == 0.0


def test_batch_form_equals_single_calls(specs: Path):
    spec = str(specs / "verl_math.yaml")
    single = [rv.compute_score(ds, s, gt, ei, spec=spec) for ds, s, gt, ei in ROWS]
    batch = rv.compute_score_batch(
        data_sources=[r[0] for r in ROWS], solution_strs=[r[1] for r in ROWS],
        ground_truths=[r[2] for r in ROWS], extra_infos=[r[3] for r in ROWS], spec=spec)
    assert _same(batch, single)


def test_async_form_and_env_var(monkeypatch, specs: Path):
    spec = str(specs / "verl_math.yaml")
    monkeypatch.setenv("REFEREE_SPEC", spec)

    async def main():
        return await asyncio.gather(*[rv.compute_score_async(ds, s, gt, ei) for ds, s, gt, ei in ROWS])

    got = asyncio.run(main())
    assert _same(got, [rv.compute_score(ds, s, gt, ei, spec=spec) for ds, s, gt, ei in ROWS])


def test_compiled_once_and_cached(specs: Path):
    spec = str(specs / "verl_math.yaml")
    a = _util.program(spec)
    rv.compute_score("x", "\\boxed{1}", "1", None, spec=spec)
    assert _util.program(spec) is a


def test_missing_spec_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("REFEREE_SPEC", raising=False)
    with pytest.raises(ValueError, match="no spec"):
        rv.compute_score("x", "y", "z")


def test_rows_that_do_not_map_keep_the_key_set(specs: Path):
    spec = str(specs / "verl_math.yaml")
    d = rv.compute_score("x", None, "1", None, spec=spec)  # a response that is not text
    assert d["referee_error"] == 1.0 and d["score"] == 0.0
    assert math.isnan(d["referee/correct"]) and math.isnan(d["referee/boxed"])


def _same(a, b):
    def norm(d):
        return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}
    return [norm(x) for x in a] == [norm(x) for x in b]


def test_loaded_by_path_as_verl_loads_it(specs: Path):
    # verl's get_custom_reward_fn: the file at custom_reward_function.path is imported as a
    # standalone module, the function taken by name and bound to reward_kwargs.
    import functools
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("custom_module", rv.__file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    try:
        spec.loader.exec_module(module)
        fn = functools.partial(getattr(module, "compute_score"), spec=str(specs / "verl_math.yaml"))
        assert fn(data_source="openai/gsm8k", solution_str="\\boxed{72}", ground_truth="72",
                  extra_info={"index": 0})["score"] == 1.0
        batch = functools.partial(getattr(module, "compute_score_batch"), spec=str(specs / "verl_math.yaml"))
        assert [d["score"] for d in batch(data_sources=["a", "b"], solution_strs=["\\boxed{1}", "2"],
                                          ground_truths=["1", "1"], extra_infos=[{}, {}])] == [1.0, 0.0]
    finally:
        del sys.modules["custom_module"]
