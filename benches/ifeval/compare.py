"""Agreement and throughput of Referee's ifeval grader against lm-evaluation-harness's IFEval.

    ~/.cache/referee/ifeval-venv/bin/python benches/ifeval/compare.py \
        --referee target/release/referee --rows rows.jsonl [--runs 3] [--out disagreements.jsonl]

(a) Agreement: every instruction of every row, strict and loose, Referee's verdict (from the
    `--explain` trace) against the reference's; disagreements are printed per instruction type
    and written in full to --out.
(b) Throughput on one core: `RAYON_NUM_THREADS=1 referee score -j 1 spec rows` (wall time of the
    whole process: start-up, parsing, scoring, writing) against the reference's checking loop
    (in-process, time of test_instruction_following_* only: its import and NLTK start-up are
    not counted). Median of --runs runs each.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference  # noqa: E402


def referee_verdicts(binary, spec, rows_path):
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    out = subprocess.run(
        [binary, "score", "-q", "-j", "1", "--explain", spec, rows_path],
        check=True, capture_output=True, text=True, env=env,
    ).stdout
    res = []
    for line in out.splitlines():
        r = json.loads(line)
        if r["status"] != "ok":
            res.append({"error": r.get("reason") or r.get("error") or r["status"]})
            continue
        res.append({"follow": [i["pass"] for i in r["trace"]["detail"]["instructions"]],
                    "why": [i["why"] for i in r["trace"]["detail"]["instructions"]]})
    return res


def referee_time(binary, spec, rows_path):
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    t0 = time.perf_counter()
    subprocess.run([binary, "score", "-q", "-j", "1", "-o", os.devnull, spec, rows_path], check=True, env=env)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--referee", required=True)
    ap.add_argument("--rows", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.rows)]
    mods = reference.load_ifeval()
    utils = mods["utils"]
    import logging

    logging.disable(logging.CRITICAL)  # langdetect "unable to detect" messages
    dis_out = open(a.out, "w") if a.out else None
    ref_times = {}
    for mode in ["strict", "loose"]:
        test = utils.test_instruction_following_loose if mode == "loose" else utils.test_instruction_following_strict
        inputs = [
            utils.InputExample(key=0, instruction_id_list=r["item"]["instruction_id_list"],
                               prompt=r["item"].get("prompt", ""), kwargs=r["item"]["kwargs"])
            for r in rows
        ]
        times = []
        ref = None
        for _ in range(a.runs):
            t0 = time.perf_counter()
            ref = [test(inp, r["sample"]["output_text"]).follow_instruction_list for inp, r in zip(inputs, rows)]
            times.append(time.perf_counter() - t0)
        ref_times[mode] = statistics.median(times)
        ours = referee_verdicts(a.referee, os.path.join(HERE, f"spec_{mode}.yaml"), a.rows)
        total = agree = errors = 0
        per_type = collections.Counter()
        per_type_n = collections.Counter()
        prompt_agree = 0
        for r, f_ref, o in zip(rows, ref, ours):
            ids = r["item"]["instruction_id_list"]
            if "error" in o:
                errors += 1
                total += len(ids)
                if dis_out:
                    dis_out.write(json.dumps({"mode": mode, "id": r["id"], "error": o["error"]}) + "\n")
                continue
            prompt_agree += all(f_ref) == all(o["follow"])
            for k, iid in enumerate(ids):
                total += 1
                per_type_n[iid] += 1
                if f_ref[k] == o["follow"][k]:
                    agree += 1
                else:
                    per_type[iid] += 1
                    if dis_out:
                        dis_out.write(json.dumps({
                            "mode": mode, "id": r["id"], "instruction": iid, "kwargs": r["item"]["kwargs"][k],
                            "reference": f_ref[k], "referee": o["follow"][k], "why": o["why"][k],
                            "text": r["sample"]["output_text"],
                        }, ensure_ascii=False) + "\n")
        passes = sum(sum(f) for f in ref)
        print(f"[{mode}] instructions: {agree}/{total} agree ({100 * agree / total:.2f} %); "
              f"prompt-level verdicts agree on {prompt_agree}/{len(rows)} rows; Referee errors: {errors}; "
              f"reference pass rate {100 * passes / total:.1f} %")
        for iid, n in sorted(per_type.items(), key=lambda x: -x[1]):
            print(f"    {iid}: {n}/{per_type_n[iid]} differ")
    print(f"per-type coverage: {len(per_type_n)} instruction types")
    for mode in ["strict", "loose"]:
        spec = os.path.join(HERE, f"spec_{mode}.yaml")
        ts = [referee_time(a.referee, spec, a.rows) for _ in range(a.runs)]
        ours = statistics.median(ts)
        theirs = ref_times[mode]
        n = len(rows)
        print(f"[{mode}] one core, {n} rows, median of {a.runs}: Referee {ours:.3f} s ({n / ours:,.0f} rows/s), "
              f"reference {theirs:.3f} s ({n / theirs:,.0f} rows/s): {theirs / ours:.1f}x "
              f"(runs: Referee {', '.join(f'{t:.3f}' for t in ts)})")


if __name__ == "__main__":
    main()
