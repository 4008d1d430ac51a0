"""OpenRLHF adapter (0.11.2): the ``--reward.remote_url <file>.py`` reward function and an
``AgentInstanceBase`` for ``--train.agent_func_path`` multi-turn runs, scored as trajectories (the
episode's turns and the environment's final state).

    # reward_func.py, given to OpenRLHF as --reward.remote_url reward_func.py
    from referee.openrlhf import reward_func   # spec from $REFEREE_SPEC

``reward_func(queries, prompts, labels, **kwargs)``: OpenRLHF's ``SingleTurnAgentExecutor`` calls
it once per sample, ``reward_func([query], [prompt], [label])`` in a thread. The query is the
decoded prompt tokens plus the response tokens (special tokens kept); when the prompt was longer
than ``max_len - max_new_tokens`` its tokens were cut **from the left**, so the query starts
inside the prompt. Each row goes to the core as the ``openrlhf`` row format
(``{"query", "prompt", "label"}``): the core finds where the prompt ends, also in a left-truncated
query, and a row whose boundary it cannot find is an error (``prompt_not_found``), never graded
with prompt text in it. The item is ``{"prompt", "label"}`` (write the spec against
``{{item.label}}``).

Returns ``{"rewards", "scores", "extra_logs"}``, every row a number, because OpenRLHF turns them
into tensors unchecked:
- ``rewards``: the reward; a row that could not be scored gets the spec's ``on_error`` value, else
  0.0, with ``extra_logs["referee_error"]`` = 1.0. A torch tensor (OpenRLHF's own examples return
  one); a list when torch is missing.
- ``scores``: the rewards clamped to [0, 1] (``--algo.dynamic_filtering_range`` reads them).
- ``extra_logs``: each named component, and ``referee_error``. OpenRLHF averages every key over the
  batch, so a component that did not apply to a row (no value) is logged as 0.0, never NaN.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any, Optional, Sequence

from referee._util import judge_opts, program, spec_from

log = logging.getLogger(__name__)

ERROR_KEY = "referee_error"


def rows(queries: Sequence[Any], prompts: Optional[Sequence[Any]], labels: Optional[Sequence[Any]]) -> list[dict]:
    """OpenRLHF's three lists as ``openrlhf``-format rows (missing prompts are ``""``)."""
    out = []
    for i, q in enumerate(queries):
        prompt = prompts[i] if prompts is not None and i < len(prompts) else ""
        label = labels[i] if labels is not None and i < len(labels) else None
        out.append({"query": q, "prompt": prompt, "label": label})
    return out


def _failed(n: int, names: Sequence[str]) -> dict:
    logs = {name: [0.0] * n for name in names}
    logs[ERROR_KEY] = [1.0] * n
    return {"rewards": [0.0] * n, "scores": [0.0] * n, "extra_logs": logs}


def _tensor(values: list[float]) -> Any:
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)


def score_rows(prog: Any, batch: list[dict]) -> dict:
    """``openrlhf`` rows scored into OpenRLHF's answer, exactly as ``referee serve``'s
    ``/get_reward`` answers (``Program.openrlhf_answer``); a batch the core could not take at
    all (never expected: rows are converted, not rejected) becomes error rows, so a bad batch
    cannot crash the run."""
    try:
        return prog.openrlhf_answer(batch)
    except Exception as e:  # noqa: BLE001 - the trainer must get numbers whatever happened
        log.warning("referee: a batch of %d rows could not be scored: %s", len(batch), e)
        return _failed(len(batch), list(prog.component_names))


def reward_func(queries: Sequence[Any], prompts: Sequence[Any], labels: Sequence[Any], **kwargs: Any) -> dict:
    """OpenRLHF's ``reward_func``; ``spec=`` (or ``$REFEREE_SPEC``), ``judge=``, ``judge_model=``."""
    prog = program(spec_from(kwargs), **judge_opts(kwargs))
    out = score_rows(prog, rows(queries, prompts, labels))
    out["rewards"] = _tensor(out["rewards"])
    return out


