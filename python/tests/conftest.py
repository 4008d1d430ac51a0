"""Shared fixtures: the repository's `referee` binary (the CLI the adapters are compared with),
the test specs, and generated rollouts."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = Path(__file__).resolve().parent / "specs"


def referee_bin() -> Path:
    p = Path(os.environ.get("REFEREE_BIN", ROOT / "target" / "debug" / "referee"))
    if not p.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "referee-cli"], cwd=ROOT, check=True)
    return p


@pytest.fixture(scope="session")
def cli():
    """``cli(spec, rows, *args) -> list[dict]``: ``referee score`` on the rows as JSONL."""
    exe = referee_bin()

    def run(spec, rows, *args, tmp=None):
        data = "".join(json.dumps(r) + "\n" for r in rows)
        out = subprocess.run(
            [str(exe), "score", str(spec), "-q", *args],
            input=data.encode(), capture_output=True, check=True, cwd=ROOT,
        )
        return [json.loads(line) for line in out.stdout.decode().splitlines()]

    return run


@pytest.fixture(scope="session")
def specs() -> Path:
    return SPECS


GOLDS = ["4", "\\frac{1}{2}", "72", "3\\sqrt{2}", "(1,3]", "0.25", "x^2+2x+1", "\\pi"]
WRONG = ["5", "\\frac{1}{3}", "70", "4", "[1,3]", "0.2", "x^2+1", "3.14"]


def completion(rng: random.Random, gold: str, wrong: str) -> str:
    """An R1-style completion: right or wrong answer, well formed or not."""
    ans = gold if rng.random() < 0.5 else wrong
    kind = rng.randrange(4)
    if kind == 0:
        return f"<think>\nLet me work it out.\n</think>\n<answer>\n\\boxed{{{ans}}}\n</answer>"
    if kind == 1:
        return f"The answer is \\boxed{{{ans}}}."
    if kind == 2:
        return f"<think>hmm</think><answer>The final answer is {ans}</answer>"
    return f"<think>\nno answer here\n</think>"


@pytest.fixture(scope="session")
def trl_batch():
    """A GRPO batch in TRL's shape: 8 prompts x 4 generations, `solution` column."""
    rng = random.Random(7)
    prompts, completions, solutions = [], [], []
    for q in range(8):
        gold, wrong = GOLDS[q], WRONG[q]
        for _ in range(4):
            prompts.append(f"Question {q}: solve it.")
            completions.append(completion(rng, gold, wrong))
            solutions.append(gold)
    return prompts, completions, solutions
