"""verl adapter: a custom reward function for verl ≥ 0.9's reward loop.

verl 0.9 reads the function from ``reward.custom_reward_function.*``::

    reward.custom_reward_function.path=$(python -c 'import referee.verl as m; print(m.__file__)')
    reward.custom_reward_function.name=compute_score          # or compute_score_async
    +reward.custom_reward_function.reward_kwargs.spec=/path/to/spec.yaml   # or $REFEREE_SPEC

The old top-level ``custom_reward_function.*`` keys are ignored since verl 0.9.0 (``main_ppo``
no longer migrates them): verl then silently scores with its own ``default_compute_score``.

Every reward-loop manager (``naive``, ``dapo``, ``gdpo``) calls the function per sample with
keywords: ``data_source, solution_str, ground_truth, extra_info`` (numpy scalars and arrays
among its values: the core converts them; ``naive`` and ``remote`` add ``num_turns`` and
``rollout_reward_scores``), plus ``reward_router_address`` and ``reward_model_tokenizer`` when a reward model runs, plus
the ``reward_kwargs``. A sample becomes the verl row ``{"data_source", "reward_model":
{"ground_truth"}, "extra_info", "response"}``: a spec reads ``{{item.ground_truth}}`` and
``{{item.extra_info.<key>}}``. The spec is compiled once per process.

Each call returns the same keys for every sample of a spec, all finite floats (verl stacks the
dict into ``reward_extra_info`` with numpy and puts ``score`` into a tensor):

- ``score``: the reward. A sample that could not be scored gets the spec's ``on_error`` value
  (0.0 when it has none) **and** ``referee_error`` 1.0; one where nothing applied gets 0.0 and
  ``referee_not_applicable`` 1.0. Filter on the flags.
- ``referee_ok``, ``referee_error``, ``referee_not_applicable``: the status, 1.0/0.0.
- ``referee/<component>`` per named component, and ``referee/<component>/valid``. A component
  that failed gives its ``on_error`` value when it has one (valid 1.0); one that did not apply or
  failed without ``on_error`` gives 0.0 with valid 0.0. Never NaN: ``gdpo`` normalises each key
  it reads within its GRPO group and then whitens over the batch, so one NaN would turn every
  advantage of the batch into NaN. Give components an ``on_error:`` where 0.0 is not what a
  failure is worth.

Multi-turn (verl's agent loop, ``actor_rollout_ref.rollout.multi_turn``): the reward is computed
per trajectory as soon as it ends (the agent loop's streaming call), and ``solution_str`` is the
decoded response: every assistant turn **and every tool result** as the chat template rendered
them, special tokens removed, turn boundaries lost. verl merges the agent loop's extra fields
into ``extra_info`` (managers ``naive``, ``remote`` and ``rate_limited``; ``dapo`` and ``gdpo``
do not), so the trajectory reaches the spec through it:

- ``{{item.extra_info.num_turns}}``: verl's count, user + assistant turns + 1 (the prompt); an
  ``np.int64`` in this call (``naive``, ``remote``; ``rate_limited`` passes none).
- ``sample.state``: ``extra_info["state"]``, the environment's final state: tools keep it in
  ``agent_data.extra_fields["state"]`` (verl passes ``agent_data=`` to ``BaseTool.execute``).
- ``sample.messages``: ``extra_info["messages"]``, the turns in OpenAI chat form. verl keeps them
  (``AgentData.messages``) but hands them to no reward. Then the graded output
  (``{{sample.output_text}}``) is the last assistant turn, so a spec never credits the policy
  with words a tool returned; without messages it stays the decoded response.

The agent loop ``RefereeToolAgentLoop`` (verl's ``ToolAgentLoop`` plus this record) records the
messages, and starts the state from the row's ``extra_info["initial_state"]`` (``{}`` when
absent) so that a rollout which never calls a tool still has one. Register it with
``actor_rollout_ref.rollout.agent.agent_loop_config_path=<yaml>`` holding
``[{name: referee_tool_agent, _target_: referee.verl.RefereeToolAgentLoop}]`` and select it with
``actor_rollout_ref.rollout.agent.default_agent_loop=referee_tool_agent`` (or a row's
``agent_name``).

A trajectory spec reads them: ``{type: state_match, expected: "{{item.ground_truth}}"}`` (the
dataset's ``reward_model.ground_truth`` as the expected state: an object, not JSON text), a
format check on the last answer. A row without the state it needs is an error
(``missing_field``): ``referee_error`` 1.0 and the spec's ``on_error``, never a silent 0. That is
every row under ``dapo``/``gdpo``, and under verl's plain ``tool_agent`` every rollout that
called no tool (nothing recorded a state): give such specs an ``on_error`` no better than a
failed task, or use ``RefereeToolAgentLoop``.

GDPO: ``gdpo_overrides(spec)`` gives the hydra overrides for ``algorithm.gdpo_reward_keys`` and
``algorithm.gdpo_reward_weights`` from the spec's top-level components (``gdpo_settings`` the
same as a dict).

Process rewards: ``RefereeStepRewardManager`` is a reward-loop manager whose rewards are dense
(a spec's ``step_rewards`` on the last token of each step in the token-level reward tensor); see
its docstring for how to select it and where verl uses the placement.

Judges: when verl runs a generative reward model, ``reward_router_address`` (``host:port`` of
verl's router, which proxies the OpenAI API of its vLLM/SGLang servers) becomes the judge
endpoint ``http://host:port/v1`` named ``default``, with the reward model's path as the model
name, for specs whose ``judges:`` section is absent; a spec's own judges win, and the
``judge``/``judge_fallback``/``judge_model`` reward kwargs win over the router.
"""

