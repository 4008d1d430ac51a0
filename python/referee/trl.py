"""TRL adapter: reward functions for ``GRPOTrainer`` / ``RLOOTrainer`` (TRL 1.16) and for
``trl.experimental.async_grpo``.

    import referee.trl
    trainer = GRPOTrainer(
        model=..., train_dataset=dataset,
        reward_funcs=referee.trl.reward_funcs("spec.yaml"),          # asynchronous=True: async def
        args=GRPOConfig(reward_weights=referee.trl.reward_weights("spec.yaml"), ...),
    )
    # A trainer that sums its reward functions without weights (async_grpo): the whole spec.
    AsyncGRPOTrainer(..., reward_funcs=[referee.trl.reward_func("spec.yaml")])

``reward_funcs``: one function per top-level component (``Program.components``: the inputs of a
root ``weighted_sum``, or the whole spec), each with a stable ``__name__`` so TRL logs
``rewards/<name>/mean`` and ``normalize_then_sum`` keeps working. ``reward_func``: one function
whose value is the whole spec's reward. TRL calls a function with keyword arguments ``prompts``,
``completions``, ``completion_ids``, ``trainer_state``, ``log_extra``, ``log_metric`` and every
dataset column except ``prompt`` (lists, one entry per completion). A row is the TRL row
``{"prompt": ..., "completion": ..., <columns>}`` (a spec reads ``{{item.solution}}``); standard
(text) and conversational completions go through unchanged, including the parsed assistant
messages of a response-parsing tokenizer (``reasoning_content``/``thinking``, ``tool_calls``,
``content`` possibly missing), which the core reads. Columns that are not row data (images) are
left out; numpy values are converted by the core.

**Environments** (``GRPOTrainer(environment_factory=...)``, multi-turn tool calling): TRL then
passes ``environments``, the environment instance of each completion, and each completion is the
whole multi-turn exchange TRL built: ``[assistant (tool_calls), tool, ..., assistant]`` (its tool
turns carry the tool's ``name``; TRL gives calls no ids). A row then becomes a Referee row
``{"item": {"prompt": ..., <columns>}, "sample": {"messages": <completion>, "state": <state>}}``,
so a spec reads the trajectory (``{{sample.messages[tool=book][-1].content}}``) and the
environment's final state (``state_match`` on ``{{sample.state}}``); the last assistant turn is
the output text and its tool calls the output tools, as for a single turn. The state of an
environment is, in this order (``env_state``):

1. ``env.referee_state``: its value, or what it returns if it is a method. Make it a property:
   TRL offers every public *method* of an environment to the model as a tool.
2. ``env.state``: the same way.
3. Nothing: the row has no state.

``None`` from either means no state (``referee_state`` wins: ``state`` is not tried after it).
The state may be any value the core converts (dicts, lists, pydantic models, dataclasses, numpy);
it is read when the reward is computed, i.e. after the rollout. A row without a state that a
spec reads the state from is not scored (``missing_field``: ``None``, NaN in TRL), never 0; so is
a row whose state getter raised (logged). An ``async`` getter is awaited by the ``async def``
functions (``asynchronous=True``) and is an unreadable state for the others. An environment's own
``get_reward`` is a reward TRL adds to these (weight 1): leave it out where Referee is the reward.
TRL drops tool results that would overrun ``max_completion_length`` but not the calls' effects
on the environment, so the state can hold what the trajectory no longer shows. async_grpo passes
reward functions no ``environments`` (its environments reward through ``get_reward``): there a
spec reading the state has none, and does not score.

A sample that could not be scored, or that the component does not apply to, gets ``None`` (TRL:
NaN, that function left out for that sample; a sample with every function ``None`` gets no
advantage). With one function per component, a sample one component could not score (no gold,
a judge that did not answer) gets ``None`` from **every** function, as the whole spec's reward is
``None`` there: TRL would otherwise sum the other components and pay the sample a reward the
spec never gave. So the functions of one ``reward_funcs`` call score the batch together, once:
the first one TRL calls scores every component (concurrently), the others read its results. The statuses go to ``log_extra`` as ``<name>/status`` and the error count to
``log_metric`` as ``referee/<name>/errors`` (async_grpo passes neither: nothing is logged there).

The functions are callable objects, not closures, so they pickle (async_grpo spawns its rollout
worker and pickles them): they carry the spec and recompile it in the other process. A spec given
as a compiled ``Program`` does not pickle; give its path, text or dict instead.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from ._api import Program, SpecLike
from ._util import jsonish, program

# Keyword arguments TRL passes that are not dataset columns.
_TRL_ARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
     "environments"}
)

log = logging.getLogger("referee.trl")
_MISSING = object()
# Where an environment keeps its final state, in the order they are tried (module doc).
_STATE_ATTRS = ("referee_state", "state")


def _state_or_awaitable(env: Any) -> Any:
    """``env``'s state per the module doc's protocol: the value, ``None`` for none, or an
    awaitable from an ``async`` getter. ``ValueError`` when a getter raised."""
    if env is None:
        return None
    for attr in _STATE_ATTRS:
        try:
            v = getattr(env, attr, _MISSING)  # a property runs here
            if v is _MISSING:
                continue
            if callable(v) and not isinstance(v, type):
                v = v()
        except Exception as e:  # noqa: BLE001 - the environment's code, not ours
            raise ValueError(f"{type(env).__name__}.{attr}: {type(e).__name__}: {e}") from e
        return v
    return None


def env_state(env: Any) -> Any:
    """The final state of one environment instance (module doc), ``None`` when it exposes none.
    ``ValueError`` when its getter raised or is ``async``."""
    v = _state_or_awaitable(env)
    if inspect.isawaitable(v):
        _close(v)
        raise ValueError(f"{type(env).__name__}: an async state getter needs asynchronous=True")
    return v


async def env_state_async(env: Any) -> Any:
    """``env_state``, awaiting an ``async`` getter."""
    v = _state_or_awaitable(env)
    if not inspect.isawaitable(v):
        return v
    try:
        return await v
    except Exception as e:  # noqa: BLE001 - the environment's code, not ours
        raise ValueError(f"{type(env).__name__}: {type(e).__name__}: {e}") from e


def _close(v: Any) -> None:
    close = getattr(v, "close", None)
    if callable(close):
        close()


def _check_envs(environments: list, completions: list) -> None:
    if len(environments) != len(completions):
        raise ValueError(
            f"referee.trl: {len(environments)} environments for {len(completions)} completions"
        )


def _states(environments: list) -> list:
    """Each environment's state; one that cannot be read is ``None`` (one warning a batch)."""
    out, failed = [], []
    for env in environments:
        try:
            out.append(env_state(env))
        except ValueError as e:
            out.append(None)
            failed.append(str(e))
    _warn(failed, len(environments))
    return out


