"""verl adapter: a custom reward function for verl ≥ 0.9's reward loop.

verl 0.9 reads the function from ``reward.custom_reward_function.*``::

    reward.custom_reward_function.path=$(python -c 'import referee.verl as m; print(m.__file__)')
    reward.custom_reward_function.name=compute_score          # or compute_score_async
    +reward.custom_reward_function.reward_kwargs.spec=/path/to/spec.yaml   # or $REFEREE_SPEC

The old top-level ``custom_reward_function.*`` keys are ignored since verl 0.9.0 (``main_ppo``
no longer migrates them): verl then silently scores with its own ``default_compute_score``.

Every reward-loop manager (``naive``, ``dapo``, ``gdpo``) calls the function per sample with
keywords: ``data_source, solution_str, ground_truth, extra_info`` (with ``num_turns``,
``rollout_reward_scores``, tool fields, numpy scalars and arrays among them: the core converts
them), plus ``reward_router_address`` and ``reward_model_tokenizer`` when a reward model runs, plus
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

GDPO: ``gdpo_overrides(spec)`` gives the hydra overrides for ``algorithm.gdpo_reward_keys`` and
``algorithm.gdpo_reward_weights`` from the spec's top-level components (``gdpo_settings`` the
same as a dict).

Judges: when verl runs a generative reward model, ``reward_router_address`` (``host:port`` of
verl's router, which proxies the OpenAI API of its vLLM/SGLang servers) becomes the judge
endpoint ``http://host:port/v1`` named ``default``, with the reward model's path as the model
name, for specs whose ``judges:`` section is absent; a spec's own judges win, and the
``judge``/``judge_fallback``/``judge_model`` reward kwargs win over the router.
"""

from __future__ import annotations

# Absolute imports: verl loads this file by path (custom_reward_function.path), outside the package.

import asyncio
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
