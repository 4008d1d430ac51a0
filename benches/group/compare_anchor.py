"""The anchors' group advantage computation on the batch `cargo bench --bench group` uses.

1,048,576 rewards in groups of 16, ~3% failed (NaN, left out as TRL's nanmean does), a third of
the groups flat. Times, medians of --runs:
  numpy_trl   TRL's GRPOTrainer formula vectorised: reshape (-1, 16), nanmean, nanstd (ddof=1),
              (r - mean) / (std + 1e-4). Advantages only: no flags, no diagnostics.
  python_verl verl's compute_grpo_outcome_advantage control flow in plain Python (a dict of
              lists per uid, then a loop), without torch.
Run: sh benches/group/setup.sh && ~/.cache/referee/group-venv/bin/python benches/group/compare_anchor.py
"""

import argparse
import random
import statistics
import time
from collections import defaultdict

import numpy as np

N, G = 1 << 20, 16


def batch():
    rng = random.Random(7)
    r = np.empty(N)
    for g in range(N // G):
        kind = g % 3
        for k in range(G):
            x = rng.getrandbits(32)
            correct = 0.0 if kind == 0 else 1.0 if kind == 1 else float(x % 2 == 0)
            fmt = float((x >> 8) % 4 != 0)
            r[g * G + k] = np.nan if (x >> 16) % 32 == 0 else 0.8 * correct + 0.2 * fmt
    return r


def numpy_trl(r):
    g = r.reshape(-1, G)
    mean = np.nanmean(g, axis=1, keepdims=True)
    std = np.nanstd(g, axis=1, ddof=1, keepdims=True)
    return ((g - mean) / (std + 1e-4)).reshape(-1)


def python_verl(scores, index):
    id2score = defaultdict(list)
    for i, s in enumerate(scores):
        if s == s:  # not NaN
            id2score[index[i]].append(s)
    id2mean, id2std = {}, {}
    for k, v in id2score.items():
        if len(v) == 1:
            id2mean[k], id2std[k] = 0.0, 1.0
        else:
            id2mean[k] = statistics.fmean(v)
            id2std[k] = statistics.stdev(v)
    out = [0.0] * len(scores)
    for i, s in enumerate(scores):
        if s == s:
            out[i] = (s - id2mean[index[i]]) / (id2std[index[i]] + 1e-6)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    r = batch()
    scores = r.tolist()
    index = [i // G for i in range(N)]
    for name, f in [("numpy_trl", lambda: numpy_trl(r)), ("python_verl", lambda: python_verl(scores, index))]:
        ts = []
        for _ in range(a.runs):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        print(f"{name:12s} median {statistics.median(ts) * 1000:8.1f} ms  ({a.runs} runs)")


if __name__ == "__main__":
    main()
