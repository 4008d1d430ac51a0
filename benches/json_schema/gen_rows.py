#!/usr/bin/env python3
"""Seeded structured-output rows for the json_schema bench: 24 realistic schemas (nested
objects, arrays, enums, patterns, numeric bounds, $defs/$ref, oneOf), each row carrying its
schema in `item.schema` the way structured-output datasets do, and an output that is valid,
subtly invalid (wrong type, missing/extra key, out-of-range, bad enum, pattern miss, nested
error), not JSON, or JSON wrapped in a fence / after a thinking section.

No `format` keywords and no duplicate keys: those are where Referee is deliberately stricter
than Python's `jsonschema`/`json` defaults, and the bench's agreement check compares like with like.

Usage: python3 benches/json_schema/gen_rows.py [--n 20000] [--seed 7] [--single] [--out benches/data/json_schema_rows.jsonl]
"""
import argparse, json, os, random, string

HERE = os.path.dirname(os.path.abspath(__file__))


def person(r):
    return ({"type": "object", "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 40},
                "age": {"type": "integer", "minimum": 0, "maximum": 130},
                "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5, "uniqueItems": True}},
             "required": ["name", "age", "email"], "additionalProperties": False},
            lambda: {"name": r.choice(["Ada", "Grace", "Linus", "Barbara"]), "age": r.randint(18, 90),
                     "email": r.choice(["ada", "g.h", "lt"]) + "@example.org",
                     "tags": r.sample(["admin", "dev", "ops", "qa"], r.randint(0, 3))})


def order(r):
    item = {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "qty": {"type": "integer", "minimum": 1},
        "price": {"type": "number", "exclusiveMinimum": 0}},
        "required": ["sku", "qty", "price"], "additionalProperties": False}
    return ({"type": "object", "$defs": {"item": item}, "properties": {
                "order_id": {"type": "string"},
                "status": {"enum": ["pending", "paid", "shipped", "cancelled"]},
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1},
                "shipping": {"type": "object", "properties": {
                    "method": {"enum": ["standard", "express"]},
                    "address": {"type": "object", "properties": {
                        "street": {"type": "string"}, "city": {"type": "string"},
                        "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                        "required": ["street", "city", "zip"]}},
                    "required": ["method", "address"]}},
             "required": ["order_id", "status", "items", "shipping"]},
            lambda: {"order_id": "o-%d" % r.randint(1000, 9999), "status": r.choice(["pending", "paid", "shipped"]),
                     "items": [{"sku": "".join(r.choices(string.ascii_uppercase, k=3)) + "-%04d" % r.randint(0, 9999),
                                "qty": r.randint(1, 5), "price": round(r.uniform(1, 200), 2)} for _ in range(r.randint(1, 4))],
                     "shipping": {"method": r.choice(["standard", "express"]),
                                  "address": {"street": "%d Main St" % r.randint(1, 999), "city": "Springfield",
                                              "zip": "%05d" % r.randint(0, 99999)}}})


def event(r):
    return ({"type": "object", "properties": {
                "title": {"type": "string", "minLength": 3},
                "start": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}$"},
                "duration_min": {"type": "integer", "multipleOf": 15, "minimum": 15, "maximum": 480},
                "attendees": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "optional": {"type": "boolean"}}, "required": ["name", "optional"]}},
                "location": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}]}},
             "required": ["title", "start", "duration_min", "attendees", "location"]},
            lambda: {"title": r.choice(["Standup", "Planning", "Review"]),
                     "start": "2025-%02d-%02dT%02d:00" % (r.randint(1, 12), r.randint(1, 28), r.randint(8, 17)),
                     "duration_min": 15 * r.randint(1, 8),
                     "attendees": [{"name": n, "optional": r.random() < 0.3} for n in r.sample(["Ana", "Bo", "Cy", "Di"], r.randint(1, 4))],
                     "location": r.choice(["Room 4", {"url": "https://meet.example/x"}])})


def classify(r):
    return ({"type": "object", "properties": {
                "label": {"enum": ["positive", "negative", "neutral"]},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "evidence": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 3}},
             "required": ["label", "confidence", "evidence"], "additionalProperties": False},
            lambda: {"label": r.choice(["positive", "negative", "neutral"]), "confidence": round(r.random(), 3),
                     "evidence": r.sample(["great value", "broke fast", "arrived late", "works"], r.randint(1, 3))})


FAMILIES = [person, order, event, classify]


def mutate(r, v, schema):
    """One realistic mistake, made somewhere in the value."""
    v = json.loads(json.dumps(v))
    kind = r.choice(["type", "missing", "extra", "range", "enum", "nested"])
    keys = list(v)
    k = r.choice(keys)
    if kind == "type":
        v[k] = str(v[k]) if not isinstance(v[k], str) else 7
    elif kind == "missing":
        req = schema.get("required", keys)
        del v[r.choice(req)]
    elif kind == "extra":
        v["note"] = "added"
        if schema.get("additionalProperties", True) is not False:
            v.pop(r.choice(schema.get("required", keys)))
    elif kind == "range":
        num = [kk for kk in keys if isinstance(v[kk], (int, float)) and not isinstance(v[kk], bool)]
        if num:
            v[num[0]] = -5
        else:
            v[k] = None
    elif kind == "enum":
        en = [kk for kk, s in schema["properties"].items() if "enum" in s and kk in v]
        if en:
            v[en[0]] = "unknown"
        else:
            v[k] = []
    else:
        arr = [kk for kk in keys if isinstance(v[kk], list) and v[kk] and isinstance(v[kk][0], dict)]
        if arr:
            first = v[arr[0]][0]
            first[next(iter(first))] = {"x": 1}
        else:
            v[k] = {"wrapped": v[k]}
    return v


def render(r, v):
    text = json.dumps(v, indent=r.choice([None, 2]))
    how = r.random()
    if how < 0.55:
        return text
    if how < 0.75:
        return "Here is the JSON you asked for:\n```json\n%s\n```\nLet me know if you need anything else." % text
    if how < 0.92:
        return "<think>The user wants structured output. Fields: %s.</think>\n%s" % (", ".join(v)[:80], text)
    return "Sorry, I cannot produce that."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "json_schema_rows.jsonl"))
    ap.add_argument("--single", action="store_true",
                    help="one schema (the order family, the most nested) for every row")
    a = ap.parse_args()
    r = random.Random(a.seed)
    # 24 schemas: each family six times under its own title (distinct schema texts), so the
    # per-schema validator caches on both sides see realistic reuse.
    schemas = []
    for fam in FAMILIES:
        for i in range(6):
            s, make = fam(r)
            s = json.loads(json.dumps(s))
            s["title"] = "%s_v%d" % (fam.__name__, i)
            schemas.append((s, make))
    if a.single:
        schemas = [schemas[6]]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        for i in range(a.n):
            s, make = r.choice(schemas)
            v = make()
            if r.random() < 0.4:
                v = mutate(r, v, s)
            f.write(json.dumps({"id": i, "item": {"schema": s}, "sample": {"output_text": render(r, v)}}) + "\n")
    print(a.out)


if __name__ == "__main__":
    main()
