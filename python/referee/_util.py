"""Helpers shared by the adapters: compiled programs cached by spec, JSON-like checks."""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

from ._api import Program, SpecLike, compile

_JSONISH = (str, int, float, bool, type(None), list, tuple, dict)
_cache: dict[Any, Program] = {}
_lock = threading.Lock()


def program(spec: "SpecLike | Program", **judge: Any) -> Program:
    """A Program for a spec, compiled once per process per (spec, judge options)."""
    if isinstance(spec, Program):
        return spec
    key = (os.fspath(spec) if isinstance(spec, os.PathLike) else spec, tuple(sorted(judge.items())))
    try:
        hash(key)
    except TypeError:  # a dict spec: compile it every time it is given (callers keep the result)
        return compile(spec, **judge)
    with _lock:
        p = _cache.get(key)
        if p is None:
            p = compile(spec, **judge)
            _cache[key] = p
        return p


def spec_from(kwargs: dict, env_var: str = "REFEREE_SPEC") -> Any:
    """The spec a trainer hook was configured with: ``kwargs["spec"]``, else ``$REFEREE_SPEC``."""
    spec = kwargs.get("spec") or os.environ.get(env_var)
    if not spec:
        raise ValueError(
            f"no spec: pass spec=<path or YAML> (verl: +reward_kwargs.spec=...) or set ${env_var}"
        )
    return spec


def jsonish(v: Any) -> bool:
    """Whether a dataset column value can go into a row (images, tensors and the like cannot)."""
    return isinstance(v, _JSONISH)


def judge_opts(kwargs: dict) -> dict:
    return {k: kwargs[k] for k in ("judge", "judge_model", "judge_cache", "judge_fallback") if kwargs.get(k) is not None}


def maybe_nan(v: Optional[float]) -> float:
    return float("nan") if v is None else float(v)
