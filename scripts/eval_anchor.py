#!/usr/bin/env python3
"""Checks `referee eval --gold`'s correlations against SciPy, the anchor they reproduce.

    python3 scripts/eval_anchor.py [--referee target/debug/referee]

Creates (once) a venv under ~/.cache/referee/eval-venv with pinned numpy and SciPy from PyPI,
then, for the scored fixture (fixtures/eval/scores.jsonl with fixtures/eval/math.yaml):
runs `referee score` for the per-row rewards, computes scipy.stats.pearsonr, spearmanr and
kendalltau (variant "b") over the rows that scored and have a gold score, overall and per subset,
and compares them with `referee eval --gold human` (to 1e-12). Exits 1 on any difference.
Undefined correlations (constant columns) must be NaN in SciPy and null in Referee.
"""

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("REFEREE_CACHE_DIR", Path.home() / ".cache" / "referee"))
VENV = CACHE / "eval-venv"
PINS = ["numpy==2.2.6", "scipy==1.15.3"]
SPEC = "fixtures/eval/math.yaml"
DATA = "fixtures/eval/scores.jsonl"
GOLD = "human"


def ensure_venv() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    ok = subprocess.run([str(py), "-c", "import numpy, scipy"], capture_output=True)
    if ok.returncode != 0:
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PINS], check=True)
    return py


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--referee", default=str(ROOT / "target" / "debug" / "referee"))
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.inner:
        py = ensure_venv()
        return subprocess.run([str(py), __file__, "--inner", "--referee", args.referee]).returncode

    from scipy import stats  # noqa: PLC0415 (only inside the venv)

    scored = subprocess.run(
        [args.referee, "score", SPEC, DATA, "--quiet"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    rows = [json.loads(line) for line in (ROOT / DATA).read_text().splitlines() if line.strip()]
    pairs: dict[str, list[tuple[float, float]]] = {}
    for row, res in zip(rows, map(json.loads, scored)):
        if res["status"] != "ok" or res["reward"] is None or GOLD not in row:
            continue
        for key in ("__overall__", row.get("subset")):
            pairs.setdefault(key, []).append((res["reward"], float(row[GOLD])))

    report = json.loads(
        subprocess.run(
            [args.referee, "eval", SPEC, DATA, "--gold", GOLD, "--bootstrap", "0", "--quiet"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    ours = {"__overall__": report["correlation"]}
    ours.update({s["subset"]: s for s in report["subsets"]})

    failures = 0
    for key, xy in sorted(pairs.items()):
        x = [p[0] for p in xy]
        y = [p[1] for p in xy]
        anchor = {
            "pearson": stats.pearsonr(x, y).statistic if len(x) >= 2 else math.nan,
            "spearman": stats.spearmanr(x, y).statistic,
            "kendall_tau_b": stats.kendalltau(x, y, variant="b").statistic,
        }
        for name, want in anchor.items():
            got = ours[key][name]["value"]
            same = (got is None and math.isnan(want)) or (got is not None and abs(got - want) < 1e-12)
            failures += not same
            print(f"{'ok  ' if same else 'DIFF'} {key:<12} {name:<14} scipy {want!r:<22} referee {got!r}")
    print("all equal" if not failures else f"{failures} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
