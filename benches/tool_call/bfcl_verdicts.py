#!/usr/bin/env python3
"""Checks the tool_call suite's all-or-nothing verdicts against BFCL's own AST checker.

Steps:
  1. A virtualenv at ~/.cache/referee/bfcl-venv (reused when present) with bfcl-eval==2026.3.23
     installed *without* its dependencies (the checker itself needs none of the model SDKs) and
     PyYAML. The script then re-runs itself with the venv's Python.
  2. `bfcl_eval.constants.model_config` is replaced by a stub before the checker is imported: it
     only supplies `underscore_to_dot` (the per-model rule for dotted function names). Each case
     is checked with both settings and counts as valid when either accepts, which is Referee's
     rule (the expected name, or the same with its dots as underscores).
  3. Every case of crates/referee-core/tests/suite/tool_call.yaml and
     fixtures/exploits/tool_call.yaml that BFCL can judge is run through `ast_checker`:
     - the spec is the default `{type: tool_call}` (BFCL's all-or-nothing, normalised strings,
       order-insensitive);
     - the output is Hermes `<tool_call>` blocks with no thinking section (a block that is not
       JSON with a name and an arguments object is a decoding failure: BFCL scores it invalid);
     - the item has tool docs and a non-empty BFCL possible answer (`[{"func": {"p": [..]}}]`).
     Docs are converted to BFCL's type names (object -> dict, number -> float). The category is
     `parallel_multiple` for several expected calls (BFCL's order-free matcher) and `multiple`
     for one (the count must be 1, the checked function is the expected one).
  4. The verdict BFCL gives (valid = 1) is compared with the reward the case expects, which the
     Rust suite asserts of Referee. Cases whose name says "deviation" are expected to differ and
     are listed apart; any other difference fails the run.

Usage: python3 benches/tool_call/bfcl_verdicts.py [--skip-install]
"""

import json
import os
import re
import subprocess
import sys
import types

VENV = os.path.join(os.path.expanduser("~"), ".cache", "referee", "bfcl-venv")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FILES = [
    ("suite", os.path.join(ROOT, "crates/referee-core/tests/suite/tool_call.yaml"), "cases", "name"),
    ("exploits", os.path.join(ROOT, "fixtures/exploits/tool_call.yaml"), "exploits", "exploit"),
]


def ensure_venv(skip_install):
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        if skip_install:
            sys.exit(f"--skip-install, but there is no venv at {VENV}")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    if not skip_install:
        pip = [py, "-m", "pip", "install", "-q"]
        subprocess.run(pip + ["--no-deps", "bfcl-eval==2026.3.23"], check=True)
        subprocess.run(pip + ["pyyaml"], check=True)
    return py


def load_checker():
    stub = types.ModuleType("bfcl_eval.constants.model_config")

    class Config:
        underscore_to_dot = False

    class Mapping(dict):
        def __missing__(self, key):
            return Config

    stub.MODEL_CONFIG_MAPPING = Mapping()
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language  # noqa: PLC0415 (only the venv has it)
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: PLC0415

    def check(docs, calls, answer):
        category = "parallel_multiple" if len(answer) > 1 else "multiple"
        for dots in (False, True):
            Config.underscore_to_dot = dots
            r = ast_checker(docs, calls, answer, Language.PYTHON, category, "model")
            if r["valid"]:
                return True, ""
        return False, r.get("error_type", "")

    return check


BFCL_TYPES = {"object": "dict", "number": "float"}


def to_bfcl_schema(s):
    if not isinstance(s, dict):
        return s
    out = dict(s)
    if isinstance(out.get("type"), str):
        out["type"] = BFCL_TYPES.get(out["type"], out["type"])
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: to_bfcl_schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = to_bfcl_schema(out["items"])
    return out


def docs_of(item):
    tools = item.get("tools") or item.get("functions") or item.get("function")
    if isinstance(tools, str):
        tools = json.loads(tools)
    if not isinstance(tools, list):
        return None
    docs = []
    for t in tools:
        f = t.get("function", t)
        params = to_bfcl_schema(f.get("parameters", {"type": "dict", "properties": {}}))
        params.setdefault("required", [])
        docs.append({"name": f["name"], "parameters": params})
    return docs


def bfcl_answer(gt):
    if not isinstance(gt, list) or not gt:
        return None
    for e in gt:
        if not (isinstance(e, dict) and len(e) == 1):
            return None
        (params,) = e.values()
        if not isinstance(params, dict) or not all(isinstance(v, list) for v in params.values()):
            return None
    return gt


def hermes_calls(text):
    """The calls of Hermes text, or None when BFCL cannot judge it; [] + False = undecodable."""
    if "<think" in text or "<tool_call>" not in text or "```" in text:
        return None
    calls = []
    for body in re.findall(r"<tool_call>(.*?)(?:</tool_call>|$)", text, re.S):
        try:
            c = json.loads(body)
        except ValueError:
            return "undecodable"
        if isinstance(c, dict) and isinstance(c.get("arguments"), str):
            try:  # OpenAI-style string arguments: decoding is the adapter's job, as in Referee
                c["arguments"] = json.loads(c["arguments"])
            except ValueError:
                return "undecodable"
        if not (isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("arguments"), dict)):
            return "undecodable"
        calls.append({c["name"]: c["arguments"]})
    return calls


def main():
    import yaml  # noqa: PLC0415 (the venv has it)

    check = load_checker()
    agree, deviations, disagree, skipped = [], [], [], 0
    for label, path, key, name_key in FILES:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        default_spec = doc.get("spec")
        for case in doc.get(key, []):
            spec = case.get("spec", default_spec)
            expect = case.get("expect", {})
            text, item = case.get("output"), case.get("item", {})
            if spec != {"type": "tool_call"} or not isinstance(text, str) or expect.get("status", "ok") != "ok":
                skipped += 1
                continue
            docs, answer, calls = docs_of(item), bfcl_answer(item.get("ground_truth")), hermes_calls(text)
            if docs is None or answer is None or calls is None:
                skipped += 1
                continue
            if calls == "undecodable":
                valid, why = False, "decode failure"
            else:
                try:
                    valid, why = check(docs, calls, answer)
                except (KeyError, TypeError, AttributeError) as e:
                    skipped += 1
                    print(f"  skipped (BFCL raised {type(e).__name__}: {e}): {label}: {case[name_key]}")
                    continue
            want = float(expect.get("reward"))
            row = (label, case[name_key], int(valid), want, why)
            if float(valid) == want:
                agree.append(row)
            elif "deviation" in case[name_key]:
                deviations.append(row)
            else:
                disagree.append(row)
    print(f"BFCL ast_checker vs Referee (all_or_nothing): {len(agree)} agree, "
          f"{len(deviations)} documented deviations, {len(disagree)} unexplained, {skipped} not judgeable by BFCL")
    for label, name, bfcl, ours, why in deviations:
        print(f"  deviation   {label}: {name}: BFCL {bfcl} ({why}), Referee {ours:g}")
    for label, name, bfcl, ours, why in disagree:
        print(f"  DISAGREE    {label}: {name}: BFCL {bfcl} ({why}), Referee {ours:g}")
    sys.exit(1 if disagree else 0)


if __name__ == "__main__":
    if os.environ.get("REFEREE_BFCL_WORKER") == "1":
        main()
    else:
        py = ensure_venv("--skip-install" in sys.argv)
        env = dict(os.environ, REFEREE_BFCL_WORKER="1")
        sys.exit(subprocess.run([py, os.path.abspath(__file__)], env=env).returncode)