from __future__ import annotations

# Absolute imports: verl loads this file by path (custom_reward_function.path), outside the package.

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any, Optional

from referee._api import Program, Result
from referee._util import judge_opts, program, scored, spec_from

_log = logging.getLogger("referee.verl")
_STATUS = ("referee_ok", "referee_error", "referee_not_applicable")


def router_url(address: str) -> str:
    """The OpenAI-compatible base URL of verl's reward router: its address is ``host:port``
    (``[v6]:port``) and it serves ``/v1/chat/completions``."""
    url = address.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url if url.endswith("/v1") else url + "/v1"


def _program(kwargs: dict, router: Optional[str], rm_tokenizer: Any) -> Program:
    opts = judge_opts(kwargs)
    if router and "judge" not in opts and "judge_fallback" not in opts:
        opts["judge_fallback"] = router_url(router)
        model = opts.get("judge_model") or getattr(rm_tokenizer, "name_or_path", None)
        if model:
            opts["judge_model"] = str(model)
    return program(spec_from(kwargs), **opts)


def _row(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any) -> dict:
    if extra_info is None:
        extra_info = {}
    elif isinstance(extra_info, Mapping):
        extra_info = dict(extra_info)  # a copy: verl reuses the dict; values stay as given
    return {
        "data_source": data_source,
        "reward_model": {"ground_truth": ground_truth},
        "extra_info": extra_info,
        "response": solution_str,
    }


def _out(prog: Program, r: Optional[Result]) -> dict:
    status = r.status if r is not None else "error"
    reward = r.reward if r is not None else None
    d = {
        "score": 0.0 if reward is None else float(reward),
        "referee_ok": float(status == "ok"),
        "referee_error": float(status == "error"),
        "referee_not_applicable": float(status == "not_applicable"),
    }
    comps = r.components if r is not None else {}
    for name in prog.component_names:
        v = comps.get(name)
        d[f"referee/{name}"] = 0.0 if v is None else float(v)
        d[f"referee/{name}/valid"] = 0.0 if v is None else 1.0
    return d


def compute_score(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Optional[dict] = None,
    reward_router_address: Optional[str] = None,
    reward_model_tokenizer: Any = None,
    **kwargs: Any,
) -> dict:
    """verl's per-sample reward function (run by the managers on an executor thread)."""
    prog = _program(kwargs, reward_router_address, reward_model_tokenizer)
    (r,) = scored(prog, [_row(data_source, solution_str, ground_truth, extra_info)], "verl", _log)
    return _out(prog, r)


