"""referee.ray.Scorer on a real local Ray cluster: a Parquet file scored with several workers,
every row back once, in order, with the rewards of a local run."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import referee
import referee.parquet
import referee.ray
from conftest import GOLDS, WRONG, completion


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True,
             log_to_driver=False, _node_ip_address="127.0.0.1")
    yield
    ray.shutdown()


def make_rows(n: int) -> list[dict]:
    rng = random.Random(11)
    rows = []
    for i in range(n):
        q = i % len(GOLDS)
        rows.append({"id": i, "prompt": f"Question {q}", "solution": GOLDS[q],
                     "completion": completion(rng, GOLDS[q], WRONG[q])})
    return rows


def test_scores_a_parquet_file_on_a_local_cluster(cluster, tmp_path: Path, specs: Path):
    rows = make_rows(2000)
    src = tmp_path / "rollouts.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src, row_group_size=250)
    spec = str(specs / "math_format.yaml")

    # Ray Data may reorder blocks for speed; a scoring job wants its rows back in order.
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    ds = ray.data.read_parquet(str(src)).repartition(8)
    scored = ds.map_batches(
        referee.ray.Scorer, fn_constructor_args=(spec,), fn_constructor_kwargs={"format": "trl"},
        batch_format="pyarrow", batch_size=100, concurrency=2, num_cpus=0.5,
    )
    out = scored.to_arrow_refs()
    table = pa.concat_tables(ray.get(out))
    assert table.num_rows == len(rows)
    ids = table.column("id").to_pylist()
    assert ids == list(range(len(rows)))  # every row once, in order
    local = referee.compile(spec).score_detailed(rows, format="trl")
    assert table.column("reward").to_pylist() == [r.reward for r in local]
    assert table.column("components.accuracy").to_pylist() == [r.components["accuracy"] for r in local]
    assert set(table.column("status").to_pylist()) == {"ok"}
    # The work was spread: more than one worker process scored batches.
    import os

    class Pid(referee.ray.Scorer):
        def __call__(self, batch):
            out = super().__call__(batch)
            return out.append_column("pid", pa.array([os.getpid()] * out.num_rows))

    t = ds.map_batches(Pid, fn_constructor_args=(spec,), fn_constructor_kwargs={"format": "trl"},
                       batch_format="pyarrow", batch_size=100, concurrency=2, num_cpus=0.5)
    pids = set(pa.concat_tables(ray.get(t.to_arrow_refs())).column("pid").to_pylist())
    assert len(pids) == 2


def test_scorer_on_pandas_and_numpy_batches(specs: Path):
    import numpy as np
    import pandas as pd

    s = referee.ray.Scorer(str(specs / "label.yaml"), format="referee", response_field="text")
    df = pd.DataFrame({"item": [{"label": "2"}, {"label": "3"}], "text": ["\\boxed{2}", "\\boxed{2}"]})
    out = s(df)
    assert out["reward"].tolist() == [1.0, 0.0] and list(out.columns[:2]) == ["item", "text"]
    batch = {"item": np.array([{"label": "2"}], dtype=object), "text": np.array(["\\boxed{2}"])}
    assert s(batch)["reward"] == [1.0]


def test_parquet_file_helper_matches_the_cli(cli, tmp_path: Path, specs: Path):
    rows = make_rows(50)
    src, dst = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    spec = specs / "math_format.yaml"
    referee.parquet.score_file(spec, src, dst, format="trl")
    t = pq.read_table(dst)
    want = cli(spec, rows, "--format", "trl")
    assert t.column("id").to_pylist() == [w["id"] for w in want]
    assert t.column("reward").to_pylist() == [w["reward"] for w in want]
    assert t.column("components.format").to_pylist() == [w["components"]["format"] for w in want]
