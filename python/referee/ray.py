"""Ray Data adapter: score a dataset with workers that each compile the spec once.

    import ray, referee.ray
    ds = ray.data.read_parquet("rollouts.parquet")
    scored = ds.map_batches(referee.ray.Scorer, fn_constructor_args=("spec.yaml",),
                            batch_format="pyarrow", concurrency=4, num_cpus=0.5)

Set ``ray.data.DataContext.get_current().execution_options.preserve_order = True`` to get rows
back in input order. On a small cluster give the scorers a fraction of a CPU (``num_cpus=0.5``):
actors holding every CPU leave none for the read tasks and the pipeline stalls.

``Scorer(spec, *, format="auto", id_field=None, group_field=None, response_field=None,
judge=None, judge_model=None, judge_cache=None)`` is a callable class: Ray builds one per worker
(the spec compiled in ``__init__``) and calls it on batches. A batch (pyarrow Table, pandas
DataFrame, or dict of columns) comes back with its columns plus ``reward``, ``status``,
``reason`` and one ``components.<name>`` per component, row for row. With a ``group:`` stage,
groups are whatever each batch holds: keep a group's rows in one batch.
"""

from __future__ import annotations

from typing import Any, Optional

from ._api import SpecLike, compile


class Scorer:
    def __init__(self, spec: SpecLike, *, judge: Optional[str] = None,
                 judge_model: Optional[str] = None, judge_cache: Optional[str] = None,
                 **mapping: Any):
        self.program = compile(spec, judge=judge, judge_model=judge_model, judge_cache=judge_cache)
        self.mapping = mapping

    def _score(self, rows: list[dict]) -> dict[str, list]:
        results = self.program.score_detailed(rows, **self.mapping)
        cols: dict[str, list] = {
            "reward": [r.reward for r in results],
            "status": [r.status for r in results],
            "reason": [r.reason for r in results],
        }
        for n in self.program.component_names:
            cols[f"components.{n}"] = [r.components.get(n) for r in results]
        return cols

    def __call__(self, batch: Any) -> Any:
        try:
            import pyarrow as pa
        except ImportError:  # pragma: no cover - ray[data] brings pyarrow
            pa = None
        if pa is not None and isinstance(batch, pa.Table):
            cols = self._score(batch.to_pylist())
            for k, v in cols.items():
                batch = batch.append_column(k, pa.array(v, type=pa.float64() if k != "status" and k != "reason" else pa.string()))
            return batch
        if hasattr(batch, "to_dict") and hasattr(batch, "columns"):  # pandas
            out = batch.copy()
            for k, v in self._score(batch.to_dict("records")).items():
                out[k] = v
            return out
        # dict of columns (numpy arrays or lists)
        names = list(batch)
        lists = {k: (v.tolist() if hasattr(v, "tolist") else list(v)) for k, v in batch.items()}
        n = len(lists[names[0]]) if names else 0
        rows = [{k: lists[k][i] for k in names} for i in range(n)]
        out = dict(batch)
        out.update(self._score(rows))
        return out
