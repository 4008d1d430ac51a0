"""TRL ``GRPOTrainer`` adapter.

    import referee.trl
    trainer = GRPOTrainer(
        model=..., train_dataset=dataset,
        reward_funcs=referee.trl.reward_funcs("spec.yaml"),
        args=GRPOConfig(reward_weights=referee.trl.reward_weights("spec.yaml"), ...),
    )

One callable per top-level component (``Program.components``: the inputs of a root
``weighted_sum``, or the whole spec), each with a stable ``__name__`` so TRL logs
``rewards/<name>/mean`` and ``normalize_then_sum`` keeps working. TRL calls each with keyword
arguments ``prompts``, ``completions``, ``completion_ids``, ``trainer_state``, ``log_extra``,
``log_metric`` and every dataset column except ``prompt`` (lists, one entry per completion); both
the standard (text) and conversational (chat messages) formats work. A row becomes the TRL row
``{"prompt": ..., "completion": ..., <columns>}`` (so a spec reads ``{{item.solution}}``). A
sample that could not be scored, or that the component does not apply to, gets ``None`` (TRL: NaN,
that function left out for that sample); the statuses go to ``log_extra`` as
``<name>/status`` and the error count to ``log_metric`` as ``referee/<name>/errors``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ._api import Program, SpecLike
from ._util import jsonish, program

# Keyword arguments TRL passes that are not dataset columns.
_TRL_ARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
     "environments"}
)

RewardFunc = Callable[..., list[Optional[float]]]


def _rows(prompts: Optional[list], completions: list, columns: dict) -> list[dict]:
    n = len(completions)
    cols = {}
    for k, v in columns.items():
        if k in _TRL_ARGS or not isinstance(v, (list, tuple)) or len(v) != n:
            continue
        if n and not jsonish(v[0]):
            continue  # images, tensors: not row data
        cols[k] = v
    rows = []
    for i in range(n):
        row = {k: v[i] for k, v in cols.items()}
        if prompts is not None:
            row["prompt"] = prompts[i]
        row["completion"] = completions[i]
        rows.append(row)
    return rows


def _make(name: str, prog: Program) -> RewardFunc:
    def reward(
        prompts: Optional[list] = None,
        completions: Optional[list] = None,
        completion_ids: Optional[list] = None,
        trainer_state: Any = None,
        log_extra: Optional[Callable[[str, list], None]] = None,
        log_metric: Optional[Callable[[str, float], None]] = None,
        **columns: Any,
    ) -> list[Optional[float]]:
        if completions is None:
            raise TypeError(f"{name}: TRL passes completions=...")
        results = prog.score_detailed(_rows(prompts, completions, columns), format="trl")
        if log_extra is not None:
            log_extra(f"{name}/status", [r.reason or r.status for r in results])
        if log_metric is not None:
            log_metric(f"referee/{name}/errors", float(sum(r.status == "error" for r in results)))
        return [r.reward for r in results]

    reward.__name__ = name
    reward.__qualname__ = name
    reward.__doc__ = f"Referee component `{name}` (TRL reward function)."
    return reward


def reward_funcs(spec: "SpecLike | Program", **judge: Any) -> list[RewardFunc]:
    """One TRL reward function per top-level component of the spec, in spec order."""
    return [_make(name, p) for name, _, p in program(spec, **judge).parts()]


def reward_weights(spec: "SpecLike | Program", **judge: Any) -> list[float]:
    """``GRPOConfig.reward_weights`` matching ``reward_funcs(spec)``."""
    return [w for _, w, _ in program(spec, **judge).parts()]
