"""PrimeIntellect ``verifiers`` adapter: a reward plugin for the v1 Task API (verifiers 0.4).

    # env config (TOML), or --env.taskset.task.rewards.referee.fn referee.verifiers:reward
    [env.taskset.task.rewards.referee]
    fn = "referee.verifiers:reward"      # the spec comes from $REFEREE_SPEC

    # or in a file of your own, for a spec chosen in code (fn = "my_rewards.py:referee_reward"):
    referee_reward = referee.verifiers.make_reward("spec.yaml")

verifiers imports the function, calls it with ``task`` (the ``TaskData``) and ``trace`` (the
``Trace``) by name, and records every key of the mapping it returns as a reward with the entry's
weight (leave ``weight`` unset: 1.0). ``trace.reward`` is the sum of those, so the mapping holds
each top-level component's *contribution* to Referee's reward: ``wᵢ·vᵢ`` with the weights of
``Program.components``, rescaled on a row where a component did not apply and a root
``normalize: sum``/``abs_sum`` renormalised (so the values always add up to Referee's reward).
A component that does not apply to the row is left out. The raw component values (every named
component) are recorded as ``trace.metrics["referee/<name>"]``, and ``trace.metrics
["referee_error"]`` is 1.0 on a row whose status is ``error`` (0.0 otherwise); ``trace.info
["referee"]`` holds the status, reason and message.

A row becomes ``{"item": <task>, "sample": {"messages": trace.messages, "state": ...}}``, so a
spec reads ``{{item.answer}}`` (a ``TaskData`` subclass's fields; one left at ``None`` is not
given: a spec reading it cannot score the row) and ``{{item.info.<key>}}``. The messages are the
whole trajectory of the final branch (prompt, assistant turns with their ``tool_calls``, ``tool``
turns with their ``tool_call_id``), verifiers' pydantic objects: the core converts them and
grades the last assistant turn, its ``reasoning_content`` as the reasoning section and its
``tool_calls`` as the output tools, as the CLI grades the same messages given as dicts; templates
select other turns (``{{sample.messages[tool=calendar_book][-1].content}}``: the last result of a
call to that tool). The state is ``trace.state``, the rollout's typed ``vf.State`` that a task's
tool servers (``Toolset``) write and verifiers syncs to the host, without its ``artifacts``; a
``State`` with no fields of its own gives no state, so a spec reading it (``state_match``)
cannot score the row.

A row that could not be scored (no reward: an error without ``on_error``, or nothing applied)
raises ``UnscoredError``. verifiers takes no ``None`` reward (``float(None)`` fails inside its
scoring), and a number would be trained on as a score; a raised error is verifiers' own way to
say so: the rollout is recorded as failed (``trace.ok`` False, a ``TaskError`` naming Referee's
status and reason in ``trace.errors``, its reward entries ``None``: "scoring didn't run"), it is
not retried unless the env's retries say so, and nothing else stops. A row whose failure the
spec gives a value (``on_error``) is scored with it and flagged in ``referee_error``.

The legacy ``vf.Rubric`` API (verifiers ≤ 0.3) is no longer supported: see ``rubric``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Awaitable, Callable, Optional

from ._api import Program, SpecLike
from ._referee import Result
from ._util import program, spec_from

RewardPlugin = Callable[..., Awaitable[dict[str, float]]]


class UnscoredError(RuntimeError):
    """A row Referee could not score; verifiers records the rollout as failed."""

    def __init__(self, result: Result):
        self.status = result.status
        self.reason = result.reason
        detail = f": {result.message}" if result.message else ""
        super().__init__(
            f"referee could not score this rollout (status {result.status}, "
            f"reason {result.reason or result.status}){detail}"
        )


def _item(task: Any) -> Any:
    """A typed task's fields, its unset (``None``) ones left out: a ``TaskData`` field that
    defaults to ``None`` was not given, so a spec reading it finds it missing (``missing_field``,
    not scored) rather than a ``null`` to compare with."""
    if task is None:
        return {}
    dump = getattr(task, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", exclude_none=True)
        except Exception:  # noqa: BLE001 - not pydantic after all: the core converts it
            pass
    return task


def _state(trace: Any) -> Any:
    """The rollout's final state (``trace.state``) without its ``artifacts`` (collected files,
    not state a spec grades); ``None`` when it has no fields (verifiers' base ``State``)."""
    state = getattr(trace, "state", None)
    if state is None:
        return None
    if hasattr(state, "model_dump"):
        state = state.model_dump(exclude={"artifacts"})
    elif isinstance(state, Mapping):
        state = {k: v for k, v in state.items() if k != "artifacts"}
    else:
        return state
    return state or None


def row(task: Any, trace: Any) -> dict:
    """The Referee row of a verifiers ``(task, trace)`` (module doc); the messages stay pydantic
    values, which the core converts."""
    sample: dict[str, Any] = {"messages": list(getattr(trace, "messages", None) or [])}
    state = _state(trace)
    if state is not None:
        sample["state"] = state
    return {"item": _item(task), "sample": sample}


def contributions(result: Result, parts: list[tuple[str, float, Optional[float]]]) -> dict[str, float]:
    """Each top-level component's share of ``result.reward``: ``wᵢ·vᵢ``, rescaled when they do
    not add up to it (a root that renormalised over the components that applied)."""
    total = result.reward
    assert total is not None
    if len(parts) == 1:
        return {parts[0][0]: float(total)}
    shares = {name: w * v for name, w, v in parts if v is not None}
    s = sum(shares.values())
    if math.isclose(s, total, rel_tol=1e-9, abs_tol=1e-12):
        return shares
    if s != 0.0:
        return {name: v * (total / s) for name, v in shares.items()}
    # Nothing to scale (every share 0 while the total is not): the first component carries it.
    first = next(iter(shares), parts[0][0])
    return {**shares, first: shares.get(first, 0.0) + total}


async def score(prog: Program, task: Any, trace: Any) -> dict[str, float]:
    """Scores one verifiers rollout; see the module doc for what is returned and recorded."""
    (r,) = await prog.score_detailed_async([row(task, trace)], format="referee")
    metrics = getattr(trace, "metrics", None)
    info = getattr(trace, "info", None)
    if isinstance(metrics, dict):
        metrics["referee_error"] = 1.0 if r.status == "error" else 0.0
        for name, v in r.components.items():
            if v is not None:
                metrics[f"referee/{name}"] = float(v)
    if isinstance(info, dict):
        info["referee"] = {"status": r.status, "reason": r.reason, "message": r.message}
    if r.reward is None:
        raise UnscoredError(r)
    parts = prog.parts()
    values: list[tuple[str, float, Optional[float]]] = []
    named = set(prog.component_names)
    for name, weight, part in parts:
        if len(parts) == 1:
            values.append((name, weight, r.reward))
        elif name in named:
            values.append((name, weight, r.components.get(name)))
        else:  # an unnamed top-level input: its value is not among the components
            (pr,) = await part.score_detailed_async([row(task, trace)], format="referee")
            values.append((name, weight, pr.reward))
    return contributions(r, values)


def make_reward(spec: "SpecLike | Program", **judge: Any) -> RewardPlugin:
    """A verifiers reward plugin for this spec: ``async (task, trace) -> {component: value}``.
    ``judge``: ``judge``/``judge_model``/``judge_cache`` as for ``referee.compile``."""
    prog = program(spec, **judge)

    async def referee_reward(task: Any, trace: Any) -> dict[str, float]:
        return await score(prog, task, trace)

    referee_reward.__doc__ = f"Referee reward plugin for {prog!r}."
    return referee_reward


async def reward(task: Any, trace: Any) -> dict[str, float]:
    """The plugin for ``fn = "referee.verifiers:reward"``: the spec is ``$REFEREE_SPEC`` (a
    path or YAML text), compiled once per process."""
    return await score(program(spec_from({})), task, trace)


def rubric(spec: Any = None, **judge: Any) -> Any:
    """Removed: verifiers 0.4 has no ``vf.Rubric`` (its legacy API ended with 0.3.x)."""
    raise RuntimeError(
        "referee.verifiers.rubric() was for the legacy vf.Rubric API, which verifiers 0.4 no "
        "longer has. Plug Referee into the v1 Task API instead: TaskConfig.rewards = "
        '{"referee": {"fn": "referee.verifiers:reward"}} with $REFEREE_SPEC set, or '
        "make_reward(spec) in a file of your own (fn = \"file.py:name\"). See "
        "help(referee.verifiers)."
    )


def reward_funcs(spec: Any = None, **judge: Any) -> Any:
    """Removed with ``rubric``."""
    rubric(spec, **judge)


__all__ = ["UnscoredError", "make_reward", "reward", "row", "rubric", "score"]
