#!/usr/bin/env python3
"""Differential test of `tool_call` (all-or-nothing) against BFCL's AST checker on BFCL's own data.

Steps:
  1. The venv of benches/tool_call/bfcl_verdicts.py (~/.cache/referee/bfcl-venv: bfcl-eval
     2026.3.23 without its dependencies, plus PyYAML), created the same way when missing. The data
     files ship in the bfcl-eval package (bfcl_eval/data/, possible answers in possible_answer/).
  2. For each entry of the Python AST categories (simple_python, multiple, parallel,
     parallel_multiple and their live_ versions), model outputs are generated from its possible
     answer with a seeded RNG: the canonical answer (first acceptable value of each parameter,
     omitted when only "" is acceptable), a random acceptable choice, and mutations: a parameter
     dropped, an unknown parameter added, a string changed, a string re-cased and re-punctuated,
     an integer written as a float, a number or boolean written as a string, the calls shuffled,
     a call duplicated, a call dropped, another function called, dots in the name as underscores.
     Each output is written as Hermes `<tool_call>` blocks.
  3. BFCL's verdict: `ast_checker(docs, calls, answer, Language.PYTHON, category, model)` with
     `model_config` stubbed (see bfcl_verdicts.py); valid under either dotted-name setting.
  4. Referee's verdict: the CLI (`target/debug/referee`, built with `cargo build -p referee-cli`
     when missing; `REFEREE_BIN` overrides) scores the same rows with `{type: tool_call}`.
  5. Agreement is reported per mutation, with examples of each kind of disagreement.

Usage: python3 benches/tool_call/bfcl_differential.py [--skip-install] [--limit N]
"""

import copy
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import bfcl_verdicts  # noqa: E402

CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]


def first(alts):
    """The canonical choice among acceptable values: the first that is not the omission marker."""
    for a in alts:
        if a != "":
            return True, value_of(a)
    return False, None


def value_of(a):
    """A concrete value from a possible answer (nested dicts hold lists of acceptable values)."""
    if isinstance(a, dict):
        out = {}
        for k, alts in a.items():
            alts = alts if isinstance(alts, list) else [alts]
            present, v = first(alts)
            if present:
                out[k] = v
        return out
    if isinstance(a, list):
        return [value_of(x) for x in a]
    return a


def pick(alts, rng):
    if not alts:
        return False, None
    a = rng.choice(alts)
    return (False, None) if a == "" else (True, value_of(a))


def canonical(answer, rng=None):
    calls = []
    for e in answer:
        ((name, params),) = e.items()
        args = {}
        for k, alts in params.items():
            present, v = pick(alts, rng) if rng else first(alts)
            if present:
                args[k] = v
        calls.append({name: args})
    return calls


def mutations(answer, docs, rng):
    base = canonical(answer)
    out = [("canonical", base), ("random_choice", canonical(answer, rng))]

    def each_param(pred):
        return [(i, k, v) for i, c in enumerate(base) for k, v in next(iter(c.values())).items() if pred(v)]

    def edit(i, f):
        calls = copy.deepcopy(base)
        ((name, args),) = calls[i].items()
        r = f(name, args)
        if isinstance(r, dict):  # a replacement call; anything else edited `args` in place
            calls[i] = r
        return calls

    params = each_param(lambda v: True)
    if params:
        i, k, _ = rng.choice(params)
        out.append(("drop_param", edit(i, lambda n, a: a.pop(k, None) is None)))
        out.append(("unknown_param", edit(i, lambda n, a: a.update(zz_extra=1))))
    strs = each_param(lambda v: isinstance(v, str) and v)
    if strs:
        i, k, v = rng.choice(strs)
        out.append(("string_changed", edit(i, lambda n, a: a.update({k: v + "q"}))))
        out.append(("string_recased", edit(i, lambda n, a: a.update({k: v.upper().replace(" ", "_") + "."}))))
    ints = each_param(lambda v: isinstance(v, int) and not isinstance(v, bool))
    if ints:
        i, k, v = rng.choice(ints)
        out.append(("int_as_float", edit(i, lambda n, a: a.update({k: float(v)}))))
        out.append(("number_as_string", edit(i, lambda n, a: a.update({k: str(v)}))))
    floats = each_param(lambda v: isinstance(v, float) and v == int(v))
    if floats:
        i, k, v = rng.choice(floats)
        out.append(("integral_float_as_int", edit(i, lambda n, a: a.update({k: int(v)}))))
    bools = each_param(lambda v: isinstance(v, bool))
    if bools:
        i, k, v = rng.choice(bools)
        out.append(("bool_as_string", edit(i, lambda n, a: a.update({k: str(v).lower()}))))
    if len(base) > 1:
        shuffled = base[:]
        rng.shuffle(shuffled)
        out.append(("shuffled", shuffled))
        out.append(("call_dropped", base[:-1]))
    out.append(("call_duplicated", base + [copy.deepcopy(base[0])]))
    others = [d["name"] for d in docs if d["name"] not in {next(iter(c)) for c in base}]
    if others:
        other = rng.choice(others)
        out.append(("other_function", edit(0, lambda n, a: {other: a})))
    if any("." in next(iter(c)) for c in base):
        out.append(("dots_as_underscores", [{next(iter(c)).replace(".", "_"): next(iter(c.values()))} for c in base]))
    return out


