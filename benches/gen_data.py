#!/usr/bin/env python3
"""Deterministic generator of GSM8K-like TRL rows for Referee's benchmarks.

Writes N JSONL rows `{"id", "prompt", "completion", "solution"}` (TRL's standard, non-chat
format: every column besides prompt/completion becomes `item.<column>` in Referee). Rows come
in GRPO-style groups of 8 completions per question. The completions are a mix of what a policy
produces early in GSM8K training, including the reward hacks a grader must resist:

    correct        41%  <think>...</think> + final `#### N`
    wrong          20%  well formed, wrong number
    no_think       10%  right answer, no think tags
    bad_think       5%  think tag not first / unclosed / a second think block (TRL format 0)
    no_marker       9%  answer given as "The answer is N" or \\boxed{N}, no `####`
    thousands       8%  `#### 1,234` for an answer >= 1000
    short         4.7%  under ~100 characters: a bare think + `#### N`, or giving up
    multi_marker  1.6%  several `#### N` lines: the same number repeated, or different numbers
    number_list   0.4%  `#### a, b, c` listing candidate answers
    or_hack       0.3%  `#### 3 or 4`: two answers, one of them right

Completions are 50 to ~3000 characters long. Stdlib only; the output depends only on --seed
and -n (Python's `random.Random` is stable across versions for these calls).

Usage: python3 benches/gen_data.py [-n 100000] [--seed 20240611] [-o benches/data/gsm8k_100k.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "data", "gsm8k_100k.jsonl")
GROUP = 8

INSTRUCTION = (
    "Solve the following math problem. Think step by step inside <think> </think> tags, "
    "then give the final answer on its own line as `#### <number>`.\n\n"
)

NAMES = ["Natalia", "Weng", "Betty", "Julie", "James", "Albert", "Ken", "Alexis", "Tina", "Randy",
         "Mark", "Joy", "Carla", "Tobias", "Marie", "Rose", "Jasmine", "Brandon", "Sue", "Ravi"]
THINGS = ["apples", "clips", "stickers", "marbles", "cookies", "books", "pencils", "cupcakes",
          "seashells", "tickets", "bottles", "eggs"]
FILLER = [
    "Let me re-read the problem to make sure I have the quantities right.",
    "I should be careful about which quantity is being asked for.",
    "Hmm, wait. Let me double-check that multiplication.",
    "That seems consistent with the numbers in the question.",
    "Another way to see this is to count the groups first and then the items in each group.",
    "I will write down each intermediate value so that I do not lose track.",
    "Let me verify by working backwards from the total.",
    "Okay, so far the arithmetic checks out.",
    "Actually, I need to consider whether the question includes the starting amount.",
    "Breaking this into smaller steps makes it easier to check.",
    "So the key relationship here is between the rate and the total.",
    "Let me recompute to be sure: the same value comes out again.",
]


def problem(rng: random.Random, big: bool):
    """A word problem, its answer, and the reasoning steps that reach it."""
    name = rng.choice(NAMES)
    thing = rng.choice(THINGS)
    kind = rng.choice([0, 1, 3]) if big else rng.randrange(4)
    if big:  # every answer >= 1000, for thousands separators
        a, b, c = rng.randint(100, 900), rng.randint(20, 60), rng.randint(50, 99)
    else:
        a, b, c = rng.randint(2, 60), rng.randint(2, 12), rng.randint(2, 15)
    if kind == 0:
        q = (f"{name} has {a} {thing}. {name} buys {b} boxes with {c} {thing} in each box. "
             f"How many {thing} does {name} have now?")
        ans = a + b * c
        steps = [f"The boxes hold {b} * {c} = {b * c} {thing}.",
                 f"Adding the {a} {thing} from before: {a} + {b * c} = {ans}."]
    elif kind == 1:
        q = (f"{name} sold {thing} to {a} of her friends in April, and then she sold {b} times as "
             f"many in May. How many {thing} did {name} sell altogether in April and May?")
        ans = a + a * b
        steps = [f"In May {name} sold {a} * {b} = {a * b} {thing}.",
                 f"Altogether: {a} + {a * b} = {ans}."]
    elif kind == 2:
        total = a * b + c
        q = (f"A shop had {total} {thing}. It packed them into bags of {b} and had {c} left over. "
             f"How many bags did it pack?")
        ans = a
        steps = [f"Without the leftovers there are {total} - {c} = {total - c} {thing}.",
                 f"Each bag holds {b}, so {total - c} / {b} = {ans} bags."]
    else:
        q = (f"{name} earns ${c} an hour and works {b} hours a day for {a} days. "
             f"How many dollars does {name} earn?")
        ans = a * b * c
        steps = [f"Per day {name} earns {c} * {b} = {b * c} dollars.",
                 f"Over {a} days that is {a} * {b * c} = {ans} dollars."]
    return q, ans, steps


def reasoning(rng: random.Random, steps: list[str], answer_text: str) -> str:
    """The think body: the steps, padded with filler so lengths range up to ~3000 characters."""
    n_fill = min(int(rng.expovariate(1 / 9)), 44)
    body = list(steps)
    for _ in range(n_fill):
        body.insert(rng.randrange(len(body) + 1), rng.choice(FILLER))
    body.append(f"So the answer is {answer_text}.")
    return "\n".join(body)


def thousands(n: int) -> str:
    return f"{n:,}"


def wrong_of(rng: random.Random, ans: int) -> int:
    w = ans + rng.choice([-10, -2, -1, 1, 2, 3, 10, ans])
    return w if w != ans else ans + 1


def completion(rng: random.Random, kind: str, ans: int, steps: list[str]) -> str:
    think = lambda t: f"<think>\n{reasoning(rng, steps, t)}\n</think>\n"  # noqa: E731
    tail = rng.choice(["", "The final answer is below.\n", "Therefore:\n"])
    if kind == "correct":
        return f"{think(str(ans))}{tail}#### {ans}"
    if kind == "wrong":
        w = wrong_of(rng, ans)
        return f"{think(str(w))}{tail}#### {w}"
    if kind == "no_think":
        return f"{reasoning(rng, steps, str(ans))}\n#### {ans}"
    if kind == "bad_think":
        r = reasoning(rng, steps, str(ans))
        v = rng.randrange(3)
        if v == 0:  # preamble before the tag
            return f"Sure, let me solve it.\n<think>\n{r}\n</think>\n#### {ans}"
        if v == 1:  # never closed
            return f"<think>\n{r}\n#### {ans}"
        return f"<think>\n{r}\n</think>\n<think>\nchecking again\n</think>\n#### {ans}"  # second think
    if kind == "no_marker":
        if rng.random() < 0.5:
            return f"{think(str(ans))}The answer is {ans}."
        return f"{think(str(ans))}\\boxed{{{ans}}}"
    if kind == "thousands":
        return f"{think(thousands(ans))}{tail}#### {thousands(ans)}"
    if kind == "short":
        if rng.random() < 0.5:
            return f"<think>\nQuick mental arithmetic gives {ans}.\n</think>\n#### {ans}"
        return "I am not able to solve this problem, sorry about that."
    if kind == "multi_marker":
        if rng.random() < 0.55:  # the final answer repeated: not a hedge
            return think(str(ans)) + "\n".join(f"#### {ans}" for _ in range(rng.randint(2, 3)))
        w = wrong_of(rng, ans)
        lines = [w, ans] if rng.random() < 0.6 else [ans, w]
        if rng.random() < 0.3:
            lines.insert(0, wrong_of(rng, ans))
        return think(str(lines[-1])) + "\n".join(f"#### {x}" for x in lines)
    if kind == "number_list":
        cands = sorted({ans, wrong_of(rng, ans), wrong_of(rng, ans)})
        sep = ", " if rng.random() < 0.7 else ","
        return f"{think('one of these')}#### {sep.join(str(x) for x in cands)}"
    if kind == "or_hack":
        w = wrong_of(rng, ans)
        a, b = (ans, w) if rng.random() < 0.5 else (w, ans)
        return f"{think(f'{a} or {b}')}#### {a} or {b}"
    raise ValueError(kind)


KINDS = [("correct", 41.0), ("wrong", 20.0), ("no_think", 10.0), ("bad_think", 5.0),
         ("no_marker", 9.0), ("thousands", 8.0), ("short", 4.7), ("multi_marker", 1.6),
         ("number_list", 0.4), ("or_hack", 0.3)]


def rows(n: int, seed: int):
    rng = random.Random(seed)
    names = [k for k, _ in KINDS]
    weights = [w for _, w in KINDS]
    i = 0
    while i < n:
        qid = i // GROUP
        kinds = rng.choices(names, weights, k=GROUP)
        big = "thousands" in kinds or rng.random() < 0.1
        q, ans, steps = problem(rng, big)
        for j, kind in enumerate(kinds):
            if i >= n:
                break
            yield kind, {"id": f"gsm-{qid}-{j}", "prompt": INSTRUCTION + q,
                   "completion": completion(rng, kind, ans, steps), "solution": str(ans)}
            i += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="number of rows (default 100000)")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("-o", "--output", default=DEFAULT_OUT)
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    n_bytes = 0
    lengths = []
    kinds = Counter()
    with open(args.output, "w", encoding="utf-8") as f:
        for kind, row in rows(args.n, args.seed):
            kinds[kind] += 1
            line = json.dumps(row, ensure_ascii=False) + "\n"
            n_bytes += len(line)
            lengths.append(len(row["completion"]))
            f.write(line)
    lengths.sort()
    print(f"wrote {len(lengths)} rows ({n_bytes / 1e6:.1f} MB) to {args.output}; completion length "
          f"min {lengths[0]}, median {lengths[len(lengths) // 2]}, max {lengths[-1]}")
    print("kinds: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))


if __name__ == "__main__":
    main()
