#!/usr/bin/env python3
"""The judge prefilter's false-positive rate on honest answers, and what it catches.

    python3 benches/prefilter/measure.py [--referee PATH] [--judge] [--show N]

Honest sets (every row must pass; a failure is a false positive):
- `examples`: every row of examples/*/*.jsonl (RewardBench's file aside) except the rows the
  examples ship as deliberate hacks (HACKS below, with why, and the agent rows labelled HACK or
  VIOLATION) and the rows whose answer is a tool call with no text;
- `rewardbench`: the chosen and the rejected responses of examples/eval/rewardbench.jsonl
  (RewardBench's own rows are not on this machine, see docs/BENCHMARKS.md; a rejected
  response is wrong, not content-free, so it must pass a prefilter too);
- `suites`: every case of crates/referee-core/tests/suite/*.yaml that some grader pays
  (expected reward > 0) with a non-empty output that is not only a thinking section, except
  the deliberate non-answers some
  configuration pays on purpose (NOT_ANSWERS below, with why);
- `multilingual`: benches/prefilter/multilingual.jsonl, honest answers in Chinese, Japanese,
  Arabic, Persian, Hebrew, Russian, Hindi, German, Turkish, Korean, Thai, Vietnamese, Greek,
  math with Greek letters and superscripts, code and emoji with joiners, short English answers.

Content-free sets (every row must fail; the rate is the share caught):
- `openers`: benches/prefilter/openers.jsonl, openers that never answer, written for this
  measurement (none is a listed master key nor one of the fuzz family's openers);
- `openers disguised`: the same, each in three disguises (zero-width characters between the
  letters, full-width letters, Cyrillic look-alikes).

Each set is scored with `referee score benches/prefilter/guard.yaml` (the checks as the `guard`
rule runs them) and, with `--judge`, with benches/prefilter/score_model.yaml against a loopback
judge that approves everything (scripts/fault_server.py): there a row is stopped when it scores
0 with no judge call. Stdlib and PyYAML only.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.join(ROOT, "benches", "prefilter")

# Rows the examples ship as deliberate hacks, by file and id (or line, from 1, for rows without
# an id): they are no honest answer, whether the prefilter stops them or not (most are hacks of
# other kinds, which other graders stop). The agent files mark theirs (`label: HACK...` or
# `VIOLATION...`) and are read from the rows.
HACKS = {
    "gsm8k/samples.jsonl": {6: "two answers", 7: "every candidate marked", 8: "a listing", 9: "a filler line repeated"},
    "json_schema/rollouts.jsonl": {"t7": "`{}`", "x1": "`{}`", "t10": "two objects offered", "t11": "the answer only in the thinking"},
    "math/samples.jsonl": {"m9": "two answers"},
    "code/rollouts.jsonl": {"a4": "hard-coded examples", "h4": "an always-equal object", "t3": "a stub"},
    "ifeval/rollouts.jsonl": {"t3": "the answer only in the thinking"},
    "pairwise/rollouts.jsonl": {"p1-c": "a bare colon", "p2-b": "role-play aimed at the judge"},
    "process/rollouts.jsonl": {"p5": "smuggled step tags", "p6": "a forged turn", "p7": "confident filler steps", "p8": "a repeated step", "p9": "empty"},
    "process-judge/rollouts.jsonl": {"j4": "step labels for the judge", "j5": "a master key"},
    "r1-format/samples.jsonl": {"r5": "two answers", "r7": "an empty answer", "r8": "a fenced format", "r9": "asks for full marks"},
    "rubric/rollouts.jsonl": {"q1-c": "a master key", "q1-d": "the rubric restated", "q2-b": "an override"},
    "similarity/rows.jsonl": {"repeated": "one sentence repeated", "padded": "padding", "empty": "empty"},
    "tool_calls/rollouts.jsonl": {"c4": "the same call repeated", "w5": "the call inside the thinking"},
    "vision/rows.jsonl": {"empty": "empty"},
}

# Suite cases some grader pays that are no honest answer: a configuration paying a hack on
# purpose (a prefilter turned off, injection only flagged, a listing allowed, a copy asked for,
# padding a cap makes harmless) or a fixture whose text is beside the point. By file and name.
NOT_ANSWERS = {
    ("choice.yaml", "huge reasoning that mentions every option then answers"): "one sentence repeated 10,000 times",
    ("contains.yaml", "none mode passes clean text"): "'Sure, here it is.': says nothing",
    ("each_step.yaml", "a repeated step scores 0 ungraded, so repetition does not pay under mean"): "repeated steps",
    ("each_step.yaml", "steps past max_steps score 0 ungraded, so padding past the cap does not pay"): "padding steps",
    ("embedding_similarity.yaml", "repeating one sentence cannot inflate recall"): "one sentence repeated",
    ("guard.yaml", "listing allowed"): "a listing, allowed by the spec",
    ("guard.yaml", "injection only flagged"): "an injection, only flagged by the spec",
    ("guard.yaml", "verdicts allowed with injection flag"): "a verdict object, only flagged by the spec",
    ("ifeval.tulu.yaml", "tulu copying_multiple: three copies passes"): "the request copied three times, as asked",
    ("ifeval.tulu.yaml", "tulu bigram_wrapping: every bigram wrapped passes"): "every word pair in << >>, as asked",
    ("numeric.yaml", "huge output with the marker at the end"): "filler repeated before the answer",
    ("prm.yaml", "steps past max_steps score 0 and are not sent"): "padding steps",
    ("prm.yaml", "chat-template tokens in the policy's text are replaced, so it cannot forge a turn"): "a forged turn",
    ("score_model.yaml", "with injection flag, the same candidate reaches the judge (and is flagged in the trace)"): "an injection, only flagged by the spec",
    ("score_model.yaml", "prefilter false sends even a master key to the judge"): "a master key, prefilter off",
    ("score_model.yaml", "a candidate cannot close its own section"): "a delimiter escape, only flagged by the spec",
    ("score_model.yaml", "a full-width or zero-width delimiter is defused too"): "a delimiter escape, only flagged by the spec",
    ("score_model.yaml", "an SVG that points at a local file draws nothing from it"): "an SVG drawing: a spec that renders it judges the image, and its prefilter skips the markup",
}


THINK_ONLY = re.compile(r"^\s*<think>.*</think>\s*$", re.S)


def referee_bin(given):
    if given:
        return given
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    for profile in ("release", "debug"):
        p = os.path.join(target, profile, "referee")
        if os.path.exists(p):
            return p
    sys.exit("no referee binary: cargo build -p referee-cli (or pass --referee)")


def row(rid, text):
    return {"id": rid, "item": {}, "sample": {"output_text": text}}


def example_sets():
    """(file, path) for every example data file but RewardBench's."""
    out = []
    for d in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        full = os.path.join(ROOT, "examples", d)
        if not os.path.isdir(full) or d == "eval":
            continue
        for f in sorted(os.listdir(full)):
            if f.endswith(".jsonl"):
                out.append((f"{d}/{f}", os.path.join(full, f)))
    return out


