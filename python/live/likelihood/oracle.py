"""What the `likelihood` reward must compute, straight from the model: the logprobs of a
target's tokens after a context, found with the tokenizer's own character offsets (never the
server's decoded strings), and the four reductions."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Optional

import torch


@functools.lru_cache(maxsize=4)
def load(model_dir: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    return tok, model


@torch.no_grad()
def token_logprobs(model_dir, text: str) -> tuple[list[int], list[Optional[float]]]:
    """The text's token ids (with the tokenizer's special tokens, as the server encodes it) and
    each token's logprob after the ones before it (``None`` for the first)."""
    tok, model = load(str(model_dir))
    ids = tok(text)["input_ids"]
    rows = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
    return ids, [None] + [float(rows[j - 1, ids[j]]) for j in range(1, len(ids))]


def target_start(model_dir, context: str, target: str) -> Optional[int]:
    """Index of the first token of context+target that starts at or after ``len(context)``;
    ``None`` when a token straddles the boundary (or the target has no token of its own)."""
    tok, _ = load(str(model_dir))
    enc = tok(context + target, return_offsets_mapping=True)
    cut = len(context)
    specials = set(tok.all_special_ids)
    for i, ((s, e), tid) in enumerate(zip(enc["offset_mapping"], enc["input_ids"])):
        if tid in specials and s == e:
            continue  # BOS and friends cover no text
        if s < cut < e:
            return None
        if s >= cut:
            return i
    return None


def target_logprobs(model_dir, context: str, target: str) -> Optional[list[float]]:
    """The target's token logprobs after the context, or ``None`` ("no boundary")."""
    start = target_start(model_dir, context, target)
    if start is None:
        return None
    _, lps = token_logprobs(model_dir, context + target)
    if start == 0:
        return None  # the first token has no logprob: nothing came before it
    return [float(x) for x in lps[start:]]


def mean_prob(lps: list[float]) -> float:
    return sum(math.exp(x) for x in lps) / len(lps)


def mean_logprob(lps: list[float]) -> float:
    return sum(lps) / len(lps)


def sum_logprob(lps: list[float]) -> float:
    return float(sum(lps))


def exp_mean_logprob(lps: list[float]) -> float:
    return math.exp(mean_logprob(lps))


REDUCTIONS = {
    "mean_prob": mean_prob,
    "mean_logprob": mean_logprob,
    "sum_logprob": sum_logprob,
    "exp_mean_logprob": exp_mean_logprob,
}


def reduce(name: str, lps: list[float]) -> float:
    return REDUCTIONS[name](lps)


def value(model_dir: Path, context: str, target: str, reduction: str,
          baseline: Optional[str] = None) -> float:
    """The reward the spec should give: reduce(context), minus reduce(baseline) with one."""
    lps = target_logprobs(model_dir, context, target)
    assert lps, f"no boundary between {context!r} and {target!r}"
    v = reduce(reduction, lps)
    if baseline is not None:
        base = target_logprobs(model_dir, baseline, target)
        assert base, f"no boundary between {baseline!r} and {target!r}"
        v -= reduce(reduction, base)
    return v
