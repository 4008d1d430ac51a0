#!/usr/bin/env python3
"""Plain-Python reference implementations the set_metrics bench compares Referee with, and
the reward loop it times (rows already in memory: reading and parsing the file is excluded).

  squad      SQuAD v1.1's evaluate-v1.1.py: normalize_answer, f1_score, exact_match_score and
             metric_max_over_ground_truths, verbatim.
  set_f1     the list read from a JSON array (strings and numbers are items, other elements
             match nothing), items stripped, a normal form per item (casefold: NFKC, format
             characters removed, lower-cased, whitespace collapsed; squad: normalize_answer),
             repeats and empty normal forms dropped, gold a set; F1 of the key intersection
             minus a penalty per unmatched prediction; both empty = 1, one empty = 0.
  ndcg/mrr   a standard NDCG@k (linear gains rel / log2(i + 1), ideal DCG from the sorted gold
             relevances) and MRR, an id repeated in the ranking counting once at its first slot.

Usage: py_reference.py ROWS SPEC_NAME  (prints {"seconds", "cpu_seconds", "rewards"} as JSON)
"""
import json, math, re, string, sys, time, unicodedata
from collections import Counter


# --- SQuAD v1.1 evaluate-v1.1.py -------------------------------------------------------------
def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction, ground_truth):
    return (normalize_answer(prediction) == normalize_answer(ground_truth))


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


# --- set F1 ----------------------------------------------------------------------------------
def casefold(s):
    s = "".join(c for c in unicodedata.normalize("NFKC", s) if unicodedata.category(c) != "Cf")
    return " ".join(s.lower().split())


def read_list(text):
    """The items of a JSON array as (text, scalar), or None when the text is not one."""
    try:
        v = json.loads(text.strip())
    except ValueError:
        return None
    if not isinstance(v, list):
        return None
    out = []
    for e in v:
        if isinstance(e, str):
            if e.strip():
                out.append((e.strip(), True))
        elif isinstance(e, (int, float)) and not isinstance(e, bool):
            out.append((str(e), True))
        else:
            out.append((json.dumps(e), False))
    return out


def set_f1(output, gold, key, penalty):
    pred = read_list(output)
    if pred is None:
        return 0.0
    gold_keys = set(k for k in (key(g.strip()) for g in gold if g.strip()) if k)
    seen = set()
    for text, scalar in pred:
        k = (scalar, key(text) if scalar else text)
        if k[1]:
            seen.add(k)
    predicted = len(seen)
    tp = sum(1 for scalar, k in seen if scalar and k in gold_keys)
    if predicted == 0 and not gold_keys:
        f = 1.0
    elif tp == 0:
        f = 0.0
    else:
        p, r = tp / predicted, tp / len(gold_keys)
        f = 2 * p * r / (p + r)
    return f - penalty * (predicted - tp)


# --- ranking ---------------------------------------------------------------------------------
def ranked_rels(output, rel, k):
    ids = read_list(output)
    if ids is None:
        return None
    seen, rels = set(), []
    for text, scalar in ids[:k] if k else ids:
        if scalar and text not in seen:
            seen.add(text)
            rels.append(rel.get(text, 0))
        else:
            rels.append(0)
    return rels


def dcg(rels):
    return sum(r / math.log2(i + 2) for i, r in enumerate(rels))


def ndcg(output, rel, k):
    rels = ranked_rels(output, rel, k)
    if rels is None:
        return 0.0
    ideal = sorted(rel.values(), reverse=True)[:k] if k else sorted(rel.values(), reverse=True)
    return dcg(rels) / dcg(ideal)


def mrr(output, rel, k):
    rels = ranked_rels(output, rel, k)
    for i, r in enumerate(rels or []):
        if r > 0:
            return 1.0 / (i + 1)
    return 0.0


SPECS = {
    "set_casefold": lambda it, out: set_f1(out, it["gold"], casefold, 0.1),
    "set_squad": lambda it, out: set_f1(out, it["gold"], normalize_answer, 0.0),
    "ndcg10": lambda it, out: ndcg(out, it["relevance"], 10),
    "mrr": lambda it, out: mrr(out, it["relevance"], None),
    "squad_f1": lambda it, out: metric_max_over_ground_truths(f1_score, out, it["answers"]["text"]),
    "squad_em": lambda it, out: float(metric_max_over_ground_truths(exact_match_score, out, it["answers"]["text"])),
}


def main():
    rows = [json.loads(l) for l in open(sys.argv[1])]
    fn = SPECS[sys.argv[2]]
    pairs = [(r["item"], r["sample"]["output_text"]) for r in rows]
    t0, c0 = time.perf_counter(), time.process_time()
    rewards = [fn(it, out) for it, out in pairs]
    t1, c1 = time.perf_counter(), time.process_time()
    json.dump({"seconds": t1 - t0, "cpu_seconds": c1 - c0, "rewards": rewards}, sys.stdout)


if __name__ == "__main__":
    main()