async def compute_score_async(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Optional[dict] = None,
    reward_router_address: Optional[str] = None,
    reward_model_tokenizer: Any = None,
    **kwargs: Any,
) -> dict:
    """``compute_score`` as a coroutine (verl awaits it on the reward loop's event loop); the
    scoring runs on a worker thread, so judge-bound samples of a batch overlap."""
    return await asyncio.to_thread(
        compute_score, data_source, solution_str, ground_truth, extra_info,
        reward_router_address, reward_model_tokenizer, **kwargs,
    )


def gdpo_settings(spec: Any, **judge: Any) -> dict:
    """``{"gdpo_reward_keys", "gdpo_reward_weights"}`` for ``algorithm.*``: one key per top-level
    component of the spec (``referee/<name>``) with its weight; a spec without a weighted root
    gives ``["score"]``, ``[1.0]``."""
    prog = program(spec, **judge)
    names = set(prog.component_names)
    keys, weights = [], []
    for c in prog.components:
        keys.append(f"referee/{c.name}" if c.name in names else "score")
        weights.append(float(c.weight))
    return {"gdpo_reward_keys": keys, "gdpo_reward_weights": weights}


def gdpo_overrides(spec: Any, **judge: Any) -> list[str]:
    """Hydra overrides that run GDPO on the spec's components, e.g. ``["algorithm.adv_estimator=
    gdpo", "++algorithm.gdpo_reward_keys=['referee/correct','referee/boxed']",
    "++algorithm.gdpo_reward_weights=[0.9,0.1]"]`` (``++``: the keys are not in verl's yaml)."""
    s = gdpo_settings(spec, **judge)

    def q(k: str) -> str:
        return "'" + k.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return [
        "algorithm.adv_estimator=gdpo",
        "++algorithm.gdpo_reward_keys=[" + ",".join(q(k) for k in s["gdpo_reward_keys"]) + "]",
        "++algorithm.gdpo_reward_weights=[" + ",".join(repr(w) for w in s["gdpo_reward_weights"]) + "]",
    ]


# --- multi-turn: the agent loop that records the trajectory ------------------------------------


def _agent_loop_class() -> type:
    from verl.experimental.agent_loop.agent_loop import register
    from verl.experimental.agent_loop.tool_agent_loop import AgentState, ToolAgentLoop

    class RefereeToolAgentLoop(ToolAgentLoop):
        """verl's ``ToolAgentLoop`` that also records the trajectory for the reward, in the
        extra fields verl merges into the reward function's ``extra_info``:

        - ``messages``: the turns in OpenAI chat form (the prompt's messages, each assistant
          turn with its ``tool_calls``, each ``tool`` result). Assistant turns read as the
          reward's ``solution_str`` does (special tokens removed); a turn verl stopped before
          parsing (the response length or turn limit) is recorded as generated.
        - ``state``: the environment's state. Before the first tool runs it is a copy of the
          row's ``extra_info["initial_state"]`` (``{}`` when absent); tools change
          ``agent_data.extra_fields["state"]`` in place. A rollout that called no tool ends
          with the state it started in, so it is scored, never dropped as unscoreable."""

        async def run(self, sampling_params: dict, **kwargs: Any) -> Any:
            # One instance per trajectory (verl instantiates the loop for each).
            extra = kwargs.get("extra_info")
            initial = extra.get("initial_state") if isinstance(extra, Mapping) else None
            self._initial_state = initial if initial is not None else {}
            return await super().run(sampling_params, **kwargs)

        def _seed_state(self, agent_data: Any) -> None:
            if agent_data.extra_fields.get("state") is None:
                agent_data.extra_fields["state"] = copy.deepcopy(self._initial_state)

        async def _handle_generating_state(self, agent_data, sampling_params, ignore_termination=False):
            before = len(agent_data.messages)
            state = await super()._handle_generating_state(agent_data, sampling_params, ignore_termination)
            if state == AgentState.TERMINATED:
                self._record(agent_data, parsed=len(agent_data.messages) > before)
            return state

        async def _handle_processing_tools_state(self, agent_data):
            self._seed_state(agent_data)  # the tools change it in place
            state = await super()._handle_processing_tools_state(agent_data)
            if state == AgentState.TERMINATED:  # the tool results overflowed the response
                self._record(agent_data, parsed=True)
            return state

        def _record(self, agent_data: Any, parsed: bool) -> None:
            messages = [dict(m) for m in agent_data.messages]
            if not parsed:
                messages.append({"role": "assistant", "content": self.tokenizer.decode(
                    agent_data.response_ids, skip_special_tokens=True)})
            special = [t for t in getattr(self.tokenizer, "all_special_tokens", []) if t]
            for m in messages:
                if m.get("role") == "assistant" and isinstance(m.get("content"), str):
                    for t in special:
                        m["content"] = m["content"].replace(t, "")
            agent_data.extra_fields["messages"] = messages
            # A rollout that called no tool still has a state, the one it started in: scored
            # (state_match finds what it did not do), not dropped as unscoreable.
            self._seed_state(agent_data)

    RefereeToolAgentLoop.__module__ = __name__
    RefereeToolAgentLoop.__qualname__ = "RefereeToolAgentLoop"
    return register("referee_tool_agent")(RefereeToolAgentLoop)


