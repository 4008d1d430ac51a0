#!/usr/bin/env python3
"""Seeded rows for the set_metrics bench, one file per grader family:

  set      item.gold: 1-8 entity names; output: a JSON list mixing gold names (case, spacing,
           full-width, zero-width, article and punctuation variants), hallucinated names,
           repeats, objects and nulls where names belong; now and then broken JSON, a JSON
           object, or an empty list against an empty gold.
  ranking  item.relevance: 1-10 ids -> graded relevance 0-3; output: a JSON list of 1-30 ids
           drawn from the relevant ones and a catalogue, with repeats and case variants.
  squad    item.answers: SQuAD's {text: [...], answer_start: [...]} with 1-3 golds; output: an
           answer span (a gold, a variant, a part, a padded or a wrong answer).

Usage: python3 benches/set_metrics/gen_rows.py --kind set|ranking|squad [--n 100000] [--seed 7] --out FILE
"""
import argparse, json, random

NAMES = ["Paris", "London", "New York", "Rio de Janeiro", "Tokyo", "The Hague", "Los Angeles",
         "Sao Paulo", "Mexico City", "Cape Town", "Buenos Aires", "St. Petersburg", "Hong Kong",
         "Kuala Lumpur", "Abu Dhabi", "Tel Aviv", "New Delhi", "Ho Chi Minh City", "Addis Ababa",
         "Rome", "Berlin", "Madrid", "Oslo", "Zürich", "Kraków", "Reykjavík", "Montréal",
         "Marie Curie", "Ada Lovelace", "Alan Turing", "Grace Hopper", "an apple", "a pear",
         "the Beatles", "Rolling Stones", "U.S.A.", "AT&T", "C++", "node.js", "3M", "7-Eleven"]
WORDS = ["denver", "broncos", "carolina", "panthers", "super", "bowl", "the", "a", "an", "of",
         "game", "season", "champion", "league", "national", "football", "1,000", "50", "2015",
         "Beyoncé", "album", "city", "river", "Nile", "king", "queen", "war", "peace", "1990s"]


def variant(r, s):
    k = r.randrange(9)
    if k == 0:
        return s.upper()
    if k == 1:
        return s.lower()
    if k == 2:
        return "  " + s.replace(" ", "   ") + "\t"
    if k == 3:  # full-width letters
        return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)
    if k == 4:  # a zero-width space or a soft hyphen inside
        i = r.randrange(len(s) + 1)
        return s[:i] + r.choice(["\u200b", "\u00ad"]) + s[i:]
    if k == 5:
        return "The " + s
    if k == 6:
        return s + "."
    if k == 7:
        return s[: max(1, len(s) - 1)]
    return s


def set_row(r):
    gold = r.sample(NAMES, r.randrange(0, 9))
    k = r.random()
    if k < 0.04:
        return gold, r.choice(['["Paris", "Rome"', '{"items": ["Paris"]}', "Paris, Rome", ""])
    if not gold and k < 0.08:
        return gold, "[]"
    out = []
    for g in gold:
        if r.random() < 0.7:
            out.append(variant(r, g) if r.random() < 0.5 else g)
    for _ in range(r.randrange(0, 5)):
        out.append(r.choice(NAMES))
    for _ in range(r.randrange(0, 3) if r.random() < 0.3 else 0):
        out.append(r.choice(out) if out else "Paris")
    if r.random() < 0.05:
        out.append({"name": r.choice(NAMES)})
    if r.random() < 0.03:
        out.append(None)
    if r.random() < 0.01:
        out = [r.choice(NAMES)] * 100
    r.shuffle(out)
    return gold, json.dumps(out, ensure_ascii=r.random() < 0.5)


def ranking_row(r):
    catalogue = ["doc%d" % i for i in range(200)]
    ids = r.sample(catalogue, r.randrange(1, 11))
    rel = {i: r.choice([0, 1, 1, 2, 3]) for i in ids}
    if not any(rel.values()):
        rel[ids[0]] = 1
    out = []
    for _ in range(r.randrange(1, 31)):
        x = r.random()
        i = r.choice(ids) if x < 0.4 else r.choice(catalogue)
        out.append(i.upper() if r.random() < 0.05 else i)
    return rel, json.dumps(out)


def squad_row(r):
    golds = [" ".join(r.choice(WORDS) for _ in range(r.randrange(1, 5))) for _ in range(r.randrange(1, 4))]
    g = r.choice(golds)
    k = r.randrange(6)
    if k == 0:
        ans = g
    elif k == 1:
        ans = "The " + g.title() + r.choice([".", "!", ",", ""])
    elif k == 2:
        ws = g.split()
        ans = " ".join(ws[: r.randrange(1, len(ws) + 1)])
    elif k == 3:
        ans = " ".join(r.choice(WORDS) for _ in range(r.randrange(3, 12))) + " " + g
    elif k == 4:
        ans = " ".join(r.choice(WORDS) for _ in range(r.randrange(0, 4)))
    else:
        ans = " ".join(r.choice([w, w, w.upper()]) for w in g.split() for _ in range(r.randrange(1, 3)))
    return {"text": golds, "answer_start": [0] * len(golds)}, ans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=["set", "ranking", "squad"], required=True)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    r = random.Random("%s-%d" % (a.kind, a.seed))
    with open(a.out, "w") as f:
        for i in range(a.n):
            if a.kind == "set":
                gold, out = set_row(r)
                item = {"gold": gold}
            elif a.kind == "ranking":
                rel, out = ranking_row(r)
                item = {"relevance": rel}
            else:
                ans, out = squad_row(r)
                item = {"answers": ans}
            f.write(json.dumps({"id": i, "item": item, "sample": {"output_text": out}}) + "\n")


if __name__ == "__main__":
    main()
