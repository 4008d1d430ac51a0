"""Helpers shared by the adapters: compiled programs cached by spec, row-data checks, scoring
that never stops a trainer."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from ._api import Program, SpecLike, compile

_JSONISH = (str, int, float, bool, type(None), list, tuple, dict)
# Values the core converts (numpy/torch scalars and arrays) although they are not JSON.
_CONVERTED_MODULES = ("numpy", "torch")
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
    """Whether a dataset column value goes into a row: JSON-like, or numpy/torch (converted by
    the core). Images and other objects are not row data."""
    return isinstance(v, _JSONISH) or type(v).__module__.split(".")[0] in _CONVERTED_MODULES


def scored(prog: Program, rows: list, fmt: str, log: logging.Logger) -> list:
    """``prog.score_detailed(rows, format=fmt)``, or ``None`` per row if the core refused the
    batch (never expected: rows are converted, not rejected): a trainer must get an answer for
    every row whatever happened, and the adapters turn ``None`` into a flagged error row."""
    try:
        return prog.score_detailed(rows, format=fmt)
    except Exception as e:  # noqa: BLE001
        log.warning("referee: a batch of %d rows could not be scored: %s", len(rows), e)
        return [None] * len(rows)


def judge_opts(kwargs: dict) -> dict:
    return {k: kwargs[k] for k in ("judge", "judge_model", "judge_cache", "judge_fallback") if kwargs.get(k) is not None}