# --- process rewards: step_rewards on the token-level reward tensor ----------------------------


class DenseScore(float):
    """A reward that also carries its per-token vector (``tokens``, one value per valid response
    token). verl passes each ``run_single``'s ``reward_score`` to the manager class's
    ``assemble_rm_scores`` unchanged on the reward-loop path, which writes the vector; where verl
    takes a plain float (the agent loop's streaming reward) it is the reward itself."""

    tokens: list

    def __new__(cls, value: float, tokens: list) -> "DenseScore":
        obj = super().__new__(cls, value)
        obj.tokens = tokens
        return obj

    def __reduce__(self):  # Ray pickles it between the reward workers and the trainer
        return (DenseScore, (float(self), self.tokens))


# verl loads this file by path; the package module is what every Ray worker can import.
DenseScore.__module__ = "referee.verl"


def token_ends(tokenizer: Any, ids: list, ends: list[int]) -> list[int]:
    """For each char offset in ``ends`` (into ``tokenizer.decode(ids, skip_special_tokens=True)``),
    the index of the token that completes it: the smallest ``k`` whose decoded prefix
    ``ids[:k + 1]`` reaches the offset. Found by bisection over decoded prefixes, so a token that
    decodes only with its neighbours (byte-level pieces of one character) is handled exactly: a
    prefix reaches only as far as it agrees with the whole text, so a character whose last byte
    is still missing (decoded as U+FFFD) is not reached yet. Referee's own ``--tokenizer`` token
    spans are found the same way."""
    cache: dict[int, int] = {}
    text = tokenizer.decode(ids, skip_special_tokens=True)

    def reach(k: int) -> int:
        if k not in cache:
            p = tokenizer.decode(ids[: k + 1], skip_special_tokens=True)
            n = 0
            for a, b in zip(p, text):
                if a != b:
                    break
                n += 1
            cache[k] = n
        return cache[k]

    out = []
    for e in ends:
        lo, hi = 0, len(ids) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if reach(mid) >= e:
                hi = mid
            else:
                lo = mid + 1
        out.append(lo)
    return out


def dense_tokens(tokenizer: Any, ids: list, text: str, r: Optional[Result]) -> Optional[list]:
    """The per-token vector of one result: each step's value on the last token of its step, and
    the rest of the reward (the outcome, other components: ``reward - sum(steps)``) on the last
    valid token, so the row sums to the reward. ``None`` when the steps cannot be placed on these
    tokens (no steps, a failed row, steps of trajectory turns, a scored text other than the
    decoded response)."""
    if r is None or r.reward is None or not r.step_rewards or not ids:
        return None
    if any(st.get("turn") is not None or st["end"] > len(text) for st in r.step_rewards):
        return None
    vec = [0.0] * len(ids)
    positions = token_ends(tokenizer, ids, [st["end"] for st in r.step_rewards])
    for st, k in zip(r.step_rewards, positions):
        vec[k] += float(st["value"] or 0.0)
    vec[-1] += float(r.reward) - sum(float(st["value"] or 0.0) for st in r.step_rewards)
    return vec


