"""verl adapter: a custom reward function.

    custom_reward_function.path=<site-packages>/referee/verl.py   (or a file that imports it)
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.spec=/path/to/spec.yaml   (or $REFEREE_SPEC)

``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`` is what
verl's ``naive``/``prime``/``dapo`` managers and the reward loop call per sample;
``compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs)`` is the
plural form of the ``batch`` manager (``custom_reward_function.name=compute_score_batch``);
``compute_score_async`` the awaitable form the reward loop awaits. The spec is compiled once per
process and cached. A sample becomes the verl row ``{"data_source", "reward_model":
{"ground_truth"}, "extra_info", "response"}``, so a spec reads ``{{item.ground_truth}}`` and
``{{item.extra_info.<key>}}``.

Each call returns ``{"score": float, ...}`` with the same scalar keys for every sample of a
spec (verl stacks them into ``reward_extra_info``): ``score``; ``referee_ok``,
``referee_error``, ``referee_not_applicable`` (1.0/0.0: the status); and one
``referee/<component>`` per named component (NaN when it did not apply or failed). verl needs a
number, so a sample that could not be scored has ``score`` 0.0 **and** ``referee_error`` 1.0:
filter on the flag, or give the spec an ``on_error:`` reward.
"""

from __future__ import annotations

# Absolute imports: verl loads this file by path (custom_reward_function.path), outside the package.

import asyncio
from typing import Any, Optional

from referee._api import Result
from referee._util import judge_opts, maybe_nan, program, spec_from

_RESERVED = ("spec", "judge", "judge_model", "judge_cache")


def _row(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any) -> dict:
    return {
        "data_source": data_source,
        "reward_model": {"ground_truth": ground_truth},
        "extra_info": dict(extra_info) if extra_info is not None else {},
        "response": solution_str,
    }


def _out(r: Result) -> dict:
    d = {
        "score": 0.0 if r.reward is None else float(r.reward),
        "referee_ok": float(r.status == "ok"),
        "referee_error": float(r.status == "error"),
        "referee_not_applicable": float(r.status == "not_applicable"),
    }
    for name, v in r.components.items():
        d[f"referee/{name}"] = maybe_nan(v)
    return d


def _program(kwargs: dict):
    return program(spec_from(kwargs), **judge_opts(kwargs))


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Optional[dict] = None,
    **kwargs: Any,
) -> dict:
    """verl's per-sample reward function."""
    prog = _program(kwargs)
    (r,) = prog.score_detailed([_row(data_source, solution_str, ground_truth, extra_info)],
                               format="verl")
    if r.status == "error" and not r.components:
        # The row never became a sample: keep the key set of every other row.
        return _out(r) | {f"referee/{n}": float("nan") for n in prog.component_names}
    return _out(r)


async def compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Optional[dict] = None,
    **kwargs: Any,
) -> dict:
    """``compute_score`` for the reward loop: scored on a worker thread."""
    return await asyncio.to_thread(
        compute_score, data_source, solution_str, ground_truth, extra_info, **kwargs
    )


def compute_score_batch(
    data_sources: list,
    solution_strs: list,
    ground_truths: list,
    extra_infos: Optional[list] = None,
    **kwargs: Any,
) -> list[dict]:
    """verl's ``batch`` reward manager form: one call, plural arguments, a list back."""
    prog = _program(kwargs)
    n = len(solution_strs)
    infos = extra_infos if extra_infos is not None else [None] * n
    rows = [_row(data_sources[i], solution_strs[i], ground_truths[i], infos[i]) for i in range(n)]
    nan = {f"referee/{c}": float("nan") for c in prog.component_names}
    out = []
    for r in prog.score_detailed(rows, format="verl"):
        d = _out(r)
        out.append(d if r.components else d | nan)
    return out
