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
