"""The texts the likelihood tests score, shared by the reward's tests and the oracle's own
check that each has the boundary (or, for the straddling case, not) that the tests rely on."""

from __future__ import annotations

# (question, reasoning, reference): no reasoning restates its reference.
ROWS = [
    ("What is the capital of France?", "Let me recall the map of Europe.", "Paris"),
    ("What is the capital of Peru?", "Think about South America.", "Lima"),
    ("What is 6 times 7?", "Multiply step by step.", "42"),
    ("What is the capital of Japan?", "Le café est très chaud.", "Tokyo"),
    ("Name the capital of Germany.", "Die Straße ist groß.", "Berlin"),
    ("Q: what is the powerhouse?", "Recall biology.", "the mitochondria is the powerhouse of the cell"),
    ("Wo liegt 日本?", "漢字 helfen hier nicht.", "Tokyo, 日本"),
]
LONG_REFERENCE = "the mitochondria is the powerhouse of the cell"
LEAKY_REASONING = "I know that The Mitochondria is the powerhouse of the cell!"
# A context ending mid-word: both tokenizers merge "Par" + "is" into one token.
STRADDLE = ("What is the capital of France?\nAnswer: Par", "is")


def context_of(question: str, reasoning: str) -> str:
    """The spec's context template, filled: question, reasoning, then "Answer:"."""
    return f"{question}\n{reasoning}\nAnswer:"


def baseline_of(question: str) -> str:
    return f"{question}\nAnswer:"