def _step_manager_class() -> type:
    import torch
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

    class RefereeStepRewardManager(RewardManagerBase):
        """A verl reward-loop manager whose rewards are dense: ``step_rewards`` of a spec with
        step components (``each_step``, ``prm``) land on the last token of each step in the
        token-level reward tensor (``rm_scores``, then ``token_level_scores``), the rest of the
        reward on the last token, each row summing to the reward.

        Selected with ``reward.reward_manager.source=importlib``,
        ``reward.reward_manager.module.path=<this file>`` and
        ``reward.reward_manager.name=RefereeStepRewardManager``, the spec given as
        ``+reward.custom_reward_function.reward_kwargs.spec=...`` (or ``$REFEREE_SPEC``). Each
        sample is the verl row ``compute_score`` builds; ``reward_extra_info`` has its keys plus
        ``referee_dense`` (1.0 when the row's steps were placed on its tokens).

        Where the vector is used: verl 0.9.1 assembles ``rm_scores`` through the manager class
        on its reward-loop path (``RewardLoopManager.compute_rm_score``: a colocated reward
        model, or validation). On the agent loop's streaming path (no reward model) verl itself
        puts one float per rollout on its last token, which is what this manager's score is
        there. Only per-token estimators use the placement (``gae``, ``reinforce_plus_plus``);
        GRPO/RLOO sum each row, and the sum is the reward either way."""

        def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None,
                     reward_model_tokenizer=None, **_: Any):
            super().__init__(config, tokenizer, compute_score)
            fn = config.reward.get("custom_reward_function") or {}
            self._kwargs = dict(fn.get("reward_kwargs") or {})
            self._router = reward_router_address
            self._rm_tokenizer = reward_model_tokenizer

        async def run_single(self, data: Any) -> dict:
            item = data[-1:][0]
            responses = item.batch["responses"]
            n = int(item.batch["attention_mask"][-responses.shape[-1]:].sum())
            ids = responses[:n].tolist()
            text = await self.loop.run_in_executor(
                None, lambda: self.tokenizer.decode(ids, skip_special_tokens=True))
            extra = dict(item.non_tensor_batch.get("extra_info") or {})
            extra.update((item.non_tensor_batch.get("tool_extra_fields") or {}).items())
            extra["num_turns"] = item.non_tensor_batch.get("__num_turns__", None)
            row = _row(item.non_tensor_batch.get("data_source"), text,
                       item.non_tensor_batch["reward_model"]["ground_truth"], extra)
            prog = _program(self._kwargs, self._router, self._rm_tokenizer)
            (r,) = await self.loop.run_in_executor(None, lambda: scored(prog, [row], "verl", _log))
            out = _out(prog, r)
            vec = await self.loop.run_in_executor(None, lambda: dense_tokens(self.tokenizer, ids, text, r))
            out["referee_dense"] = float(vec is not None)
            score = out["score"] if vec is None else DenseScore(out["score"], vec)
            return {"reward_score": score, "reward_extra_info": out}

        @classmethod
        def assemble_rm_scores(cls, data: Any, scores: list) -> Any:
            rm = super().assemble_rm_scores(data, [float(s) for s in scores])
            for i, s in enumerate(scores):
                vec = getattr(s, "tokens", None)
                if vec is not None and len(vec) <= rm.size(1):
                    rm[i].zero_()
                    rm[i, : len(vec)] = torch.tensor(vec, dtype=rm.dtype)
            return rm

    RefereeStepRewardManager.__module__ = __name__
    RefereeStepRewardManager.__qualname__ = "RefereeStepRewardManager"
    return RefereeStepRewardManager


_lazy: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    # The agent loop subclasses verl's, so it is built on first use: the reward function
    # imports without verl's rollout stack.
    builders = {"RefereeToolAgentLoop": _agent_loop_class, "RefereeStepRewardManager": _step_manager_class}
    if name in builders:
        if name not in _lazy:
            _lazy[name] = builders[name]()
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
