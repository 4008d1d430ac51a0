"""OpenRLHF adapter (0.11.2): the ``--reward.remote_url <file>.py`` reward function and an
``AgentInstanceBase`` for ``--train.agent_func_path`` multi-turn runs.

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

import logging
import os
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
``action_text``, ``label``) and returns the text put after the action, or ``(text, done)`` to end
early. Steps before the last return reward 0.0 (OpenRLHF sums the steps' rewards); the last
returns the spec's reward as a tensor, ``scores`` clamped to [0, 1], and ``extra_logs`` with each
component and ``referee_error`` (OpenRLHF keeps the last step's ``extra_logs``).
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

        async def reset(self, states: dict, **kwargs: Any) -> dict:
            self.prompt = states.get("observation", "")
            self.label = states.get("label")
            return {"observation": self.prompt}

        async def feedback(self, states: dict) -> Any:
            return ""

        def program(self) -> Any:
            spec = self.spec or os.environ.get("REFEREE_SPEC")
            opts = {"spec": spec, "judge": self.judge, "judge_model": self.judge_model}
            return program(spec_from(opts), **judge_opts(opts))

        def row(self, states: dict) -> dict:
            # An `openrlhf` row either way: the last action after the prompt, or the whole
            # episode's text, whose prompt part the core finds (also when left-truncated).
            if self.grade == "episode":
                query = states.get("observation_text", "") + states.get("action_text", "")
            else:
                query = self.prompt + states.get("action_text", "")
            return {"query": query, "prompt": self.prompt, "label": self.label}

        async def step(self, states: dict, **kwargs: Any) -> dict:
            import asyncio

            self.turn += 1
            fb = await self.feedback(states)
            text, done = fb if isinstance(fb, tuple) else (fb, False)
            done = bool(done) or self.turn >= self.max_turns
            out: dict[str, Any] = {
                "environment_feedback": text or "",
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
