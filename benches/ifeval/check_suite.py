"""Runs the Python reference over the ok cases of the ifeval suite (and exploit corpus) that it
can read (IFEval-format items, no reasoning tags, default spec apart from mode/reward) and
prints every case where the reference's reward differs from the suite's expected reward.

    ~/.cache/referee/ifeval-venv/bin/python benches/ifeval/check_suite.py \
        crates/referee-core/tests/suite/ifeval.yaml fixtures/exploits/ifeval.yaml
"""

import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

mods = reference.load_ifeval()
utils = mods["utils"]
n = bad = 0
for path in sys.argv[1:]:
    doc = yaml.safe_load(open(path))
    base = doc.get("spec", {})
    for case in doc.get("cases", []) + doc.get("exploits", []):
        spec = {**base, **case.get("spec", {})}
        item = case.get("item", {})
        out = case.get("output")
        exp = case.get("expect", {})
        if (
            out is None
            or "instruction_id_list" not in item
            or exp.get("status", "ok") != "ok"
            or set(spec) - {"type", "mode", "reward"}
            or "<think" in out or "</think" in out or "<answer>" in out
        ):
            continue
        test = (
            utils.test_instruction_following_loose
            if spec.get("mode") == "loose"
            else utils.test_instruction_following_strict
        )
        inp = utils.InputExample(key=0, instruction_id_list=item["instruction_id_list"], prompt="", kwargs=item["kwargs"])
        try:
            f = test(inp, out).follow_instruction_list
        except Exception as e:  # the reference raises on some kwargs
            print(f"{path}: {case.get('name') or case.get('exploit')}: reference raised {e!r}")
            bad += 1
            n += 1
            continue
        r = float(all(f)) if spec.get("reward") == "prompt" else sum(f) / len(f)
        n += 1
        if abs(r - float(exp["reward"])) > 1e-9:
            bad += 1
            print(f"{path}: {case.get('name') or case.get('exploit')}: reference {r}, Referee {exp['reward']}")
print(f"{n} cases run by the reference, {bad} differ")