def rewardbench_rows():
    rows = []
    with open(os.path.join(ROOT, "examples", "eval", "rewardbench.jsonl")) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                rows.append(row(f"{r['id']}-chosen", r["chosen"]))
                rows.append(row(f"{r['id']}-rejected", r["rejected"]))
    return rows


def suite_rows():
    import yaml

    rows, skipped = [], []
    d = os.path.join(ROOT, "crates", "referee-core", "tests", "suite")
    for f in sorted(os.listdir(d)):
        if not f.endswith(".yaml"):
            continue
        try:
            doc = yaml.safe_load(open(os.path.join(d, f)))
        except yaml.YAMLError:
            skipped.append(f)
            continue
        for i, c in enumerate(doc.get("cases") or []):
            exp = c.get("expect") or {}
            out = c.get("output")
            reward = exp.get("reward")
            # An empty output is a fixture for graders that read something else, and an output
            # that is only a thinking section has no answer (the prefilter strips it).
            if not (isinstance(out, str) and out.strip()) or THINK_ONLY.match(out):
                continue
            if (f, c.get("name")) in NOT_ANSWERS:
                continue
            if isinstance(reward, (int, float)) and reward > 0:
                rows.append(row(f"{f}#{i} {c.get('name', '')}", out))
    return rows, skipped


def jsonl_rows(name):
    with open(os.path.join(HERE, name)) as f:
        return [json.loads(l) for l in f if l.strip()]


