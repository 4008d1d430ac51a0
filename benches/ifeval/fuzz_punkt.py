"""Differential fuzzing of Referee's Punkt sentence counting against NLTK's.

Random texts made of tricky tokens (abbreviations, initials, decimals, ellipses, `?!`, straight
and curly quotes, brackets, newlines, non-ASCII words) are scored by `referee score --explain`
with a `number_sentences` instruction, and the count in each trace is compared with
`instructions_util.count_sentences` of the Python reference.

    ~/.cache/referee/ifeval-venv/bin/python benches/ifeval/fuzz_punkt.py SEED target/release/referee
"""
import json, os, random, subprocess, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference
m = reference.load_ifeval()
cs = m['instructions_util'].count_sentences
rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
toks = ["the", "The", "cat", "Mr.", "Dr.", "e.g.", "i.e.", "U.S.", "J.", "K.", "3.5", "1,000", "No.", "vs.", "etc.", "Inc.",
        "St.", "a.m.", "p.m.", "Jan.", "...", "..", ". . .", "?", "!", "?!", ".", ",", ";", ":", "--", "(", ")", '"', "'", "“", "”",
        "He", "She", "It", "However", "But", "\n", "\n\n", "word.", "Word.", "WORD.", "x", "i", "I.", "A.", "1.", "2.", "-", "*",
        "[", "]", "{", "}", "ok.)", "end.\"", "what?\"", "¿Qué?", "naïve", "café.", "über.", "Straße.", "déjà", "vu.", "日本語。", "—", "’s", "can't."]
rows, texts = [], []
for i in range(3000):
    n = rng.randint(1, 25)
    t = "".join(rng.choice(toks) + rng.choice([" ", " ", " ", "", "  ", "\t", "\n"]) for _ in range(n))
    texts.append(t)
    rows.append({"id": i, "item": {"instruction_id_list": ["length_constraints:number_sentences"], "kwargs": [{"num_sentences": 1, "relation": "at least"}]},
                 "sample": {"output_text": t}})
path = os.path.join(tempfile.mkdtemp(), "fuzz_rows.jsonl")
with open(path, "w") as f:
    for r in rows: f.write(json.dumps(r, ensure_ascii=False) + "\n")
binary = sys.argv[2] if len(sys.argv) > 2 else "target/release/referee"
out = subprocess.run([binary, "score", "-q", "--explain", os.path.join(HERE, "spec_strict.yaml"), path],
                     capture_output=True, text=True, check=True).stdout.splitlines()
bad = 0
for t, line in zip(texts, out):
    r = json.loads(line)
    if r["status"] != "ok":
        print("status", r); continue
    why = r["trace"]["detail"]["instructions"][0]["why"]
    ours = 0 if why == "empty answer" else int(why.split()[0])
    ref = cs(t) if t.strip() else 0
    if ours != ref:
        bad += 1
        if bad <= 8: print(repr(t), "ours", ours, "ref", ref)
print("mismatches", bad, "of", len(texts))