async def _states_async(environments: list) -> list:
    out, failed = [], []
    for env in environments:
        try:
            out.append(await env_state_async(env))
        except ValueError as e:
            out.append(None)
            failed.append(str(e))
    _warn(failed, len(environments))
    return out


def _warn(failed: list, n: int) -> None:
    if failed:
        log.warning("referee: the state of %d of %d environments could not be read, their rows "
                    "have none (first: %s)", len(failed), n, failed[0])


def env_rows(prompts: Optional[list], completions: list, columns: dict,
             states: list) -> list[dict]:
    """The Referee rows of a batch with environments (module doc): the TRL row's columns and
    prompt as the item, the completion as the trajectory's messages (or the output text, for a
    standard-format completion), the environment's state where it has one."""
    rows = []
    for row, state in zip(_rows(prompts, completions, columns), states):
        c = row.pop("completion")
        sample: dict[str, Any] = {"messages": c} if isinstance(c, list) else {"output_text": c}
        if state is not None:
            sample["state"] = state
        rows.append({"item": row, "sample": sample})
    return rows


def _rows(prompts: Optional[list], completions: list, columns: dict) -> list[dict]:
    n = len(completions)
    cols = {}
    for k, v in columns.items():
        if k in _TRL_ARGS or not isinstance(v, (list, tuple)) or len(v) != n:
            continue
        if n and not jsonish(v[0]):
            continue
        cols[k] = v
    rows = []
    for i in range(n):
        row = {k: v[i] for k, v in cols.items()}
        if prompts is not None:
            row["prompt"] = prompts[i]
        row["completion"] = completions[i]
        rows.append(row)
    return rows