def hermes(calls):
    return "\n".join("<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>"
                     for c in calls for n, a in c.items())


def referee_bin():
    b = os.environ.get("REFEREE_BIN") or os.path.join(ROOT, "target", "debug", "referee")
    if not os.path.exists(b):
        subprocess.run(["cargo", "build", "-q", "-p", "referee-cli"], cwd=ROOT, check=True)
    return b


def main():
    import bfcl_eval  # noqa: PLC0415 (only the venv has it)

    limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
    check = bfcl_verdicts.load_checker()
    data = os.path.join(os.path.dirname(bfcl_eval.__file__), "data")
    rng = random.Random(20250101)
    rows, meta = [], []
    for cat in CATEGORIES:
        with open(os.path.join(data, f"BFCL_v4_{cat}.json"), encoding="utf-8") as f:
            questions = [json.loads(line) for line in f]
        with open(os.path.join(data, "possible_answer", f"BFCL_v4_{cat}.json"), encoding="utf-8") as f:
            answers = {a["id"]: a["ground_truth"] for a in map(json.loads, f)}
        for q in questions[:limit]:
            docs, answer = q["function"], answers[q["id"]]
            for kind, calls in mutations(answer, docs, rng):
                try:
                    valid, why = check(docs, calls, answer)
                except Exception as e:  # noqa: BLE001 (BFCL raising is a fact to report)
                    valid, why = None, f"raised {type(e).__name__}"
                rid = f"{q['id']}/{kind}"
                rows.append({"id": rid, "item": {"function": docs, "ground_truth": answer},
                             "sample": {"output_text": hermes(calls)}})
                meta.append((rid, cat, kind, valid, why, calls, answer))
    with tempfile.TemporaryDirectory() as tmp:
        spec, inp = os.path.join(tmp, "spec.json"), os.path.join(tmp, "rows.jsonl")
        with open(spec, "w") as f:
            json.dump({"type": "tool_call"}, f)
        with open(inp, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        out = subprocess.run([referee_bin(), "score", spec, inp, "--quiet"], capture_output=True, text=True, check=True)
    ours = {}
    for line in out.stdout.splitlines():
        r = json.loads(line)
        ours[r["id"]] = r
    per_kind = defaultdict(Counter)
    examples = defaultdict(list)
    for rid, cat, kind, valid, why, calls, answer in meta:
        r = ours[rid]
        if valid is None:
            per_kind[kind]["bfcl_raised"] += 1
            continue
        if r["status"] != "ok":
            per_kind[kind]["referee_error"] += 1
            examples[(kind, "referee_error")].append((rid, r.get("reason"), calls, answer))
            continue
        mine = r["reward"] == 1.0
        if mine == valid:
            per_kind[kind]["agree"] += 1
        else:
            key = (kind, f"bfcl={int(valid)} referee={int(mine)}")
            per_kind[kind][key[1]] += 1
            examples[key].append((rid, why, calls, answer))
    total = Counter()
    print(f"{len(rows)} outputs from {len(CATEGORIES)} BFCL categories")
    for kind, c in sorted(per_kind.items()):
        total.update(c)
        print(f"  {kind:24} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    n = sum(total.values()) - total["bfcl_raised"]
    print(f"agreement: {total['agree']}/{n} = {total['agree'] / max(n, 1):.4f} (BFCL raised on {total['bfcl_raised']})")
    for key, ex in sorted(examples.items()):
        print(f"\n{key[0]} {key[1]}: {len(ex)}")
        for rid, why, calls, answer in ex[:3]:
            print(f"  {rid} ({why})\n    calls  {json.dumps(calls)[:300]}\n    answer {json.dumps(answer)[:300]}")


if __name__ == "__main__":
    if os.environ.get("REFEREE_BFCL_WORKER") == "1":
        main()
    else:
        py = bfcl_verdicts.ensure_venv("--skip-install" in sys.argv)
        env = dict(os.environ, REFEREE_BFCL_WORKER="1")
        sys.exit(subprocess.run([py, os.path.abspath(__file__)] + sys.argv[1:], env=env).returncode)
