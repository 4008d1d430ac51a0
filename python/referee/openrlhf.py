"""OpenRLHF adapter: the ``--reward.remote_url <file>.py`` reward function.

    # reward_func.py, given to OpenRLHF as --reward.remote_url reward_func.py
    from referee.openrlhf import reward_func   # spec from $REFEREE_SPEC

``reward_func(queries, prompts, labels, **kwargs)``: each query is the templated prompt plus the
response (special tokens kept); the response is the query with its prompt removed when it
starts with it (the whole query otherwise), exactly as ``referee serve``'s ``/get_reward``
does, and the sample's item is ``{"prompt": prompt, "label": label}`` (``{{item.label}}``).
Returns ``{"rewards", "scores", "extra_logs"}``: lists (a torch tensor for ``rewards`` when torch
is importable), ``extra_logs`` holding each named component and an ``error`` flag. OpenRLHF needs
numbers, so a sample that could not be scored gets 0.0 with ``error`` 1: filter on it, or give the
spec an ``on_error:`` reward.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from referee._util import judge_opts, maybe_nan, program, spec_from


def rows(queries: Sequence[str], prompts: Optional[Sequence[str]], labels: Optional[Sequence[Any]]) -> list[dict]:
    out = []
    for i, q in enumerate(queries):
        prompt = prompts[i] if prompts is not None and i < len(prompts) else ""
        response = q[len(prompt):] if q.startswith(prompt) else q
        label = labels[i] if labels is not None and i < len(labels) else None
        out.append({"item": {"prompt": prompt, "label": label}, "sample": {"output_text": response}})
    return out


def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any) -> dict:
    prog = program(spec_from(kwargs), **judge_opts(kwargs))
    results = prog.score_detailed(rows(queries, prompts, labels), format="referee")
    rewards = [0.0 if r.reward is None else float(r.reward) for r in results]
    logs: dict[str, list[float]] = {
        name: [maybe_nan(r.components.get(name)) for r in results] for name in prog.component_names
    }
    logs["error"] = [float(r.status == "error") for r in results]
    try:
        import torch  # type: ignore[import-not-found]

        tensor = torch.tensor(rewards, dtype=torch.float32)
    except ImportError:
        tensor = rewards
    return {"rewards": tensor, "scores": list(rewards), "extra_logs": logs}