class _Parts:
    """The top-level components of one spec, scored together once per batch for the functions of
    one ``reward_funcs`` call (TRL passes every function the same ``completions`` list, which is
    how a batch is recognised). Picklable like the functions: the programs are rebuilt."""

    def __init__(self, spec: "SpecLike | Program", judge: dict, progs: Optional[list] = None):
        self._spec, self._judge, self._progs = spec, dict(judge), progs
        self._lock = threading.Lock()
        self._last: Optional[tuple] = None  # (completions, results per part)

    def programs(self) -> list[tuple[str, Program]]:
        if self._progs is None:
            self._progs = [(n, p) for n, _, p in program(self._spec, **self._judge).parts()]
        return self._progs

    def name(self, k: int) -> str:
        return self.programs()[k][0]

    def results(self, completions: list, rows: list[dict], fmt: str) -> list[list]:
        with self._lock:
            if self._last is not None and self._last[0] is completions:
                return self._last[1]
            progs = self.programs()
            if len(progs) == 1:
                res = [progs[0][1].score_detailed(rows, format=fmt)]
            else:  # the GIL is released while a program scores: the parts wait together
                with ThreadPoolExecutor(len(progs)) as pool:
                    res = list(pool.map(lambda p: p[1].score_detailed(rows, format=fmt), progs))
            # Holding `completions` keeps its id from being reused by a later batch.
            self._last = (completions, res)
            return res

    def __getstate__(self) -> dict:
        return {"_spec": self._spec, "_judge": self._judge}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["_spec"], state["_judge"])


_dense_warned = False


def _warn_dense(results: list) -> None:
    """TRL has no per-token rewards: a spec's step credit reaches it as the aggregate only.
    Said once per process, the first time a batch carries ``step_rewards``."""
    global _dense_warned
    if not _dense_warned and any(getattr(r, "step_rewards", None) for r in results):
        _dense_warned = True
        log.warning(
            "referee: this spec gives per-step credit (step_rewards), but TRL takes one reward "
            "per completion: each completion gets its aggregate reward; the step values are "
            "not used (verl's RefereeStepRewardManager places them on tokens)")


def _unscorable(r: Any) -> bool:
    return r.status == "error" and r.reward is None


class RewardFunction:
    """A TRL reward function for one part of a spec (a top-level component, or the whole spec).

    ``__name__`` is the part's name (what TRL logs it under). Picklable when the spec is a path,
    text or dict: the compiled program is dropped and rebuilt on first use after unpickling."""

    def __init__(
        self,
        spec: "SpecLike | Program",
        name: str,
        part: Optional[int] = None,
        judge: Optional[dict] = None,
        prog: Optional[Program] = None,
        parts: Optional[_Parts] = None,
    ):
        self._spec = spec
        self._part = part  # index into Program.parts(), or None for the whole spec
        self._judge = dict(judge or {})
        self._prog = prog  # the compiled part, when the caller has it already
        self._parts = parts  # the spec's parts scored together (per-component functions)
        self.__name__ = self.__qualname__ = name
        self.__doc__ = f"Referee `{name}` (TRL reward function)."

    @property
    def program(self) -> Program:
        if self._prog is None:
            p = program(self._spec, **self._judge)
            self._prog = p if self._part is None else p.parts()[self._part][2]
        return self._prog

    def __getstate__(self) -> dict:
        if isinstance(self._spec, Program):
            raise TypeError(
                f"referee.trl.{type(self).__name__} `{self.__name__}` was made from a compiled "
                "Program, which does not pickle: give the spec's path, text or dict"
            )
        state = dict(self.__dict__)
        state["_prog"] = None
        return state

    def __repr__(self) -> str:
        return f"<referee.trl.{type(self).__name__} {self.__name__}>"

    def _check(self, completions, environments) -> None:
        if completions is None:
            raise TypeError(f"{self.__name__}: TRL passes completions=...")
        if environments is not None:
            _check_envs(environments, completions)

    def _score(self, completions: list, rows: list[dict],
               fmt: str) -> list[tuple[Optional[float], str]]:
        """``(reward, status)`` per row. A row another component could not score is ``None``
        here too (status ``<reason> in <component>``): the spec has no reward for it."""
        if self._parts is None:
            res = self.program.score_detailed(rows, format=fmt)
            _warn_dense(res)
            return [(r.reward, r.reason or r.status) for r in res]
        res = self._parts.results(completions, rows, fmt)
        _warn_dense(res[self._part])
        out = []
        for i, r in enumerate(res[self._part]):
            other = next((k for k, part in enumerate(res) if k != self._part
                          and _unscorable(part[i])), None)
            if other is not None and not _unscorable(r):
                out.append((None, f"{res[other][i].reason} in {self._parts.name(other)}"))
            else:
                out.append((r.reward, r.reason or r.status))
        return out

    def _report(self, scored, log_extra, log_metric) -> list[Optional[float]]:
        if log_extra is not None:
            log_extra(f"{self.__name__}/status", [s for _, s in scored])
        if log_metric is not None:
            errors = sum(s not in ("ok", "not_applicable") for _, s in scored)
            log_metric(f"referee/{self.__name__}/errors", float(errors))
        return [r for r, _ in scored]

    def __call__(
        self,
        prompts: Optional[list] = None,
        completions: Optional[list] = None,
        completion_ids: Optional[list] = None,
        trainer_state: Any = None,
        log_extra: Optional[Callable[[str, list], None]] = None,
        log_metric: Optional[Callable[[str, float], None]] = None,
        environments: Optional[list] = None,
        **columns: Any,
    ) -> list[Optional[float]]:
        self._check(completions, environments)
        if environments is None:
            rows, fmt = _rows(prompts, completions, columns), "trl"
        else:
            rows, fmt = env_rows(prompts, completions, columns, _states(environments)), "referee"
        return self._report(self._score(completions, rows, fmt), log_extra, log_metric)


