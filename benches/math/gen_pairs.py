#!/usr/bin/env python3
"""Deterministic generator of (gold, completion, expected, category) pairs for math verifiers.

Writes JSONL rows

    {"id", "category", "gold", "completion", "answer", "expected", "format",
     "policy", "hostile"}

where `gold` is a bare answer (what a dataset stores), `completion` a model output that ends
with the answer `answer` in one of four formats after filler sentences, and `expected` the
true label (1/0) under referee-math's default semantics (/tmp/briefs/semantics.md: strict
marker extraction, exact integers and rationals, decimals to written precision, sets
order-free, tuples ordered, interval openness, percent `either`, degrees converted,
unevaluated expressions rejected against a literal gold, hedges wrong).

Categories named `*_policy` are the ones where a reasonable verifier (HuggingFace
Math-Verify in particular) legitimately decides otherwise; `policy: true` marks them.
Category `hostile` holds a few inputs that hang SymPy-based verifiers (nested powers,
Math-Verify issue #65); `hostile: true` marks them and they must be kept out of any
Math-Verify run (it never returns on them, its SIGALRM timeout cannot interrupt big-integer
arithmetic).

Answer formats (`format`):
    box        "... So the result is \\boxed{X}."
    dollar_box "... Putting it together: $\\boxed{X}$"
    minerva    "... Final Answer: The final answer is $X$. I hope it is correct."
    bold       "... **Answer:** $\\boxed{X}$"
(plus `none` for the no-answer categories.) Completions are 2-45 filler sentences full of
distractor numbers and `$..$` math; the `long_*` categories are 4-5 KB.

Stdlib only; the output depends only on --seed and -n. Every category gets n / C pairs (the
hostile category a fixed handful), rows are shuffled with the same seed.

Usage: python3 benches/math/gen_pairs.py [-n 10000] [--seed 12345] [-o benches/data/math_pairs.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
from collections import Counter
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(ROOT, "benches", "data", "math_pairs.jsonl")

FORMATS = ["box", "dollar_box", "minerva", "bold"]
BOX_FORMATS = ["box", "dollar_box", "bold"]

# ---------------------------------------------------------------- filler text


def _filler_sentence(rng: random.Random) -> str:
    a, b = rng.randint(2, 60), rng.randint(2, 30)
    k = rng.randrange(14)
    if k == 0:
        return f"First, note that ${a} + {b} = {a + b}$."
    if k == 1:
        return f"We compute {a} times {b}, which is {a * b}, along the way."
    if k == 2:
        return f"Substituting $x = {a}$ gives $2x + 1 = {2 * a + 1}$."
    if k == 3:
        return f"This means the intermediate total is {a * b + a}."
    if k == 4:
        return f"Let me double-check the ratio $\\frac{{{a}}}{{{b}}}$ before going on."
    if k == 5:
        return f"There are {a} cases to consider, and {b} of them can be discarded."
    if k == 6:
        return f"Hmm, {b} does not obviously divide {a * b + 1}, so I try another approach."
    if k == 7:
        return f"Since $\\sqrt{{{a * a}}} = {a}$, the bound holds."
    if k == 8:
        return f"The sum of the first {a} odd numbers is ${a * a}$."
    if k == 9:
        return f"Factoring gives $(x - {a})(x + {b}) = {poly2(1, b - a, -a * b)}$."
    if k == 10:
        return "Let me re-read the problem to be sure which quantity is asked for."
    if k == 11:
        return f"Wait, the previous step used {a}; I should check it against the condition."
    if k == 12:
        return f"In the interval $[{a}, {a + b}]$ the function is increasing."
    return f"Okay, so far the arithmetic checks out: ${a} \\cdot {b} = {a * b}$."


def filler(rng: random.Random, long: bool = False) -> str:
    opening = rng.choice([
        "Let's solve this step by step.",
        "We need to work through the problem carefully.",
        "To solve this, set up the relevant quantities first.",
        "Let me think about the structure of the problem.",
    ])
    parts = [opening]
    if long:
        target = rng.randint(4000, 4900)
        size = len(opening)
        while size < target:
            s = _filler_sentence(rng)
            parts.append(s)
            size += len(s) + 1
    else:
        k = min(45, 2 + int(rng.expovariate(1 / 5)))
        parts.extend(_filler_sentence(rng) for _ in range(k))
    # Some newlines, as models write paragraphs.
    out = []
    for i, p in enumerate(parts):
        out.append(p)
        out.append("\n\n" if i and rng.random() < 0.2 else " ")
    return "".join(out).rstrip()


def ending(fmt: str, x: str) -> str:
    if fmt == "box":
        return f"So the result is \\boxed{{{x}}}."
    if fmt == "dollar_box":
        return f"Putting it together: $\\boxed{{{x}}}$"
    if fmt == "minerva":
        return f"Final Answer: The final answer is ${x}$. I hope it is correct."
    if fmt == "bold":
        return f"**Answer:** $\\boxed{{{x}}}$"
    raise ValueError(fmt)


# ---------------------------------------------------------------- helpers for answers


def group3(n: int, sep: str) -> str:
    s = f"{abs(n):,}".replace(",", sep)
    return ("-" if n < 0 else "") + s


def frac_tex(f: Fraction, cmd: str = "\\frac") -> str:
    if f.denominator == 1:
        return str(f.numerator)
    sign = "-" if f < 0 else ""
    return f"{sign}{cmd}{{{abs(f.numerator)}}}{{{f.denominator}}}"


def reduced_fraction(rng: random.Random, dens=None) -> Fraction:
    while True:
        q = rng.choice(dens) if dens else rng.randint(2, 40)
        p = rng.randint(1, 3 * q)
        f = Fraction(p, q)
        if f.denominator > 1:
            return f if rng.random() < 0.8 else -f


def decimal_exact(f: Fraction) -> str:
    """Exact decimal of a terminating fraction."""
    if f.denominator == 1:
        return str(f.numerator)
    digits = 0
    while (f * 10**digits).denominator != 1:
        digits += 1
    v = f * 10**digits
    s = f"{abs(v.numerator):0{digits + 1}d}"
    s = s[:-digits] + "." + s[-digits:]
    return ("-" if f < 0 else "") + s


def sig_round(x: float, sig: int) -> str:
    """x correctly rounded to `sig` significant digits, plain decimal notation."""
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    places = max(0, sig - 1 - e)
    return f"{x:.{places}f}"


def lin(m: int, c: int, var: str = "x") -> str:
    """m*var + c in LaTeX, e.g. `3x - 4`, `-x + 2`, `5`."""
    if m == 0:
        return str(c)
    head = {1: var, -1: f"-{var}"}.get(m, f"{m}{var}")
    if c == 0:
        return head
    return f"{head} {'+' if c > 0 else '-'} {abs(c)}"


def poly2(a: int, b: int, c: int) -> str:
    """a x^2 + b x + c with a != 0."""
    s = {1: "x^2", -1: "-x^2"}.get(a, f"{a}x^2")
    if b:
        s += f" {'+' if b > 0 else '-'} " + ("x" if abs(b) == 1 else f"{abs(b)}x")
    if c:
        s += f" {'+' if c > 0 else '-'} {abs(c)}"
    return s


def xplus(c: int) -> str:
    return f"x {'+' if c > 0 else '-'} {abs(c)}"


def nonzero(rng: random.Random, lo: int, hi: int) -> int:
    while True:
        v = rng.randint(lo, hi)
        if v:
            return v


SQUAREFREE = [2, 3, 5, 6, 7, 10, 11, 13, 14, 15, 17, 19, 21, 22, 23]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
OTHER_WORDS = ["even", "odd", "blue", "north", "triangle", "yes", "no"]
LETTERS = "ABCDE"


def interval_tex(a, b, lo_closed: bool, hi_closed: bool, left_right: bool = False) -> str:
    lo = "[" if lo_closed else "("
    hi = "]" if hi_closed else ")"
    if left_right:
        return f"\\left{lo} {a}, {b} \\right{hi}"
    return f"{lo}{a}, {b}{hi}"


def matrix_tex(rows, env: str) -> str:
    body = " \\\\ ".join(" & ".join(str(v) for v in r) for r in rows)
    return f"\\begin{{{env}}} {body} \\end{{{env}}}"


def complex_tex(a: int, b: int, order: int = 0) -> str:
    bi = {1: "i", -1: "-i"}.get(b, f"{b}i")
    if order == 0:
        return f"{a} {'+' if b > 0 else '-'} {bi.lstrip('-')}"
    return f"{bi} {'+' if a > 0 else '-'} {abs(a)}"


# ---------------------------------------------------------------- categories
# Each returns (gold, answer_x, expected) or (gold, answer_x, expected, completion_override).


def c_int_small_right(rng):
    n = rng.randint(-50, 999)
    return str(n), str(n), 1


def c_int_small_off_by_one(rng):
    n = rng.randint(0, 999)
    return str(n), str(n + rng.choice([-1, 1])), 0


def c_int_large_right(rng):
    n = rng.randint(10_001, 99_999_999)
    return str(n), str(n), 1


def c_int_large_off_by_one(rng):
    n = rng.randint(10_001, 99_999_999)
    return str(n), str(n + rng.choice([-1, 1])), 0


def c_thousands_braces(rng):
    n = rng.randint(1000, 9_999_999)
    if rng.random() < 0.3:  # the gold written with separators, the answer plain
        return group3(n, "{,}"), str(n), 1
    return str(n), group3(n, "{,}"), 1


def c_thousands_comma(rng):
    n = rng.randint(1000, 9_999_999)
    return str(n), group3(n, ","), 1


def c_thousands_wrong(rng):
    n = rng.randint(1000, 9_999_999)
    m = n + rng.choice([-1000, 1000, -1, 1, 10])
    return str(n), group3(m, rng.choice(["{,}", ","])), 0


def c_decimal_vs_fraction(rng):
    f = reduced_fraction(rng, dens=[2, 4, 5, 8, 10, 16, 20, 25, 40])
    if rng.random() < 0.5:
        return frac_tex(f), decimal_exact(f), 1
    return decimal_exact(f), frac_tex(f, rng.choice(["\\frac", "\\dfrac"])), 1


def c_decimal_vs_fraction_wrong(rng):
    f = reduced_fraction(rng, dens=[2, 4, 5, 8, 10, 16, 20, 25, 40])
    # One step of the gold's denominator away: always more than half a unit of the last digit
    # of the gold's exact decimal (a decimal gold is matched to its written precision).
    g = f + Fraction(rng.choice([1, -1]), f.denominator)
    if rng.random() < 0.5:
        return frac_tex(f), decimal_exact(g), 0
    return decimal_exact(f), frac_tex(g), 0


def _prime_factors(q: int):
    out, d = [], 2
    while d * d <= q:
        while q % d == 0:
            out.append(d)
            q //= d
        d += 1
    return out + ([q] if q > 1 else [])


def repeating_tex(f: Fraction) -> str:
    """Exact repeating decimal of a fraction in LaTeX: 1/3 -> `0.\\overline{3}`, 7/6 -> `1.1\\overline{6}`."""
    sign = "-" if f < 0 else ""
    n, d = abs(f.numerator), f.denominator
    whole, r = divmod(n, d)
    digits, seen = [], {}
    while r and r not in seen:
        seen[r] = len(digits)
        q, r = divmod(r * 10, d)
        digits.append(str(q))
    if not r:
        return f"{sign}{whole}." + "".join(digits)
    k = seen[r]
    return f"{sign}{whole}." + "".join(digits[:k]) + "\\overline{" + "".join(digits[k:]) + "}"


def c_repeating_decimal_policy(rng):
    """Non-terminating fraction gold, decimal answer. Referee's default (`approximate: never`, the
    MATH convention): a rounded or truncated decimal is wrong, at any number of digits; the exact
    repeating decimal `0.\\overline{3}` is right. Math-Verify rounds both to 6 decimal places, so
    it accepts 0.333333 and the 7-digit roundings, and does not read `\\overline`. (The draws
    are the same as when 4-7 digit roundings were labelled right, so every other pair of the
    file is unchanged.)"""
    f = reduced_fraction(rng, dens=[3, 6, 7, 9, 11, 12, 13, 15])
    while all(p in (2, 5) for p in _prime_factors(f.denominator)):  # 3/15 = 1/5 terminates
        f = reduced_fraction(rng, dens=[3, 6, 7, 9, 11, 12, 13, 15])
    x = float(f)
    r = rng.random()
    if r < 0.45:  # correctly rounded: an approximation all the same
        return frac_tex(f), sig_round(x, rng.choice([4, 5, 6])), 0
    if r < 0.6:  # the exact repeating decimal
        return frac_tex(f), repeating_tex(f), 1
    if r < 0.8:  # too few digits
        return frac_tex(f), sig_round(x, rng.choice([2, 3])), 0
    # truncated instead of rounded, when that differs from rounding
    e = math.floor(math.log10(abs(x)))
    places = max(0, 5 - e)
    t = math.trunc(x * 10**places) / 10**places
    s = f"{t:.{places}f}"
    if s == sig_round(x, 6):
        return frac_tex(f), sig_round(x, 2), 0
    return frac_tex(f), s, 0


def c_dfrac(rng):
    f = reduced_fraction(rng)
    return frac_tex(f), frac_tex(f, rng.choice(["\\dfrac", "\\tfrac"])), 1


def c_fraction_inverted(rng):
    f = reduced_fraction(rng)
    if abs(f) == 1 or f.numerator == 0:
        f = Fraction(2, 3)
    return frac_tex(f), frac_tex(1 / f, rng.choice(["\\frac", "\\dfrac"])), 0


def c_slash_fraction(rng):
    f = reduced_fraction(rng)
    sign = "-" if f < 0 else ""
    return frac_tex(f), f"{sign}{abs(f.numerator)}/{f.denominator}", 1


def c_radical_equiv(rng):
    k, s = rng.randint(2, 9), rng.choice(SQUAREFREE)
    simp, big = f"{k}\\sqrt{{{s}}}", f"\\sqrt{{{k * k * s}}}"
    return (simp, big, 1) if rng.random() < 0.6 else (big, simp, 1)


def c_radical_wrong(rng):
    k, s = rng.randint(2, 9), rng.choice(SQUAREFREE)
    if rng.random() < 0.5:
        return f"{k}\\sqrt{{{s}}}", f"\\sqrt{{{k * k * s + rng.choice([-1, 1])}}}", 0
    return f"{k}\\sqrt{{{s}}}", f"{k + 1}\\sqrt{{{s}}}", 0


def c_poly_equiv(rng):
    a, b = nonzero(rng, -9, 9), nonzero(rng, -9, 9)
    if rng.random() < 0.4:
        b = a
        fact = f"({xplus(a)})^2"
    else:
        fact = f"({xplus(a)})({xplus(b)})"
    exp_ = poly2(1, a + b, a * b)
    return (fact, exp_, 1) if rng.random() < 0.5 else (exp_, fact, 1)


def c_poly_wrong(rng):
    a, b = nonzero(rng, -9, 9), nonzero(rng, -9, 9)
    fact = f"({xplus(a)})({xplus(b)})"
    if rng.random() < 0.5:
        wrong = poly2(1, a + b, a * b + rng.choice([-1, 1]))
    else:
        wrong = poly2(1, -(a + b) if a + b else 1, a * b)
    return fact, wrong, 0


def _distinct(rng, k, lo=-20, hi=20):
    return rng.sample(range(lo, hi + 1), k)


def set_tex(vals) -> str:
    return "\\{" + ", ".join(str(v) for v in vals) + "\\}"


def c_set_shuffled(rng):
    vals = _distinct(rng, rng.randint(2, 5))
    sh = vals[:]
    while len(sh) > 1 and sh == vals:
        rng.shuffle(sh)
    return set_tex(vals), set_tex(sh), 1


def c_set_missing(rng):
    vals = _distinct(rng, rng.randint(2, 5))
    sh = vals[:]
    rng.shuffle(sh)
    sh.pop()
    return set_tex(vals), set_tex(sh), 0


def c_tuple_right(rng):
    a, b = _distinct(rng, 2, -30, 30)
    return f"({a}, {b})", rng.choice([f"({a}, {b})", f"({a},{b})", f"\\left( {a}, {b} \\right)"]), 1


def c_tuple_swapped(rng):
    a, b = _distinct(rng, 2, -30, 30)
    return f"({a}, {b})", f"({b}, {a})", 0


def _endpoints(rng):
    a = rng.randint(-20, 15)
    return a, a + rng.randint(1, 15)


def c_interval_right(rng):
    a, b = _endpoints(rng)
    lc, hc = rng.random() < 0.5, rng.random() < 0.5
    return interval_tex(a, b, lc, hc), interval_tex(a, b, lc, hc, left_right=rng.random() < 0.6), 1


def c_interval_openness(rng):
    a, b = _endpoints(rng)
    lc, hc = rng.random() < 0.5, rng.random() < 0.5
    flip = rng.randrange(3)
    lc2, hc2 = (not lc if flip != 1 else lc), (not hc if flip != 0 else hc)
    return interval_tex(a, b, lc, hc), interval_tex(a, b, lc2, hc2, left_right=rng.random() < 0.5), 0


def c_interval_infinity(rng):
    a = rng.randint(-20, 20)
    closed = rng.random() < 0.5
    if rng.random() < 0.5:
        gold = f"(-\\infty, {a}{']' if closed else ')'}"
        ans = f"\\left(-\\infty, {a}\\right{']' if closed else ')'}"
    else:
        gold = f"{'[' if closed else '('}{a}, \\infty)"
        ans = f"\\left{'[' if closed else '('}{a}, \\infty\\right)"
    return gold, ans if rng.random() < 0.6 else gold, 1


def c_interval_infinity_wrong(rng):
    a = rng.randint(-20, 20)
    closed = rng.random() < 0.5
    if rng.random() < 0.5:
        gold = f"(-\\infty, {a}{']' if closed else ')'}"
        ans = f"(-\\infty, {a}{')' if closed else ']'}" if rng.random() < 0.5 else f"(-\\infty, {a + 1}{']' if closed else ')'}"
    else:
        gold = f"{'[' if closed else '('}{a}, \\infty)"
        ans = f"{'(' if closed else '['}{a}, \\infty)" if rng.random() < 0.5 else f"(-\\infty, {a}{']' if closed else ')'}"
    return gold, ans, 0


def c_interval_union_right(rng):
    a, b = _endpoints(rng)
    left = f"(-\\infty, {a}{']' if rng.random() < 0.5 else ')'}"
    right = f"{'[' if rng.random() < 0.5 else '('}{b}, \\infty)"
    gold = f"{left} \\cup {right}"
    ans = f"{right} \\cup {left}" if rng.random() < 0.5 else gold
    return gold, ans, 1


def c_interval_union_wrong(rng):
    a, b = _endpoints(rng)
    lc, rc = rng.random() < 0.5, rng.random() < 0.5
    left = f"(-\\infty, {a}{']' if lc else ')'}"
    right = f"{'[' if rc else '('}{b}, \\infty)"
    r = rng.randrange(3)
    if r == 0:
        ans = f"(-\\infty, {a}{')' if lc else ']'} \\cup {right}"
    elif r == 1:
        ans = f"{left} \\cup {'[' if rc else '('}{b + 1}, \\infty)"
    else:
        ans = interval_tex(a, b, not lc, not rc)  # the complement
    return f"{left} \\cup {right}", ans, 0


def c_text_right(rng):
    w = rng.choice(DAYS + OTHER_WORDS)
    ans = rng.choice([f"\\text{{{w}}}", w, f"\\text{{{w.lower()}}}", f"\\textbf{{{w}}}"])
    if ans in (w, w.lower()):  # a bare word inside `$..$` reads as a product of letters
        return f"\\text{{{w}}}", ans, 1, BOX_FORMATS
    return f"\\text{{{w}}}", ans, 1


def c_text_wrong(rng):
    w, v = rng.sample(DAYS, 2)
    if rng.random() < 0.5:
        return f"\\text{{{w}}}", v, 0, BOX_FORMATS
    return f"\\text{{{w}}}", f"\\text{{{v}}}", 0


def c_choice_right(rng):
    c = rng.choice(LETTERS)
    return f"\\text{{({c})}}", rng.choice([f"\\text{{({c})}}", c, f"({c})", f"\\textbf{{({c})}}"]), 1


def c_choice_wrong(rng):
    c, d = rng.sample(LETTERS, 2)
    return f"\\text{{({c})}}", rng.choice([f"\\text{{({d})}}", d, f"({d})"]), 0


def c_equation_reordered(rng):
    m, b = nonzero(rng, -9, 9), nonzero(rng, -20, 20)
    gold = f"y = {lin(m, b)}"
    r = rng.randrange(4)
    if r == 0:
        mx = {1: "x", -1: "-x"}.get(m, f"{m}x")
        ans = f"y = {b} {'+' if m > 0 else '-'} {mx.lstrip('-')}"
    elif r == 1:
        ans = f"{lin(m, b)} = y"
    elif r == 2:  # m x - y + b = 0
        ans = f"{lin(m, 0)} - y {'+' if b > 0 else '-'} {abs(b)} = 0"
    else:  # scaled by 2 and moved: 2y - 2mx = 2b
        ans = f"2y {'-' if m > 0 else '+'} {abs(2 * m)}x = {2 * b}"
    return gold, ans, 1


def c_equation_wrong(rng):
    m, b = nonzero(rng, -9, 9), nonzero(rng, -20, 20)
    gold = f"y = {lin(m, b)}"
    r = rng.randrange(3)
    if r == 0:
        ans = f"y = {lin(m, -b)}"
    elif r == 1:
        ans = f"y = {lin(m + (1 if m != -1 else 2), b)}"
    elif m != -1:  # x = my + b is the same line when m = -1
        ans = f"x = {lin(m, b, 'y')}"
    else:
        ans = f"y = {lin(m, b + 1)}"
    return gold, ans, 0


def c_percent(rng):
    p = rng.randint(1, 99)
    r = rng.randrange(4)
    if r == 0:
        return f"{p}\\%", f"{p}\\%", 1
    if r == 1:
        return f"{p}\\%", str(p), 1
    if r == 2:
        return str(p), f"{p}\\%", 1
    return f"{p}\\%", decimal_exact(Fraction(p, 100)), 1


def c_percent_wrong(rng):
    p = rng.randint(2, 99)
    r = rng.randrange(2)
    if r == 0:
        return f"{p}\\%", f"{p + rng.choice([-1, 1])}\\%", 0
    return f"{p}\\%", decimal_exact(Fraction(p + 1, 100)), 0


def c_percent_no_marker(rng):
    """No % on either side: Referee never scales by 100 (the x100 guess); a value written as a
    fraction of one does not answer a gold written in percent points."""
    p = rng.randint(2, 99)
    return str(p), decimal_exact(Fraction(p, 100)), 0


def c_pi_fraction_right(rng):
    n = rng.randint(2, 12)
    ans = rng.choice([f"\\frac{{\\pi}}{{{n}}}", f"\\dfrac{{\\pi}}{{{n}}}", f"\\frac{{2\\pi}}{{{2 * n}}}",
                      f"\\frac{{1}}{{{n}}}\\pi"])
    return f"\\frac{{\\pi}}{{{n}}}", ans, 1


def c_pi_fraction_wrong(rng):
    n = rng.randint(2, 12)
    ans = rng.choice([f"\\frac{{\\pi}}{{{n + 1}}}", f"\\frac{{2\\pi}}{{{n}}}", f"\\frac{{{n}}}{{\\pi}}"])
    return f"\\frac{{\\pi}}{{{n}}}", ans, 0


def c_angle_degrees_policy(rng):
    """Radian gold, degree answer: Referee converts (45^\\circ = pi/4); Math-Verify does not."""
    n = rng.choice([2, 3, 4, 5, 6, 9, 10, 12, 18, 20, 36])
    deg = 180 // n
    return f"\\frac{{\\pi}}{{{n}}}", rng.choice([f"{deg}^\\circ", f"{deg}^{{\\circ}}"]), 1


def c_matrix_right(rng):
    rows = [[rng.randint(-9, 9) for _ in range(2)] for _ in range(2)]
    envs = ("pmatrix", "bmatrix") if rng.random() < 0.5 else ("bmatrix", "pmatrix")
    return matrix_tex(rows, envs[0]), matrix_tex(rows, envs[1]), 1


def c_matrix_wrong(rng):
    rows = [[rng.randint(-9, 9) for _ in range(2)] for _ in range(2)]
    bad = [r[:] for r in rows]
    i, j = rng.randrange(2), rng.randrange(2)
    bad[i][j] += rng.choice([-1, 1])
    if rng.random() < 0.3:  # transposed, when that changes it
        t = [[rows[0][0], rows[1][0]], [rows[0][1], rows[1][1]]]
        if t != rows:
            bad = t
    return matrix_tex(rows, "pmatrix"), matrix_tex(bad, "bmatrix"), 0


def c_complex_right(rng):
    a, b = nonzero(rng, -12, 12), nonzero(rng, -12, 12)
    return complex_tex(a, b), complex_tex(a, b, order=rng.randrange(2)), 1


def c_complex_wrong(rng):
    a, b = nonzero(rng, -12, 12), nonzero(rng, -12, 12)
    if rng.random() < 0.6:  # the conjugate
        return complex_tex(a, b), complex_tex(a, -b, order=rng.randrange(2)), 0
    c, d = (b, a) if a != b else (a + 1, b)  # real and imaginary parts swapped
    return complex_tex(a, b), complex_tex(c, d), 0


def c_unevaluated_policy(rng):
    """Literal integer gold, an unevaluated expression equal to it: Referee rejects (restating the
    computation is not an answer); Math-Verify evaluates and accepts."""
    r = rng.randrange(3)
    if r == 0:
        a, b = rng.randint(2, 500), rng.randint(2, 500)
        return str(a + b), f"{a} + {b}", 0
    if r == 1:
        k = rng.randint(3, 20)
        return str(2**k), f"2^{{{k}}}", 0
    a, b = rng.randint(3, 40), rng.randint(3, 40)
    return str(a * b), f"{a} \\times {b}", 0


def c_hedge(rng):
    """Two candidate answers in one box, one of them right: a hedge, wrong for a scalar gold."""
    n = rng.randint(1, 200)
    m = n + rng.randint(1, 9)
    a, b = (n, m) if rng.random() < 0.5 else (m, n)
    return str(n), rng.choice([f"{a} \\text{{ or }} {b}", f"{a} \\text{{ and }} {b}", f"{a}, {b}"]), 0


def c_self_correction(rng):
    n = rng.randint(1, 500)
    w = n + rng.choice([-3, -2, -1, 1, 2, 3])
    x = str(n)
    fmt = rng.choice(FORMATS)
    comp = (filler(rng) + f" So the result is \\boxed{{{w}}}. Wait, that is not right: the last step dropped a term. "
            "Let me redo that step carefully. " + filler(rng) + " " + ending(fmt, x))
    return str(n), x, 1, comp, fmt


def c_no_answer(rng):
    """No marker and no number equal to the gold: every verifier should give 0."""
    text = filler(rng) + " " + rng.choice([
        "I am not sure how to finish this, so let me stop here.",
        "This problem needs more information than I have.",
        "I ran out of steps before reaching a conclusion.",
    ])
    seen = set(re.findall(r"\d+", text))
    n = rng.randint(200, 999)
    while str(n) in seen:
        n = rng.randint(200, 999)
    return str(n), "", 0, text, "none"


def c_no_answer_lazy_policy(rng):
    """No marker, but the last number in the text is the gold (an unanchored `a + b = N`).
    Referee's strict extraction gives no_answer (0); Math-Verify's default config extracts the
    last number without an anchor and gives 1."""
    a, b = rng.randint(100, 500), rng.randint(100, 500)
    text = filler(rng) + f" Adding the two parts, {a} + {b} = {a + b}."
    return str(a + b), "", 0, text, "none"


def c_long_right(rng):
    kind = rng.randrange(3)
    if kind == 0:
        n = rng.randint(1, 99999)
        gold, x = str(n), str(n)
    elif kind == 1:
        f = reduced_fraction(rng)
        gold, x = frac_tex(f), frac_tex(f, "\\dfrac")
    else:
        k, s = rng.randint(2, 9), rng.choice(SQUAREFREE)
        gold, x = f"{k}\\sqrt{{{s}}}", f"{k}\\sqrt{{{s}}}"
    fmt = rng.choice(FORMATS)
    return gold, x, 1, filler(rng, long=True) + " " + ending(fmt, x), fmt


def c_long_wrong(rng):
    n = rng.randint(1, 99999)
    x = str(n + rng.choice([-1, 1, 10]))
    fmt = rng.choice(FORMATS)
    return str(n), x, 0, filler(rng, long=True) + " " + ending(fmt, x), fmt


HOSTILE = [
    r"\dfrac{5^{(5^{(5^{(5^5)})}-4)}-5}{16}",
    r"9^{9^{9^9}}",
    r"2^{2^{2^{2^{2^{2}}}}}",
    r"(2003^{2002^{2001}})",
    r"7^{7^{7^{7}}} - 1",
]


def c_hostile(rng):
    """Nested powers (Math-Verify issue #65). Never sent to Math-Verify. Referee must answer fast
    (too_complex, i.e. 0) instead of hanging."""
    h = rng.choice(HOSTILE)
    if rng.random() < 0.7:
        return str(rng.randint(1, 999)), h, 0
    other = rng.choice([x for x in HOSTILE if x != h])
    return h, other, 0


CATEGORIES = {
    "int_small_right": c_int_small_right,
    "int_small_off_by_one": c_int_small_off_by_one,
    "int_large_right": c_int_large_right,
    "int_large_off_by_one": c_int_large_off_by_one,
    "thousands_braces": c_thousands_braces,
    "thousands_comma": c_thousands_comma,
    "thousands_wrong": c_thousands_wrong,
    "decimal_vs_fraction": c_decimal_vs_fraction,
    "decimal_vs_fraction_wrong": c_decimal_vs_fraction_wrong,
    "repeating_decimal_policy": c_repeating_decimal_policy,
    "dfrac": c_dfrac,
    "fraction_inverted": c_fraction_inverted,
    "slash_fraction": c_slash_fraction,
    "radical_equiv": c_radical_equiv,
    "radical_wrong": c_radical_wrong,
    "poly_equiv": c_poly_equiv,
    "poly_wrong": c_poly_wrong,
    "set_shuffled": c_set_shuffled,
    "set_missing": c_set_missing,
    "tuple_right": c_tuple_right,
    "tuple_swapped": c_tuple_swapped,
    "interval_right": c_interval_right,
    "interval_openness": c_interval_openness,
    "interval_infinity": c_interval_infinity,
    "interval_infinity_wrong": c_interval_infinity_wrong,
    "interval_union_right": c_interval_union_right,
    "interval_union_wrong": c_interval_union_wrong,
    "text_right": c_text_right,
    "text_wrong": c_text_wrong,
    "choice_right": c_choice_right,
    "choice_wrong": c_choice_wrong,
    "equation_reordered": c_equation_reordered,
    "equation_wrong": c_equation_wrong,
    "percent": c_percent,
    "percent_wrong": c_percent_wrong,
    "percent_no_marker": c_percent_no_marker,
    "pi_fraction_right": c_pi_fraction_right,
    "pi_fraction_wrong": c_pi_fraction_wrong,
    "angle_degrees_policy": c_angle_degrees_policy,
    "matrix_right": c_matrix_right,
    "matrix_wrong": c_matrix_wrong,
    "complex_right": c_complex_right,
    "complex_wrong": c_complex_wrong,
    "unevaluated_policy": c_unevaluated_policy,
    "hedge": c_hedge,
    "self_correction": c_self_correction,
    "no_answer": c_no_answer,
    "no_answer_lazy_policy": c_no_answer_lazy_policy,
    "long_right": c_long_right,
    "long_wrong": c_long_wrong,
    "hostile": c_hostile,
}


def generate(n: int, seed: int):
    rng = random.Random(seed)
    normal = [c for c in CATEGORIES if c != "hostile"]
    n_hostile = min(max(5, n // 1000), n)
    per, extra = divmod(n - n_hostile, len(normal))
    plan = []
    for i, c in enumerate(normal):
        plan += [c] * (per + (1 if i < extra else 0))
    plan += ["hostile"] * n_hostile
    rows = []
    for cat in plan:
        out = CATEGORIES[cat](rng)
        if len(out) <= 4:
            gold, x, expected = out[:3]
            fmt = rng.choice(out[3] if len(out) == 4 else FORMATS)
            comp = filler(rng) + " " + ending(fmt, x)
        else:
            gold, x, expected, comp, fmt = out
        rows.append({
            "category": cat,
            "gold": gold,
            "completion": comp,
            "answer": x,
            "expected": expected,
            "format": fmt,
            "policy": cat.endswith("_policy"),
            "hostile": cat == "hostile",
        })
    rng.shuffle(rows)
    for i, r in enumerate(rows):
        r["id"] = f"m{i:06d}"
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10_000, help="number of pairs (default 10000)")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("-o", "--out", default=DEFAULT_OUT)
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args()
    rows = generate(args.n, args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            keys = ["id", "category", "gold", "completion", "answer", "expected", "format", "policy", "hostile"]
            f.write(json.dumps({k: r[k] for k in keys}, ensure_ascii=False) + "\n")
    if not args.quiet:
        cats = Counter(r["category"] for r in rows)
        pos = Counter(r["category"] for r in rows if r["expected"])
        lens = sorted(len(r["completion"]) for r in rows)
        print(f"wrote {len(rows):,} pairs, {len(cats)} categories, seed {args.seed} -> {args.out}")
        print(f"completion length: min {lens[0]}, median {lens[len(lens) // 2]}, max {lens[-1]} chars; "
              f"expected=1: {sum(pos.values()):,}; hostile: {cats['hostile']}")
        for c in CATEGORIES:
            print(f"  {c:<28} {cats[c]:>6}  expected=1: {pos[c]:>5}")


if __name__ == "__main__":
    main()
