"""PrimeIntellect ``verifiers`` adapter (the legacy Rubric API).

    rubric = referee.verifiers.rubric("spec.yaml")
    env = vf.SingleTurnEnv(dataset=dataset, rubric=rubric)

Each top-level component (``Program.components``) is one reward function with the parameters
the legacy ``vf.Rubric`` injects by name, ``(prompt, completion, answer, info, state, **kwargs)
-> float``, and its weight, so the components are reported as separate metrics and the reward
is their weighted sum. With a ``verifiers`` that has the legacy ``vf.Rubric``, ``rubric()``
returns a real ``vf.Rubric(funcs=..., weights=...)``; otherwise (``verifiers`` ≥ 0.4 ships only
the v1 Task/Judge API, and none at all) it returns this module's ``Rubric``, which has the same
``funcs``/``weights`` and scores a rollout into the documented ``RolloutScore`` shape
``{"reward": float, "metrics": {name: float}}``.

A sample becomes ``{"item": {"prompt", "answer", "info", "task"}, "sample": ...}`` (the completion
as text, or as chat messages whose last assistant turn is graded), so a spec reads
``{{item.answer}}`` / ``{{item.info.<key>}}``. The rubric API wants a float: a sample that could
not be scored gets 0.0, and ``state["referee"][<name>]`` says why (status and reason).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

from ._api import Program, SpecLike
from ._util import program


def _row(prompt: Any, completion: Any, answer: Any, info: Any, task: Any) -> dict:
    sample = {"messages": completion} if isinstance(completion, list) else {"output_text": completion or ""}
    item = {"prompt": prompt, "answer": answer, "info": info if info is not None else {}}
    if task is not None:
        item["task"] = task
    return {"item": item, "sample": sample}


def _func(name: str, prog: Program) -> Callable[..., float]:
    def reward(
        prompt: Any = None,
        completion: Any = None,
        answer: Any = None,
        info: Optional[dict] = None,
        state: Optional[dict] = None,
        task: Any = None,
        **kwargs: Any,
    ) -> float:
        (r,) = prog.score_detailed([_row(prompt, completion, answer, info, task)], format="referee")
        if state is not None:
            state.setdefault("referee", {})[name] = {"status": r.status, "reason": r.reason}
        return 0.0 if r.reward is None else float(r.reward)

    reward.__name__ = name
    reward.__qualname__ = name
    return reward


class Rubric:
    """The legacy rubric shape: ``funcs``, ``weights``, and ``score_rollout``."""

    def __init__(self, funcs: list[Callable[..., float]], weights: list[float]):
        self.funcs = funcs
        self.weights = weights

    def get_reward_funcs(self) -> list[Callable[..., float]]:
        return list(self.funcs)

    def get_reward_weights(self) -> list[float]:
        return list(self.weights)

    def score_rollout_sync(self, prompt: Any, completion: Any, answer: Any = None,
                           state: Optional[dict] = None, task: Any = None,
                           info: Optional[dict] = None, **kwargs: Any) -> dict:
        state = {} if state is None else state
        metrics = {
            f.__name__: f(prompt=prompt, completion=completion, answer=answer, info=info,
                          state=state, task=task)
            for f in self.funcs
        }
        reward = sum(w * metrics[f.__name__] for f, w in zip(self.funcs, self.weights))
        return {"reward": reward, "metrics": metrics}

    async def score_rollout(self, prompt: Any, completion: Any, answer: Any = None,
                            state: Optional[dict] = None, task: Any = None,
                            info: Optional[dict] = None, **kwargs: Any) -> dict:
        return await asyncio.to_thread(self.score_rollout_sync, prompt, completion, answer,
                                       state, task, info)


def reward_funcs(spec: "SpecLike | Program", **judge: Any) -> list[Callable[..., float]]:
    return [_func(name, p) for name, _, p in program(spec, **judge).parts()]


def rubric(spec: "SpecLike | Program", **judge: Any) -> Any:
    """A ``vf.Rubric`` when the installed verifiers has one, else ``referee.verifiers.Rubric``."""
    prog = program(spec, **judge)
    funcs = reward_funcs(prog)
    weights = [w for _, w, _ in prog.parts()]
    try:
        import verifiers as vf  # type: ignore[import-not-found]

        legacy = getattr(vf, "Rubric", None)
    except ImportError:
        legacy = None
    if legacy is not None:
        return legacy(funcs=funcs, weights=weights)
    return Rubric(funcs, weights)