class AsyncRewardFunction(RewardFunction):
    """The ``async def`` form: TRL awaits these together (``asyncio.gather``). Scoring runs on a
    worker thread, so the trainer's event loop keeps running meanwhile."""

    async def __call__(  # type: ignore[override]
        self,
        prompts: Optional[list] = None,
        completions: Optional[list] = None,
        completion_ids: Optional[list] = None,
        trainer_state: Any = None,
        log_extra: Optional[Callable[[str, list], None]] = None,
        log_metric: Optional[Callable[[str, float], None]] = None,
        environments: Optional[list] = None,
        **columns: Any,
    ) -> list[Optional[float]]:
        self._check(completions, environments)
        if environments is None:
            rows, fmt = _rows(prompts, completions, columns), "trl"
        else:
            states = await _states_async(environments)
            rows, fmt = env_rows(prompts, completions, columns, states), "referee"
        scored = await asyncio.to_thread(self._score, completions, rows, fmt)
        return self._report(scored, log_extra, log_metric)


def _cls(asynchronous: bool) -> type:
    return AsyncRewardFunction if asynchronous else RewardFunction


def reward_funcs(
    spec: "SpecLike | Program", *, asynchronous: bool = False, **judge: Any
) -> list[RewardFunction]:
    """One TRL reward function per top-level component of the spec, in spec order (``async
    def`` ones with ``asynchronous=True``). Pair with ``reward_weights(spec)``."""
    parts = program(spec, **judge).parts()
    cls = _cls(asynchronous)
    together = _Parts(spec, judge, [(n, p) for n, _, p in parts])
    return [cls(spec, name, i, judge, p, together) for i, (name, _, p) in enumerate(parts)]


def reward_weights(spec: "SpecLike | Program", **judge: Any) -> list[float]:
    """``GRPOConfig.reward_weights`` matching ``reward_funcs(spec)``."""
    return [w for _, w, _ in program(spec, **judge).parts()]


def reward_func(
    spec: "SpecLike | Program",
    *,
    asynchronous: bool = False,
    name: str = "referee",
    **judge: Any,
) -> RewardFunction:
    """One TRL reward function whose value is the whole spec's reward, for trainers that sum
    their reward functions without weights (``trl.experimental.async_grpo``)."""
    # Compiled now: a bad spec fails here, not in the trainer.
    return _cls(asynchronous)(spec, name, None, judge, program(spec, **judge))
