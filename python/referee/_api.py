"""The core API: ``compile`` and ``Program``. A thin layer over the native module: it reads
spec files, raises ``SpecError``, and adds the asyncio variants."""

from __future__ import annotations

import asyncio
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from . import _referee
from ._referee import Result

SpecLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]
#: An audit's data: a list of row dicts, or a path to a JSONL / JSON-array / Parquet file.
RowsLike = Union[str, "os.PathLike[str]", Iterable[Mapping[str, Any]]]

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
    judge_fallback: Optional[str] = None,
    tokenizer: Optional[str] = None,
) -> "Program":
    """Compiles a grader spec (YAML/JSON text, a path, or a dict).

    ``judge`` is an OpenAI-compatible endpoint (``http://host:port/v1``) named ``default``, with
    ``judge_model`` (default ``judge``): the CLI's ``--judge``/``--judge-model``.
    ``judge_fallback`` is the same, but only for a spec without a ``judges:`` section (a
    trainer's own judge router, which must not override the judges a spec names).
    ``judge_cache`` overrides the spec's ``judge_cache:``: ``off``, ``memory``, a file path, or
    ``redis://host:port/db``. Raises ``SpecError`` with every error and its path.
    ``tokenizer`` is the policy's ``tokenizer.json`` (the CLI's ``--tokenizer``): step rewards of
    rows with ``completion_ids`` then carry ``token_start``/``token_end``; a file that does not
    load raises ``ValueError``.
    """
    value, source = _read_spec(spec)
    native, errors = _referee.compile(
        value, judge=judge, judge_model=judge_model, judge_cache=judge_cache,
        judge_fallback=judge_fallback, tokenizer=None if tokenizer is None else str(tokenizer),
    )
    if errors is not None:
        raise SpecError(
            [{"path": p, "node_type": t, "message": m} for p, t, m in errors], source
        )
    return Program(native, source)


class Program:
    """A compiled spec. Immutable and thread-safe; the GIL is released while it scores.

    Samples are dicts in any row format the core maps (``format="auto"`` picks per row):
    Referee/OpenAI ``{"item": {...}, "sample": {"output_text": ...}}``, TRL
    ``{"prompt", "completion", <columns>}``, verl ``{"data_source", "reward_model":
    {"ground_truth"}, "extra_info", "response"}``. A sample that cannot be scored comes back as
    a status (``None`` reward), never as an exception.
    """

    __slots__ = ("_native", "_parts", "_source")

    def __init__(self, native: Any, source: Optional[str] = None):
        self._native = native
        self._parts: Optional[list] = None
        # The spec file's path as given: what the audits' reports call the spec, as the CLI does.
        self._source = source

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

    def openrlhf_answer(self, rows: Iterable[Mapping[str, Any]]) -> dict:
        """OpenRLHF's reward answer ``{"rewards", "scores", "extra_logs"}`` for rows
        ``{"query", "prompt", "label"}`` (the ``openrlhf`` row format: the response is the query
        after its prompt, also when the prompt was cut from the left), exactly as
        ``referee serve``'s ``/get_reward`` answers: a number for every row, the spec's
        ``on_error`` value or 0.0 where it could not be scored, with
        ``extra_logs["referee_error"]`` 1.0 there; ``scores`` clamped to [0, 1]."""
        return self._native.openrlhf_answer(_as_list(rows))

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

    def fuzz(
        self,
        rows: RowsLike,
        *,
        threshold: float = 0.5,
        families: Union[None, str, Sequence[str]] = None,
        per_row: int = 8,
        seed: int = 0,
        max_rate: float = 0.0,
        perturb: bool = True,
        max_moved: Optional[float] = None,
        examples: int = 5,
        limit: Optional[int] = None,
        exploits: Union[None, str, "os.PathLike[str]"] = None,
        format: str = "auto",
        id_field: Optional[str] = None,
        group_field: Optional[str] = None,
        response_field: Optional[str] = None,
    ) -> dict:
        """``referee fuzz``: scores adversarial variants of the rows' outputs and perturbations
        of their steps; returns the CLI's ``--json`` report (``report["failed"]`` is its exit
        code 5). Options are the CLI's flags (``perturb=False`` is ``--no-perturb``, ``limit``
        is ``--rows``, ``exploits`` a corpus folder). Rows that do not map are skipped with a
        warning, as the CLI skips them on stderr. Bad options raise ``ValueError``."""
        if isinstance(families, str):
            families = [f for f in families.split(",") if f]
        opts = _options(
            threshold=threshold, families=families, per_row=per_row, seed=seed,
            max_rate=max_rate, perturb=perturb, max_moved=max_moved, examples=examples,
            rows=limit, format=format, id_field=id_field, group_field=group_field,
            response_field=response_field,
        )
        data, name = _audit_rows(rows)
        report, skipped = self._native.fuzz(
            data, opts, label=self._source, exploits=_corpus(exploits), data_name=name
        )
        if skipped:
            warnings.warn(f"fuzz skipped {len(skipped)} row(s):\n" + "\n".join(skipped), stacklevel=2)
        return report

    def evaluate(
        self,
        rows: RowsLike,
        *,
        format: Optional[str] = None,
        gold: Optional[str] = None,
        correct: Optional[str] = None,
        responses: str = "responses",
        subset_field: str = "subset",
        bootstrap: int = 1000,
        seed: int = 0,
        confidence: float = 0.95,
        response_field: Optional[str] = None,
    ) -> dict:
        """``referee eval``: RewardBench v1/v2 accuracy, agreement with gold scores (``gold``)
        or best-of-N selection (``correct``); returns the CLI's JSON report. ``format``:
        ``auto`` (default), ``rewardbench``, ``rewardbench2``, ``scores``, ``best-of-n``."""
        opts = _options(
            format=format, gold=gold, correct=correct, responses=responses,
            subset_field=subset_field, bootstrap=bootstrap, seed=seed, confidence=confidence,
            response_field=response_field,
        )
        data, _ = _audit_rows(rows)
        return self._native.evaluate(data, opts, label=self._source)

    def compare(
        self,
        other: Optional["Program"],
        rows: RowsLike,
        *,
        label: Optional[str] = None,
        subset_field: Optional[str] = None,
        threshold: float = 0.5,
        format: str = "auto",
        id_field: Optional[str] = None,
        group_field: Optional[str] = None,
        response_field: Optional[str] = None,
    ) -> dict:
        """``referee compare``: this spec (a) against ``other`` (b), or against the ``label``
        field when ``other`` is ``None``; returns the CLI's JSON report (confusion matrix,
        rates, every disagreement)."""
        opts = _options(
            label=label, subset_field=subset_field, threshold=threshold, format=format,
            id_field=id_field, group_field=group_field, response_field=response_field,
        )
        data, _ = _audit_rows(rows)
        return self._native.compare(
            None if other is None else other._native, data, opts,
            a_name=self._source or "a",
            b_name=(other._source if other is not None else None) or "b",
        )

    @property
    def waits(self) -> bool:
        """Whether scoring waits on a sandbox or a judge."""
        return self._native.waits

    def __repr__(self) -> str:
        return f"Program(components={self.component_names!r})"


