"""The core API: ``compile`` and ``Program``. A thin layer over the native module: it reads
spec files, raises ``SpecError``, and adds the asyncio variants."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from . import _referee
from ._referee import Result

SpecLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

_SPEC_SUFFIXES = (".yaml", ".yml", ".json")


class SpecError(ValueError):
    """The spec did not compile. ``errors`` holds every error, each
    ``{"path": JSON pointer, "node_type": str | None, "message": str}``."""

    def __init__(self, errors: Sequence[Mapping[str, Any]], source: Optional[str] = None):
        self.errors = [dict(e) for e in errors]
        self.source = source
        lines = []
        for e in self.errors:
            where = e["path"] or "/"
            if e.get("node_type"):
                where += f" ({e['node_type']})"
            lines.append(f"  {where}: {e['message']}")
        head = f"{source}: " if source else ""
        super().__init__(f"{head}the spec has {len(self.errors)} error(s):\n" + "\n".join(lines))


class Component(NamedTuple):
    """A top-level component: its name and the weight a trainer that sums rewards gives it."""

    name: str
    weight: float


def _read_spec(spec: SpecLike) -> tuple[Any, Optional[str]]:
    """A spec as text or a value, and the file it came from. A ``Path`` is a file; a ``str`` is
    a file when it is one line naming an existing ``.yaml``/``.yml``/``.json`` file, else text."""
    if isinstance(spec, os.PathLike):
        p = Path(spec)
        return p.read_text(encoding="utf-8"), str(p)
    if isinstance(spec, str):
        s = spec.strip()
        if "\n" not in s and s.endswith(_SPEC_SUFFIXES) and os.path.isfile(s):
            return Path(s).read_text(encoding="utf-8"), s
        return spec, None
    if isinstance(spec, Mapping):
        return dict(spec), None
    raise TypeError(f"a spec is text, a path or a dict, not {type(spec).__name__}")


def compile(
    spec: SpecLike,
    *,
    judge: Optional[str] = None,
    judge_model: Optional[str] = None,
    judge_cache: Optional[str] = None,
) -> "Program":
    """Compiles a grader spec (YAML/JSON text, a path, or a dict).

    ``judge`` is an OpenAI-compatible endpoint (``http://host:port/v1``) named ``default``, with
    ``judge_model`` (default ``judge``): the CLI's ``--judge``/``--judge-model``.
    ``judge_cache`` overrides the spec's ``judge_cache:``: ``off``, ``memory``, a file path, or
    ``redis://host:port/db``. Raises ``SpecError`` with every error and its path.
    """
    value, source = _read_spec(spec)
    native, errors = _referee.compile(
        value, judge=judge, judge_model=judge_model, judge_cache=judge_cache
    )
    if errors is not None:
        raise SpecError(
            [{"path": p, "node_type": t, "message": m} for p, t, m in errors], source
        )
    return Program(native)


class Program:
    """A compiled spec. Immutable and thread-safe; the GIL is released while it scores.

    Samples are dicts in any row format the core maps (``format="auto"`` picks per row):
    Referee/OpenAI ``{"item": {...}, "sample": {"output_text": ...}}``, TRL
    ``{"prompt", "completion", <columns>}``, verl ``{"data_source", "reward_model":
    {"ground_truth"}, "extra_info", "response"}``. A sample that cannot be scored comes back as
    a status (``None`` reward), never as an exception.
    """

    __slots__ = ("_native", "_parts")

    def __init__(self, native: Any):
        self._native = native
        self._parts: Optional[list] = None

    def score(self, samples: Iterable[Mapping[str, Any]], **mapping: Any) -> list[Optional[float]]:
        """Rewards in input order; ``None`` where a sample could not be scored or nothing
        applied. ``mapping``: ``format``, ``id_field``, ``group_field``, ``response_field``."""
        return self._native.score(_as_list(samples), **mapping)

    def score_detailed(
        self, samples: Iterable[Mapping[str, Any]], *, explain: bool = False, **mapping: Any
    ) -> list[Result]:
        """Full results in input order: reward, status, reason, components, advantage, usage
        (and trace with ``explain=True``)."""
        return self._native.score_detailed(_as_list(samples), explain=explain, **mapping)

    def explain(self, sample: Mapping[str, Any], **mapping: Any) -> Result:
        """One sample's result with its explanation tree (``result.trace``)."""
        return self._native.explain(sample, **mapping)

    async def score_async(
        self, samples: Iterable[Mapping[str, Any]], **mapping: Any
    ) -> list[Optional[float]]:
        """``score`` on a worker thread, so the event loop keeps running meanwhile."""
        return await asyncio.to_thread(self.score, _as_list(samples), **mapping)

    async def score_detailed_async(
        self, samples: Iterable[Mapping[str, Any]], *, explain: bool = False, **mapping: Any
    ) -> list[Result]:
        """``score_detailed`` on a worker thread."""
        return await asyncio.to_thread(
            self.score_detailed, _as_list(samples), explain=explain, **mapping
        )

    async def explain_async(self, sample: Mapping[str, Any], **mapping: Any) -> Result:
        return await asyncio.to_thread(self.explain, sample, **mapping)

    @property
    def component_names(self) -> list[str]:
        """Every named component in spec order: the keys of each result's ``components``."""
        return self._native.component_names

    @property
    def components(self) -> list[Component]:
        """The top-level components and their weights: the inputs of a root ``weighted_sum``
        (``normalize`` none/sum/abs_sum) with the weights that give the same sum, else the
        whole spec with weight 1. TRL's ``reward_funcs``/``reward_weights`` are these."""
        return [Component(name, weight) for name, weight, _ in self.parts()]

    def parts(self) -> list[tuple[str, float, "Program"]]:
        """``(name, weight, Program)`` per top-level component, each compiled on its own."""
        if self._parts is None:
            parts = []
            for name, weight, native in self._native.parts():
                if isinstance(native, list):  # a part that does not compile alone
                    raise SpecError(
                        [{"path": p, "node_type": t, "message": m} for p, t, m in native],
                        f"component {name}",
                    )
                parts.append((name, weight, self if native is self._native else Program(native)))
            self._parts = parts
        return list(self._parts)

    @property
    def waits(self) -> bool:
        """Whether scoring waits on a sandbox or a judge."""
        return self._native.waits

    def __repr__(self) -> str:
        return f"Program(components={self.component_names!r})"


def _as_list(samples: Iterable[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    if isinstance(samples, (list, tuple)):
        return samples
    if isinstance(samples, Mapping):
        raise TypeError("samples is a list of dicts; for one sample use explain() or [sample]")
    return list(samples)
