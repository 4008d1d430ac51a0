"""slime adapter: ``--custom-rm-path referee.slime.rm`` (also with ``--group-rm``).

slime (THUDM/slime; not on PyPI) loads the function named by ``--custom-rm-path`` and awaits
``rm(args, sample)`` for each sample; with ``--group-rm`` (and on its batched paths) it awaits the
same function with a list of samples and wants a list back. ``rm`` takes both; ``group_rm`` is
the list form under its own name.

The spec: ``args.referee_spec`` (set it with ``--custom-config-path cfg.yaml`` holding
``referee_spec: /abs/path/reward.yaml``; slime copies that file's keys onto ``args``), else
``$REFEREE_SPEC``. ``args.referee_judge`` / ``args.referee_judge_model`` name a judge endpoint.

Each sample is the row ``{"item": {"prompt", "label", "metadata", "status"}, "sample":
{"output_text": sample.response}}`` (``group``: ``sample.group_index`` in group mode), so a spec
reads ``{{item.label}}``; ``status`` is ``completed``/``truncated``/... as slime set it.

What comes back, always a number:
- without ``--reward-key``: a float. A sample that could not be scored gets the spec's
  ``on_error`` value, else 0.0, and ``sample.metadata["referee_error"]`` = 1.0 with
  ``sample.metadata["referee_reason"]`` (0.0 and no reason otherwise).
- with ``--reward-key K`` (and ``--eval-reward-key``): a dict ``{K: reward, <component>: value,
  "referee_error": 0.0 | 1.0}``; slime reads ``K``. A component that did not apply is 0.0.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any, Optional, Sequence

from referee._util import program, scored

log = logging.getLogger(__name__)

ERROR_KEY = "referee_error"


def spec_of(args: Any) -> Any:
    import os

    spec = getattr(args, "referee_spec", None) or os.environ.get("REFEREE_SPEC")
    if not spec:
        raise ValueError(
            "no spec: put `referee_spec: /path/spec.yaml` in slime's --custom-config-path file, or set $REFEREE_SPEC"
        )
    return spec


def _program(args: Any) -> Any:
    judge = {
        k: getattr(args, f"referee_{k}")
        for k in ("judge", "judge_model")
        if getattr(args, f"referee_{k}", None) is not None
    }
    return program(spec_of(args), **judge)


def _status(sample: Any) -> Optional[str]:
    s = getattr(sample, "status", None)
    return getattr(s, "value", s if s is None or isinstance(s, str) else str(s))


def row(sample: Any, group: bool = False) -> dict:
    """A slime ``Sample`` (anything with its fields) as a Referee row."""
    metadata = getattr(sample, "metadata", None)
    item = {
        "prompt": getattr(sample, "prompt", ""),
        "label": getattr(sample, "label", None),
        "metadata": metadata if isinstance(metadata, dict) else {},
        "status": _status(sample),
    }
    r: dict = {"item": item, "sample": {"output_text": getattr(sample, "response", "") or ""}}
    if group and getattr(sample, "group_index", None) is not None:
        r["group"] = str(sample.group_index)
    return r


def _number(v: Optional[float]) -> float:
    if v is None:
        return 0.0
    v = float(v)
    return v if math.isfinite(v) else 0.0


def _reward_keys(args: Any) -> list[str]:
    keys = [getattr(args, "reward_key", None), getattr(args, "eval_reward_key", None)]
    return list(dict.fromkeys(k for k in keys if k))


def _out(args: Any, sample: Any, result: Any, names: Sequence[str]) -> Any:
    reward = _number(result.reward if result is not None else None)
    failed = result is None or result.status == "error"
    md = getattr(sample, "metadata", None)
    if isinstance(md, dict):
        md[ERROR_KEY] = float(failed)
        md["referee_reason"] = (result.reason if result is not None else "referee_failed") if failed else None
    keys = _reward_keys(args)
    if not keys:
        return reward
    comps = result.components if result is not None else {}
    out: dict[str, float] = {n: _number(comps.get(n)) for n in names}
    out[ERROR_KEY] = float(failed)
    out.update({k: reward for k in keys})
    return out


def _score(args: Any, samples: Sequence[Any], group: bool) -> list[Any]:
    prog = _program(args)
    names = list(prog.component_names)
    results = scored(prog, [row(s, group) for s in samples], "referee", log)
    return [_out(args, s, r, names) for s, r in zip(samples, results)]


async def group_rm(args: Any, samples: Sequence[Any]) -> list[Any]:
    """``--group-rm``: one reward per sample, in order; the samples share their ``group_index``
    as the row's group, so a group-aware spec sees the group."""
    return await asyncio.to_thread(_score, args, list(samples), True)


async def rm(args: Any, sample: Any) -> Any:
    """``--custom-rm-path referee.slime.rm``: a float (or dict with ``--reward-key``); a list of
    samples (slime's group/batched calls) gets a list."""
    if isinstance(sample, (list, tuple)):
        return await group_rm(args, sample)
    return (await asyncio.to_thread(_score, args, [sample], False))[0]