def _program(spec: "SpecLike | Program", judge: Mapping[str, Any]) -> Program:
    return spec if isinstance(spec, Program) else compile(spec, **judge)


def fuzz(
    spec: "SpecLike | Program",
    rows: RowsLike,
    *,
    judge: Optional[str] = None,
    judge_model: Optional[str] = None,
    judge_cache: Optional[str] = None,
    **options: Any,
) -> dict:
    """``referee fuzz SPEC DATA``: compiles the spec (judge options as for ``compile``) and
    returns ``Program.fuzz(rows, **options)``, the CLI's ``--json`` report."""
    j = dict(judge=judge, judge_model=judge_model, judge_cache=judge_cache)
    return _program(spec, j).fuzz(rows, **options)


def evaluate(
    spec: "SpecLike | Program",
    rows: RowsLike,
    *,
    judge: Optional[str] = None,
    judge_model: Optional[str] = None,
    judge_cache: Optional[str] = None,
    **options: Any,
) -> dict:
    """``referee eval SPEC DATA``: ``Program.evaluate(rows, **options)``, the CLI's report."""
    j = dict(judge=judge, judge_model=judge_model, judge_cache=judge_cache)
    return _program(spec, j).evaluate(rows, **options)


def compare(
    spec_a: "SpecLike | Program",
    spec_b: "SpecLike | Program | None",
    rows: RowsLike,
    *,
    judge: Optional[str] = None,
    judge_model: Optional[str] = None,
    judge_cache: Optional[str] = None,
    **options: Any,
) -> dict:
    """``referee compare SPEC_A SPEC_B DATA`` (or ``spec_b=None, label=FIELD``):
    ``Program.compare``, the CLI's report."""
    j = dict(judge=judge, judge_model=judge_model, judge_cache=judge_cache)
    b = None if spec_b is None else _program(spec_b, j)
    return _program(spec_a, j).compare(b, rows, **options)


def _options(**kw: Any) -> dict:
    """Keyword options as the core's options object; ``None`` means the core's default."""
    return {k: v for k, v in kw.items() if v is not None}


def _audit_rows(rows: RowsLike) -> tuple[Any, str]:
    """An audit's rows for the native module, and the data's name for messages: a path's text
    (JSONL or a JSON array, parsed by the core as the CLI parses it), a Parquet file's rows
    (read with pyarrow), or the given row dicts."""
    if isinstance(rows, (str, os.PathLike)):
        p = Path(rows)
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq  # the `parquet` extra

            return pq.read_table(p).to_pylist(), os.fspath(rows)
        return p.read_text(encoding="utf-8"), os.fspath(rows)
    if isinstance(rows, Mapping):
        raise TypeError("rows is a list of dicts or a data file's path, not one dict")
    return list(rows), "rows"


def _corpus(folder: Union[None, str, "os.PathLike[str]"]) -> Optional[list[tuple[str, str]]]:
    """An exploit corpus folder's ``*.yaml``/``*.yml`` files as ``(name, text)``."""
    if folder is None:
        return None
    return [
        (p.name, p.read_text(encoding="utf-8"))
        for p in sorted(Path(folder).iterdir())
        if p.suffix in (".yaml", ".yml")
    ]


def _as_list(samples: Iterable[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    if isinstance(samples, (list, tuple)):
        return samples
    if isinstance(samples, Mapping):
        raise TypeError("samples is a list of dicts; for one sample use explain() or [sample]")
    return list(samples)
