#!/usr/bin/env python3
"""Regenerates fixtures/parquet/: the gsm8k example's rows written by pyarrow, as verl's
preprocessing scripts write their data (pyarrow's defaults: snappy). The rows that are not JSON
(the example keeps a garbage line on purpose) are left out. Needs pyarrow:
    python3 scripts/make_parquet_fixtures.py
"""
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

root = pathlib.Path(__file__).resolve().parent.parent
rows = []
for line in (root / "examples/gsm8k/samples.jsonl").read_text().splitlines():
    try:
        rows.append(json.loads(line))
    except json.JSONDecodeError:
        pass
out = root / "fixtures/parquet/gsm8k_verl.parquet"
out.parent.mkdir(parents=True, exist_ok=True)
pq.write_table(pa.Table.from_pylist(rows), out)
print(f"wrote {out.relative_to(root)} ({out.stat().st_size} bytes, {len(rows)} rows)")
