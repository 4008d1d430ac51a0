#!/usr/bin/env python3
"""The Python anchor for the json_schema bench: what a structured-output reward looks like
today, with the `jsonschema` package (Draft 2020-12, validators cached per schema text).

    answer = output.split("</think>")[-1]      # open-instruct's thinking strip
    value  = json.loads(answer) or the single ```json fence in it
    reward = 1.0 if validator.is_valid(value) else 0.0

With --inline, every row is taken to share the first row's schema, built once (a fixed-schema
task). Reads the rows, then times only the reward loop over rows already in memory (JSON loading of
the rows excluded: the anchor at its most favourable). Prints one JSON line:
{"n", "seconds", "cpu_seconds", "rewards"}. Run with the bench venv's python (compare.py does).
"""
import importlib.metadata, json, re, sys, time

import jsonschema

FENCE = re.compile(r"^[ \t]*```[ \t]*(?:json)?[ \t]*\r?\n(.*?)^[ \t]*```", re.M | re.S)
CACHE = {}


def validator(schema):
    key = json.dumps(schema, sort_keys=True)
    v = CACHE.get(key)
    if v is None:
        v = CACHE[key] = jsonschema.Draft202012Validator(schema)
    return v


def reward(output, schema):
    answer = output.split("</think>")[-1].strip()
    try:
        value = json.loads(answer)
    except ValueError:
        blocks = FENCE.findall(answer)
        if len(blocks) != 1:
            return 0.0
        try:
            value = json.loads(blocks[0].strip())
        except ValueError:
            return 0.0
    return 1.0 if validator(schema).is_valid(value) else 0.0


def main():
    rows = [json.loads(l) for l in open(sys.argv[1])]
    pairs = [(r["sample"]["output_text"], r["item"]["schema"]) for r in rows]
    if "--inline" in sys.argv:
        # One schema for the whole run, its validator built once: a fixed-schema task.
        global validator
        v = jsonschema.Draft202012Validator(pairs[0][1])
        validator = lambda schema: v
    t0, c0 = time.perf_counter(), time.process_time()
    out = [reward(o, s) for o, s in pairs]
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"n": len(out), "seconds": dt, "cpu_seconds": cpu, "rewards": out, "jsonschema": importlib.metadata.version("jsonschema")}))


if __name__ == "__main__":
    main()
