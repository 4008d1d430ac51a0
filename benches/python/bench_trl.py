#!/usr/bin/env python3
"""A TRL-shaped reward call on a GRPO batch: Referee's TRL adapter against the same two rewards
written in Python as open-r1 writes them (Math-Verify accuracy, regex format).

The batch: --rollouts completions (default 1,024 = 128 prompts x 8 generations) in TRL's
conversational format, each an R1-style completion (a few hundred characters of reasoning, then
the answer in \\boxed{}), right or wrong, well or badly formatted; the `solution` column holds
the gold as a marked answer (`The answer is $\\boxed{...}$`). Both sides are called exactly as
GRPOTrainer calls reward functions: every function with prompts=, completions=,
completion_ids=, and the dataset columns as keyword lists.

  Python   accuracy: per completion, Math-Verify `parse(solution, extraction_mode="first_match")`,
           then `parse(content, [LatexExtractionConfig(boxed_match_priority=0,
           try_extract_without_anchor=False, normalization_config=NormalizationConfig(
           nits=False, malformed_operators=False, basic_latex=True,
           boxed="all", units=True))], extraction_mode="first_match")` and `verify(gold, answer)`
           (None when the gold does not parse), as open-r1's accuracy_reward; format:
           `re.match(r"^<think>\\n.*?\\n</think>\\n<answer>\\n.*?\\n</answer>$", content,
           re.DOTALL | re.MULTILINE)`, as open-r1's format_reward.
  Referee  referee.trl.reward_funcs(benches/python/spec.yaml): math_equiv (gold: solution) and
           format (r1, strict_newlines), the GIL released, all cores (rayon).

Each side is warmed up once (imports, ANTLR set-up), then timed --runs times (wall clock of the
whole call, both functions), interleaved; the medians and their ratio are printed, with the
agreement of the two on every reward. Referee is also timed on one thread
(RAYON_NUM_THREADS=1, in a child process) for a per-core ratio.

Usage: python benches/python/bench_trl.py [--rollouts 1024] [--runs 7] [--seed 1]
(run through benches/python/run.sh, which builds the optimised wheel and installs Math-Verify).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "spec.yaml")

# (gold, a wrong answer): integers, fractions, radicals, decimals, expressions, intervals.
ANSWERS = [
    ("72", "70"), ("\\frac{1}{2}", "\\frac{1}{3}"), ("3\\sqrt{2}", "2\\sqrt{3}"), ("0.25", "0.2"),
    ("x^2+2x+1", "x^2+1"), ("(1,3]", "[1,3]"), ("-7", "7"), ("\\frac{\\pi}{4}", "\\frac{\\pi}{2}"),
    ("1024", "512"), ("\\sqrt{5}", "5"), ("12", "13"), ("\\frac{7}{3}", "\\frac{3}{7}"),
    ("2\\pi", "\\pi"), ("5", "6"), ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}"), ("100", "10"),
]
FILLER = [
    "First, we rewrite the expression and collect like terms.",
    "Let $a = 3$ and $b = 4$, so $a^2 + b^2 = 25$.",
    "We check the boundary cases separately, since $x = 0$ is excluded.",
    "Multiplying both sides by $2$ gives $2y = 14$, hence $y = 7$.",
    "The sum of the first $n$ odd numbers is $n^2$.",
    "By symmetry, it suffices to consider the case $x \\ge 0$.",
]


def make_batch(n: int, seed: int):
    rng = random.Random(seed)
    prompts, completions, solutions = [], [], []
    for i in range(n):
        q = i // 8
        gold, wrong = ANSWERS[q % len(ANSWERS)]
        ans = gold if rng.random() < 0.5 else wrong
        reasoning = " ".join(rng.choice(FILLER) for _ in range(rng.randint(3, 8)))
        kind = rng.random()
        if kind < 0.6:
            text = f"<think>\n{reasoning}\n</think>\n<answer>\nThe answer is $\\boxed{{{ans}}}$.\n</answer>"
        elif kind < 0.8:
            text = f"<think>{reasoning}</think> So the answer is $\\boxed{{{ans}}}$."
        else:
            text = f"{reasoning} Therefore the final answer is $\\boxed{{{ans}}}$."
        prompts.append([{"role": "user", "content": f"Problem {q}: compute the value."}])
        completions.append([{"role": "assistant", "content": text}])
        solutions.append(f"The answer is $\\boxed{{{gold}}}$.")
    return prompts, completions, solutions


# ---------------------------------------------------------------- the Python rewards (open-r1)


def python_reward_funcs():
    from latex2sympy2_extended import NormalizationConfig
    from math_verify import LatexExtractionConfig, parse, verify

    answer_config = [LatexExtractionConfig(
        normalization_config=NormalizationConfig(
            nits=False, malformed_operators=False, basic_latex=True,
            boxed="all", units=True),
        boxed_match_priority=0, try_extract_without_anchor=False)]

    def accuracy_reward(completions, solution, **kwargs):
        out = []
        for completion, sol in zip(completions, solution):
            content = completion[0]["content"]
            gold = parse(sol, extraction_mode="first_match")
            if len(gold) == 0:
                out.append(None)
                continue
            answer = parse(content, extraction_config=answer_config, extraction_mode="first_match")
            try:
                out.append(float(verify(gold, answer)))
            except Exception:
                out.append(0.0)
        return out

    pattern = re.compile(r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$", re.DOTALL | re.MULTILINE)

    def format_reward(completions, **kwargs):
        return [1.0 if pattern.match(c[0]["content"]) else 0.0 for c in completions]

    return [accuracy_reward, format_reward]


def call_like_trl(funcs, prompts, completions, solutions):
    ids = [[0] * 16 for _ in completions]
    return [f(prompts=prompts, completions=completions, completion_ids=ids, trainer_state=None,
              solution=solutions) for f in funcs]


def time_calls(funcs, batch, runs):
    call_like_trl(funcs, *batch)  # warm-up
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = call_like_trl(funcs, *batch)
        times.append(time.perf_counter() - t0)
    return times, out


def referee_funcs():
    import referee.trl

    return referee.trl.reward_funcs(SPEC)


def child(args):
    """Referee alone (for the one-thread run): prints its times as JSON."""
    batch = make_batch(args.rollouts, args.seed)
    times, _ = time_calls(referee_funcs(), batch, args.runs)
    print(json.dumps(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    batch = make_batch(args.rollouts, args.seed)
    ref, py = referee_funcs(), python_reward_funcs()
    call_like_trl(ref, *batch)
    call_like_trl(py, *batch)
    ref_t, py_t = [], []
    ref_out = py_out = None
    for _ in range(args.runs):  # interleaved, so both see the same machine load
        t, ref_out = time_calls(ref, batch, 1)
        ref_t += t
        t, py_out = time_calls(py, batch, 1)
        py_t += t
    one = subprocess.run(
        [sys.executable, __file__, "--child", "--rollouts", str(args.rollouts), "--runs", str(args.runs),
         "--seed", str(args.seed)],
        env={**os.environ, "RAYON_NUM_THREADS": "1"}, capture_output=True, text=True, check=True)
    one_t = json.loads(one.stdout)
    n = args.rollouts
    agree = [sum(a == b for a, b in zip(ref_out[k], py_out[k])) for k in range(2)]
    med = statistics.median
    r_med, p_med, o_med = med(ref_t), med(py_t), med(one_t)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"batch: {n} rollouts (conversational), 2 reward functions (accuracy + format), {args.runs} runs")
    print(f"| side | median call | per rollout | ratio |")
    print(f"|---|---:|---:|---:|")
    print(f"| Python (Math-Verify + regex, open-r1) | {p_med * 1e3:.1f} ms | {p_med / n * 1e6:.0f} µs | 1× |")
    print(f"| Referee `referee.trl`, all cores | {r_med * 1e3:.2f} ms | {r_med / n * 1e6:.1f} µs | {p_med / r_med:.0f}× |")
    print(f"| Referee `referee.trl`, 1 thread | {o_med * 1e3:.2f} ms | {o_med / n * 1e6:.1f} µs | {p_med / o_med:.0f}× |")
    print(f"agreement: accuracy {agree[0]}/{n}, format {agree[1]}/{n}")
    dis = [(i, ref_out[0][i], py_out[0][i], batch[1][i][0]["content"][-60:], batch[2][i])
           for i in range(n) if ref_out[0][i] != py_out[0][i]]
    for d in dis[:10]:
        print("  accuracy differs:", json.dumps(d))
    print(json.dumps({"rollouts": n, "runs": args.runs, "python_ms": p_med * 1e3,
                      "referee_ms": r_med * 1e3, "referee_1thread_ms": o_med * 1e3,
                      "ratio": p_med / r_med, "ratio_1thread": p_med / o_med,
                      "agree_accuracy": agree[0], "agree_format": agree[1]}))


if __name__ == "__main__":
    main()
