#!/usr/bin/env python3
"""Score a Parquet file of rollouts on a local Ray cluster with referee.ray.Scorer.

    python examples/ray/score_parquet.py                      # makes rollouts.parquet first
    python examples/ray/score_parquet.py IN.parquet OUT.parquet [--spec spec.yaml] [--workers 2]

Each worker compiles the spec once (Scorer.__init__) and scores batches of rows; the output is
the input's columns plus reward, status, reason and components.<name>, in input order. Needs
`pip install . "ray[data]" pyarrow` (see README, Python). Loopback only: the cluster is started
here with the dashboard off.
"""

from __future__ import annotations

import argparse
import os
import random
import time

import pyarrow as pa
import pyarrow.parquet as pq
import ray

import referee.ray

HERE = os.path.dirname(os.path.abspath(__file__))


def make_rollouts(path: str, n: int) -> None:
    """GSM8K-like rollouts: 8 completions per question, right or wrong, formatted or not."""
    rng = random.Random(0)
    rows = []
    for i in range(n):
        q = i // 8
        gold = str(q * 7 % 100)
        ans = gold if rng.random() < 0.5 else str(int(gold) + 1)
        fmt = rng.random() < 0.5
        text = (f"<think>\n{q}*7 mod 100\n</think>\n<answer>\n\\boxed{{{ans}}}\n</answer>" if fmt
                else f"The answer is \\boxed{{{ans}}}.")
        rows.append({"id": i, "prompt": f"What is {q}*7 mod 100?", "completion": text,
                     "solution": gold})
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=1024)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", nargs="?", default=os.path.join(HERE, "rollouts.parquet"))
    ap.add_argument("output", nargs="?", default=os.path.join(HERE, "scored.parquet"))
    ap.add_argument("--spec", default=os.path.join(HERE, "spec.yaml"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", type=int, default=20_000, help="rows to generate when INPUT is missing")
    args = ap.parse_args()
    if not os.path.exists(args.input):
        make_rollouts(args.input, args.rows)

    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1")
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    t0 = time.perf_counter()
    ds = ray.data.read_parquet(args.input)
    scored = ds.map_batches(
        referee.ray.Scorer,
        fn_constructor_args=(args.spec,),
        fn_constructor_kwargs={"format": "trl"},
        batch_format="pyarrow",
        batch_size=1024,
        concurrency=args.workers,
        num_cpus=0.5,  # leave CPU for the read tasks on a small cluster
    )
    # Blocks in order (preserve_order), gathered into one file.
    table = pa.concat_tables(ray.get(scored.to_arrow_refs()))
    pq.write_table(table, args.output)
    secs = time.perf_counter() - t0
    rewards = [r for r in table.column("reward").to_pylist() if r is not None]
    print(f"scored {table.num_rows} rows with {args.workers} workers in {secs:.1f}s; "
          f"mean reward {sum(rewards) / max(len(rewards), 1):.3f}; wrote {args.output}")
    ray.shutdown()


if __name__ == "__main__":
    main()