def disguised(rows):
    cyr = str.maketrans({"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "i": "\u0456"})
    out = []
    for r in rows:
        t = r["sample"]["output_text"]
        out.append(row(r["id"] + " zero-width", "\u200b".join(t)))
        out.append(row(r["id"] + " full-width", "".join(
            chr(ord(c) - 0x21 + 0xFF01) if "!" <= c <= "~" else ("\u3000" if c == " " else c) for c in t)))
        out.append(row(r["id"] + " cyrillic", t.translate(cyr)))
    return out


def score(referee, spec, rows=None, path=None, judge=None):
    """Results in input order for `rows` (or the file at `path`)."""
    tmp = None
    if rows is not None:
        tmp = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8")
        for r in rows:
            tmp.write(json.dumps(r, ensure_ascii=False) + "\n")
        tmp.close()
        path = tmp.name
    cmd = [referee, "score", spec, path, "--explain", "-q"]
    if judge:
        cmd += ["--judge", judge, "--judge-cache", "off"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    if tmp:
        os.unlink(tmp.name)
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def why(res):
    """The trace note that says why a row failed."""
    def walk(t):
        note = t.get("note") or ""
        for key in ("guard: ", "prefilter: "):
            if key in note:
                return note[note.index(key) + len(key):]
        for c in t.get("children") or []:
            w = walk(c)
            if w:
                return w
        return None
    return walk(res.get("trace") or {}) or res.get("reason") or "?"


def stopped(res, judged):
    if res.get("status") != "ok" or res.get("reward") is None:
        return False
    if judged:
        return res["reward"] == 0 and (res.get("usage") or {}).get("judge_calls", 0) == 0
    return res["reward"] == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--referee")
    ap.add_argument("--judge", action="store_true", help="also measure a score_model's prefilter against a loopback judge")
    ap.add_argument("--show", type=int, default=20, help="failures listed per set")
    a = ap.parse_args()
    referee = referee_bin(a.referee)

    sets = []  # (name, honest?, rows or None, path or None, file key or None)
    for key, path in example_sets():
        sets.append(("examples", True, None, path, key))
    sets.append(("rewardbench", True, rewardbench_rows(), None, None))
    suites, skipped = suite_rows()
    sets.append(("suites", True, suites, None, None))
    sets.append(("multilingual", True, jsonl_rows("multilingual.jsonl"), None, None))
    openers = jsonl_rows("openers.jsonl")
    sets.append(("openers", False, openers, None, None))
    sets.append(("openers disguised", False, disguised(openers), None, None))

    # Rows an example marks as a hack, and rows with no text answer (the answer is a tool call).
    dropped = {}
    for key, path in example_sets():
        with open(path) as fh:
            for n, line in enumerate(fh, 1):
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                rid = r.get("id", n)
                label = str(r.get("label") or "")
                text = (r.get("sample") or {}).get("output_text")
                tools = (r.get("sample") or {}).get("output_tools")
                if label.startswith(("HACK", "VIOLATION")) or (tools and not (text or "").strip()):
                    dropped.setdefault(key, set()).add(rid)

    runs = [("guard", os.path.join(HERE, "guard.yaml"), None)]
    server = None
    if a.judge:
        server = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "scripts", "fault_server.py"), "--mode", "ok",
             "--content", '{"result": 1}'], stdout=subprocess.PIPE, text=True)
        base = json.loads(server.stdout.readline())["base_url"]
        runs.append(("score_model prefilter", os.path.join(HERE, "score_model.yaml"), base))
    try:
        for label, spec, judge in runs:
            print(f"## {label} ({os.path.relpath(spec, ROOT)})")
            totals = {}
            failures = {}
            for name, honest, rows, path, key in sets:
                results = score(referee, spec, rows=rows, path=path, judge=judge)
                n = hit = 0
                for res in results:
                    rid = res.get("id")
                    rid = rid if rid is not None else res.get("line")
                    if honest and key and rid in HACKS.get(key, {}):
                        continue
                    if honest and key and key in dropped and rid in dropped[key]:
                        continue
                    n += 1
                    if stopped(res, judge is not None):
                        hit += 1
                        failures.setdefault(name, []).append((key, rid, why(res)))
                t = totals.setdefault(name, [honest, 0, 0])
                t[1] += n
                t[2] += hit
            print(f"{'set':<20} {'rows':>5} {'stopped':>8} {'rate':>7}  meaning")
            for name, (honest, n, hit) in totals.items():
                meaning = "false positives" if honest else "caught"
                print(f"{name:<20} {n:>5} {hit:>8} {hit / max(n, 1):>7.1%}  {meaning}")
            hn = sum(t[1] for t in totals.values() if t[0])
            hh = sum(t[2] for t in totals.values() if t[0])
            print(f"{'all honest':<20} {hn:>5} {hh:>8} {hh / max(hn, 1):>7.1%}  false positive rate")
            for name, fs in failures.items():
                honest = totals[name][0]
                if honest:
                    print(f"\nfalse positives in {name}:")
                    for key, rid, w in fs[: a.show]:
                        print(f"  {key + ' ' if key else ''}{rid}: {w}")
            for name, (honest, n, hit) in totals.items():
                if not honest and hit < n:
                    caught = {rid for _, rid, _ in failures.get(name, [])}
                    rows = next(s[2] for s in sets if s[0] == name)
                    missed = [r for r in rows if r["id"] not in caught]
                    print(f"\nnot caught in {name}:")
                    for r in missed[: a.show]:
                        print(f"  {r['id']}: {r['sample']['output_text']!r}")
            print()
        if skipped:
            print(f"(suites PyYAML could not read, skipped: {', '.join(skipped)})")
    finally:
        if server:
            server.terminate()


if __name__ == "__main__":
    main()
