"""Parquet in and out with pyarrow (``pip install pyarrow``), the same row mappings as JSONL.

Rows are read into dicts and scored like any other rows; results are written as columns
``id``, ``reward``, ``status``, ``reason``, ``message`` and one ``components.<name>`` per component
(plus ``advantage`` with a ``group:`` stage), one row per input row, in order.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ._api import Program, Result, SpecLike
from ._util import program


def read_rows(path: "str | os.PathLike[str]") -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def result_columns(results: list[Result], component_names: list[str]) -> dict[str, list]:
    cols: dict[str, list] = {
        "id": [r.id if r.id is None or isinstance(r.id, (str, int)) else str(r.id) for r in results],
        "reward": [r.reward for r in results],
        "status": [r.status for r in results],
        "reason": [r.reason for r in results],
        "message": [r.message for r in results],
    }
    for n in component_names:
        cols[f"components.{n}"] = [r.components.get(n) for r in results]
    if any(r.advantage is not None for r in results):
        cols["advantage"] = [r.advantage for r in results]
    if any(isinstance(v, int) for v in cols["id"]) and any(isinstance(v, str) for v in cols["id"]):
        cols["id"] = [None if v is None else str(v) for v in cols["id"]]
    return cols


def score_file(spec: "SpecLike | Program", input: "str | os.PathLike[str]",
               output: "str | os.PathLike[str]", *, judge: Optional[dict] = None,
               **mapping: Any) -> list[Result]:
    """Scores a Parquet file into a Parquet file of results; returns the results."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    prog = program(spec, **(judge or {}))
    results = prog.score_detailed(read_rows(input), **mapping)
    pq.write_table(pa.table(result_columns(results, prog.component_names)), output)
    return results
