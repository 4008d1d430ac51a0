"""Agreement and throughput of Referee's ifeval grader against lm-evaluation-harness's IFEval.

    ~/.cache/referee/ifeval-venv/bin/python benches/ifeval/compare.py \
        --referee target/release/referee --rows rows.jsonl [--runs 3] [--out disagreements.jsonl]

(a) Agreement: every instruction of every row, strict and loose, Referee's verdict (from the
    `--explain` trace) against the reference's; disagreements are printed per instruction type
    and written in full to --out.
(b) Throughput on one core: `RAYON_NUM_THREADS=1 referee score -j 1 spec rows` (the whole
    process: start-up, reading and parsing the rows, scoring, writing results) against the
    reference's checking loop (in-process, test_instruction_following_* only: its imports,
    NLTK start-up and row parsing are not counted). Wall time and CPU time (user + system; on
    a shared machine CPU time is the steadier of the two), median of --runs runs each.
"""

import argparse
import collections
import json
import os
import resource
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
    """(wall seconds, CPU seconds) of one `referee score` process."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([binary, "score", "-q", "-j", "1", "-o", os.devnull, spec, rows_path], check=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--referee", required=True)
    ap.add_argument("--rows", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--criterion", default=None,
                    help="target/criterion of a `cargo bench --bench ifeval` run over the same rows: "
                         "also report the scoring-only ratio")
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
        walls, cpus = [], []
        ref = None
        for _ in range(a.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            ref = [test(inp, r["sample"]["output_text"]).follow_instruction_list for inp, r in zip(inputs, rows)]
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        ref_times[mode] = (walls, cpus)
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
        ours = [referee_time(a.referee, spec, a.rows) for _ in range(a.runs)]
        o_wall = statistics.median(t[0] for t in ours)
        o_cpu = statistics.median(t[1] for t in ours)
        r_wall = statistics.median(ref_times[mode][0])
        r_cpu = statistics.median(ref_times[mode][1])
        n = len(rows)
        print(f"[{mode}] one core, {n} rows, median of {a.runs}: "
              f"Referee wall {o_wall:.3f} s / CPU {o_cpu:.3f} s ({n / o_cpu:,.0f} rows per CPU-second); "
              f"reference wall {r_wall:.3f} s / CPU {r_cpu:.3f} s ({n / r_cpu:,.0f} rows per CPU-second); "
              f"ratio wall {r_wall / o_wall:.1f}x, CPU {r_cpu / o_cpu:.1f}x")
        print(f"    runs (wall, CPU): Referee {', '.join(f'({w:.3f}, {c:.3f})' for w, c in ours)}; "
              f"reference {', '.join(f'({w:.3f}, {c:.3f})' for w, c in zip(*ref_times[mode]))}")
        if a.criterion:
            est = os.path.join(a.criterion, "component", f"ifeval_{mode}", "new", "estimates.json")
            secs = json.load(open(est))["median"]["point_estimate"] / 1e9
            print(f"[{mode}] scoring only (criterion median, samples already parsed): Referee {secs * 1000:.1f} ms "
                  f"({n / secs:,.0f} rows/s); reference loop CPU {r_cpu * 1000:.0f} ms: {r_cpu / secs:.1f}x")


if __name__ == "__main__":
    main()