# --- multi-turn: --train.agent_func_path ------------------------------------------------------

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


def assistant_message(text: str, turn: int = 0) -> dict:
    """A policy's action as an OpenAI assistant message: hermes-style ``<tool_call>{"name",
    "arguments"}</tool_call>`` blocks (what Qwen-family chat templates emit, and verl's and
    vLLM's ``hermes`` parsers read) become ``tool_calls`` with ids ``call_<turn>_<i>`` and leave
    the content. A block that is not such JSON stays in the content as the policy wrote it, so
    a format check still sees it; it is no call."""
    calls: list[dict] = []
    kept: list[str] = []
    pos = 0  # the end of the last block taken out
    # str.find, not a lazy regex: many unclosed `<tool_call>`s would make that quadratic.
    start = text.find(_OPEN)
    while start != -1:
        end = text.find(_CLOSE, start + len(_OPEN))
        if end == -1:
            break
        after = end + len(_CLOSE)
        try:
            call = json.loads(text[start + len(_OPEN):end])
        except (ValueError, RecursionError):
            call = None
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            args = call.get("arguments", {})
            calls.append({"id": f"call_{turn}_{len(calls)}", "type": "function", "function": {
                "name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
            kept.append(text[pos:start])
            pos = after
        start = text.find(_OPEN, after)
    kept.append(text[pos:])
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(kept)}
    if calls:
        msg["tool_calls"] = calls
    return msg


def tool_result(call: dict, content: Any) -> dict:
    """The ``tool`` message answering ``call`` (one of ``message["tool_calls"]``): templates'
    ``[tool=NAME]`` finds it through ``tool_call_id``."""
    return {"role": "tool", "tool_call_id": call.get("id"), "name": (call.get("function") or {}).get("name"),
            "content": content if isinstance(content, str) else json.dumps(content)}


def _feedback(fb: Any) -> tuple[str, bool, Optional[list]]:
    """``feedback``'s answer as ``(text, done, messages)``."""
    if isinstance(fb, Mapping):
        return fb.get("text") or "", bool(fb.get("done")), fb.get("messages")
    if isinstance(fb, tuple):
        text = fb[0] if fb else ""
        done = fb[1] if len(fb) > 1 else False
        return text or "", bool(done), fb[2] if len(fb) > 2 else None
    return fb or "", False, None


_AGENT_DOC = """An OpenRLHF ``AgentInstanceBase`` whose episode is rewarded by a Referee spec.

    # agent_func.py, given to OpenRLHF as --train.agent_func_path agent_func.py
    from openrlhf.utils.agent import MultiTurnAgentExecutor
    from referee.openrlhf import RefereeAgent

    class AgentInstance(RefereeAgent):
        max_turns = 2
        async def feedback(self, states):
            return "\\nCheck your answer.\\n"

    class AgentExecutor(MultiTurnAgentExecutor):   # OpenRLHF loads `AgentExecutor`
        def __init__(self):
            super().__init__(AgentInstance)

Class attributes: ``spec`` (default ``$REFEREE_SPEC``), ``judge``/``judge_model``,
``max_turns`` (1), ``grade``: ``"last"`` grades the last action (``output_text``), ``"episode"``
everything after the prompt (actions and feedback, as an ``openrlhf`` row whose query is the
episode's text: the core finds the prompt's end also when OpenRLHF left-truncated it).

``feedback(states)`` (async) is the environment: it gets the step's states (``observation_text``,
``action_text``, ``label``, and ``message``: the action as an assistant message with its parsed
``tool_calls``, see ``assistant_message``) and returns the text put after the action, or
``(text, done)`` to end early, or ``{"text", "done", "messages"}`` where ``messages`` are the
turns that text stands for (``tool_result(call, content)`` for each call answered).

The episode is a trajectory: ``self.messages`` starts with the prompt as a ``user`` turn (the
text OpenRLHF gave, chat template included), then each action's assistant message and what the
environment returned (its ``messages``, else its text as a ``user`` turn, when not empty). At
``done`` it is scored with ``sample.messages`` = those turns and ``sample.state`` =
``final_state()`` (override it: the environment's state, e.g. the bookings made; default
``None``, and a spec that needs a state then fails the row as ``missing_field``).

Steps before the last return reward 0.0 (OpenRLHF sums the steps' rewards); the last returns the
spec's reward as a tensor, ``scores`` clamped to [0, 1], and ``extra_logs`` with each component
and ``referee_error`` (OpenRLHF keeps the last step's ``extra_logs``). An episode that could not
be scored gets the spec's ``on_error`` (else 0.0) with ``referee_error`` 1.0, as a reward
function's row does: OpenRLHF turns every value into a tensor, so ``None`` would crash the run.
"""


def _agent_class() -> type:
    import torch  # OpenRLHF calls `.item()` on a step's rewards
    from openrlhf.utils.agent import AgentInstanceBase

    class RefereeAgent(AgentInstanceBase):
        __doc__ = _AGENT_DOC
        spec: Any = None
        judge: Optional[str] = None
        judge_model: Optional[str] = None
        max_turns: int = 1
        grade: str = "last"

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.turn = 0
            self.prompt = ""
            self.label: Any = None
            self.messages: list[dict] = []

        async def reset(self, states: dict, **kwargs: Any) -> dict:
            self.prompt = states.get("observation", "")
            self.label = states.get("label")
            self.messages = [{"role": "user", "content": self.prompt}]
            return {"observation": self.prompt}

        async def feedback(self, states: dict) -> Any:
            return ""

        def final_state(self) -> Any:
            return None

        def program(self) -> Any:
            spec = self.spec or os.environ.get("REFEREE_SPEC")
            opts = {"spec": spec, "judge": self.judge, "judge_model": self.judge_model}
            return program(spec_from(opts), **judge_opts(opts))

        def row(self, states: dict) -> dict:
            # An `openrlhf` row either way: the last action after the prompt, or the whole
            # episode's text, whose prompt part the core finds (also when left-truncated); the
            # turns and the final state ride along.
            if self.grade == "episode":
                query = states.get("observation_text", "") + states.get("action_text", "")
            else:
                query = self.prompt + states.get("action_text", "")
            return {"query": query, "prompt": self.prompt, "label": self.label,
                    "messages": self.messages, "state": self.final_state()}

        async def step(self, states: dict, **kwargs: Any) -> dict:
            import asyncio

            self.turn += 1
            message = assistant_message(states.get("action_text") or "", self.turn)
            self.messages.append(message)
            text, done, turns = _feedback(await self.feedback({**states, "message": message}))
            if turns is not None:
                self.messages.extend(turns)
            elif text:
                self.messages.append({"role": "user", "content": text})
            done = done or self.turn >= self.max_turns
            out: dict[str, Any] = {
                "environment_feedback": text,
                "done": done,
                "sampling_params": states.get("sampling_params"),
            }
            if not done:
                out.update(rewards=torch.tensor(0.0), scores=torch.tensor(0.0), extra_logs={})
                return out
            prog = self.program()
            ans = await asyncio.to_thread(score_rows, prog, [self.row(states)])
            out.update(
                rewards=torch.tensor(ans["rewards"][0]),
                scores=torch.tensor(ans["scores"][0]),
                extra_logs={k: v[0] for k, v in ans["extra_logs"].items()},
            )
            return out

    return RefereeAgent


_lazy: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    # RefereeAgent subclasses OpenRLHF's class, so it is built on first use: the rest of this
    # module imports without OpenRLHF installed.
    if name == "RefereeAgent":
        if name not in _lazy:
            _lazy[name] = _agent_class()
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
