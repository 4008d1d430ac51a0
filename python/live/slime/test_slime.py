"""referee.slime as slime calls a `--custom-rm-path` function, against `referee score`.

slime cannot be installed here: it is not on PyPI (PyPI's `slime` is an unrelated package) and
it needs Megatron-LM and SGLang (GPU). So these tests use `Sample` below, a dataclass with the
fields of `slime.utils.types.Sample` at THUDM/slime 624b824a (2026-08-21) that a reward function
reads or that slime sets before calling it (prompt: str or chat messages, response, label,
metadata, status, group_index, index, reward), and call the adapter the way
`slime/rollout/rm_hub/__init__.py` does at that commit:
- `async_rm`: `load_function(args.custom_rm_path)` (importlib.import_module of the dotted path,
  getattr of the last part), then `await fn(args, sample)`; the result goes into `sample.reward`.
- `batched_async_rm` (`--group-rm`, and custom generate functions that fan out): the same
  function, `await fn(args, samples)`, a list back in order.
- `Sample.get_reward_value(args)`: `sample.reward[args.reward_key]` when `--reward-key` is set.
`args` is slime's argparse namespace: `custom_rm_path`, `reward_key`, `eval_reward_key`,
`group_rm`, plus `referee_spec` as `--custom-config-path` would set it.
"""

from __future__ import annotations

import asyncio
import importlib
from argparse import Namespace
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

SPEC = Path(__file__).resolve().parent / "spec.yaml"


@dataclass
class Sample:
    """slime.utils.types.Sample's fields a reward function sees (624b824a)."""

    group_index: int | None = None
    index: int | None = None
    prompt: str | list[dict[str, str]] = ""
    tokens: list[int] = field(default_factory=list)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None

    class Status(Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    status: Status = Status.PENDING
    metadata: dict = field(default_factory=dict)

    def get_reward_value(self, args) -> float:
        return self.reward if not args.reward_key else self.reward[args.reward_key]


def load_function(path):  # slime.utils.misc.load_function
    module_path, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_path), attr)


def make_args(**kw):
    base = dict(custom_rm_path="referee.slime.rm", reward_key=None, eval_reward_key=None, group_rm=False,
                referee_spec=str(SPEC))
    base.update(kw)
    return Namespace(**base)


async def async_rm(args, sample):
    return await load_function(args.custom_rm_path)(args, sample)


async def batched_async_rm(args, samples):
    return await load_function(args.custom_rm_path)(args, samples)


CASES = [
    ("What is 6*7?", "42", "<think>\nsix sevens\n</think>\n<answer>\\boxed{42}</answer>", Sample.Status.COMPLETED),
    ("What is 6*7?", "42", "\\boxed{41}", Sample.Status.COMPLETED),
    ([{"role": "user", "content": "Half of one?"}], "\\frac{1}{2}", "\\boxed{0.5}", Sample.Status.TRUNCATED),
    ("Unreadable gold", "\\frac{", "\\boxed{1}", Sample.Status.COMPLETED),
]


def samples():
    return [
        Sample(group_index=7, index=i, prompt=p, label=lab, response=r, status=st, metadata={"src": "t"})
        for i, (p, lab, r, st) in enumerate(CASES)
    ]


def want(cli):
    rows = [{"item": {"prompt": p, "label": lab}, "sample": {"output_text": r}} for p, lab, r, _ in CASES]
    return cli(SPEC, rows, "--format", "referee")


def test_rm_returns_the_clis_reward_as_a_float(cli):
    args = make_args()
    wants = want(cli)
    assert [w["status"] for w in wants] == ["ok", "ok", "ok", "error"]
    for s, w in zip(samples(), wants):
        s.reward = asyncio.run(async_rm(args, s))
        assert isinstance(s.reward, float)
        assert s.get_reward_value(args) == (0.0 if w["reward"] is None else w["reward"])
        assert s.metadata["referee_error"] == float(w["status"] == "error")
        assert s.metadata["referee_reason"] == (w.get("reason") if w["status"] == "error" else None)
        assert s.metadata["src"] == "t"


def test_group_rm_returns_a_list_in_order(cli):
    args = make_args(group_rm=True)
    group = samples()
    rewards = asyncio.run(batched_async_rm(args, group))
    assert rewards == [0.0 if w["reward"] is None else w["reward"] for w in want(cli)]
    from referee.slime import group_rm

    assert asyncio.run(group_rm(args, samples())) == rewards


@pytest.mark.parametrize("eval_key", [None, "acc"])
def test_reward_key_gets_a_dict_with_components_and_the_flag(eval_key, cli):
    args = make_args(reward_key="score", eval_reward_key=eval_key)
    for s, w in zip(samples(), want(cli)):
        s.reward = asyncio.run(async_rm(args, s))
        reward = 0.0 if w["reward"] is None else w["reward"]
        assert s.get_reward_value(args) == reward
        if eval_key:
            assert s.reward[eval_key] == reward  # slime's eval path reads --eval-reward-key
        assert s.reward["referee_error"] == float(w["status"] == "error")
        assert {k: s.reward[k] for k in w["components"]} == {
            k: (0.0 if v is None else v) for k, v in w["components"].items()
        }


def test_spec_from_the_environment(monkeypatch, cli):
    monkeypatch.setenv("REFEREE_SPEC", str(SPEC))
    args = make_args(referee_spec=None)
    s = samples()[0]
    assert asyncio.run(async_rm(args, s)) == want(cli)[0]["reward"]
    monkeypatch.delenv("REFEREE_SPEC")
    with pytest.raises(ValueError, match="referee_spec"):
        asyncio.run(async_rm(make_args(referee_spec=None), s))
