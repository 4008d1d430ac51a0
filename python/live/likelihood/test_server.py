"""server.py's replies agree with the model computed directly and have vLLM's shape, its
per-token decoding quirks included, for both tokenizers."""

from __future__ import annotations

import math

import pytest
import torch

import oracle
from cases import LEAKY_REASONING, LONG_REFERENCE, ROWS, STRADDLE, baseline_of, context_of

# Logprobs are float32: the server's batch and the test's single text differ by a few ulps
# (2e-6 seen on torch's CPU kernels for values near -10), far below any reward's tolerance.
TOL = 1e-5

PROMPTS = [
    "What is the capital of France?\nAnswer: Paris",
    "Le café est très chaud. Die Straße ist groß. 日本",
    # 漢 and ü are nowhere in the corpus: bytes the tokenizers never merged.
    "漢字 and über",
    "What is 6 times 7? Let me think.\nAnswer: 42",
]


def decoded(tok, tid: int) -> str:
    """A token alone, as vLLM decodes it (the brief's formula; equal to ``decode([id])``)."""
    return tok.convert_tokens_to_string([tok.convert_ids_to_tokens(tid)])


def model_rows(server, text):
    tok, model = oracle.load(str(server.model_dir))
    ids = tok(text)["input_ids"]
    with torch.no_grad():
        rows = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    return tok, ids, rows


def completions(server, **body):
    status, out = server.post("/v1/completions", {"model": server.name, **body})
    assert status == 200, out
    assert out["object"] == "text_completion" and out["model"] == server.name
    assert out["id"].startswith("cmpl-") and isinstance(out["created"], int)
    return out


def test_echo_without_generation(server):
    k = 2
    out = completions(server, prompt=PROMPTS, echo=True, logprobs=k, max_tokens=0, temperature=0)
    assert [c["index"] for c in out["choices"]] == list(range(len(PROMPTS)))
    n_tokens = 0
    for text, choice in zip(PROMPTS, out["choices"]):
        tok, ids, rows = model_rows(server, text)
        n_tokens += len(ids)
        _, lps = oracle.token_logprobs(server.model_dir, text)
        assert choice["text"] == text
        assert choice["finish_reason"] == "length" and choice["stop_reason"] is None
        lp = choice["logprobs"]
        assert set(lp) == {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
        want_tokens = [decoded(tok, i) for i in ids]
        assert lp["tokens"] == want_tokens
        assert want_tokens == [tok.decode([i]) for i in ids]
        assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
        assert len(lp["token_logprobs"]) == len(ids)
        for got, want in zip(lp["token_logprobs"][1:], lps[1:]):
            # float32 log-softmax over a padded batch differs from one text alone by a few ulps.
            assert abs(got - want) < TOL
        offsets = [0]
        for t in want_tokens[:-1]:
            offsets.append(offsets[-1] + len(t))
        assert lp["text_offset"] == offsets
        for j in range(1, len(ids)):
            top = lp["top_logprobs"][j]
            # The actual token, then the top k (fewer keys when they coincide or decode alike).
            assert want_tokens[j] in top and len(top) <= k + 1
            best = torch.topk(rows[j - 1], k)
            for v, i in zip(best.values.tolist(), best.indices.tolist()):
                s = decoded(tok, i)
                assert s in top
                if list(top).count(s) == 1 and sum(decoded(tok, x) == s for x in [ids[j], *best.indices.tolist()]) == 1:
                    assert abs(top[s] - v) < TOL
        # echo with logprobs asks vLLM's engine for prompt logprobs too, and it returns them.
        assert len(choice["prompt_logprobs"]) == len(ids)
        assert choice["prompt_token_ids"] is None
    # vLLM runs one hidden step for echo without generation and counts it.
    assert out["usage"]["prompt_tokens"] == n_tokens
    assert out["usage"]["completion_tokens"] == len(PROMPTS)
    assert out["usage"]["total_tokens"] == n_tokens + len(PROMPTS)


@pytest.mark.parametrize("k", [0, 3])
def test_prompt_logprobs(server, k):
    out = completions(server, prompt=PROMPTS, prompt_logprobs=k, max_tokens=1, temperature=0,
                      return_token_ids=True)
    for text, choice in zip(PROMPTS, out["choices"]):
        tok, ids, rows = model_rows(server, text)
        assert choice["logprobs"] is None
        assert choice["prompt_token_ids"] == ids
        plp = choice["prompt_logprobs"]
        assert len(plp) == len(ids) and plp[0] is None
        for j in range(1, len(ids)):
            pos = plp[j]
            row = rows[j - 1]
            want_keys = {ids[j], *torch.topk(row, k).indices.tolist()} if k else {ids[j]}
            assert set(pos) == {str(i) for i in want_keys}
            for key, entry in pos.items():
                tid = int(key)
                assert set(entry) == {"logprob", "rank", "decoded_token"}
                assert abs(entry["logprob"] - float(row[tid])) < TOL
                assert entry["decoded_token"] == decoded(tok, tid)
            actual = pos[str(ids[j])]
            # vLLM's rank: the vocabulary entries at least as likely (1 = the most likely).
            assert actual["rank"] == int((row >= row[ids[j]]).sum())
        # One greedy token: the model's argmax after the prompt.
        assert choice["text"] == tok.decode([int(torch.argmax(rows[-1]))], skip_special_tokens=True)
        assert choice["token_ids"] == [int(torch.argmax(rows[-1]))]
    assert out["usage"]["completion_tokens"] == len(PROMPTS)


def test_echo_with_generation(server):
    text = PROMPTS[0]
    out = completions(server, prompt=text, echo=True, logprobs=1, max_tokens=3, temperature=0)
    tok, ids, _ = model_rows(server, text)
    seq = list(ids)
    _, model = oracle.load(str(server.model_dir))
    with torch.no_grad():
        for _ in range(3):
            seq.append(int(torch.argmax(model(torch.tensor([seq])).logits[0, -1])))
    gen = seq[len(ids):]
    choice = out["choices"][0]
    assert choice["text"] == text + tok.decode(gen, skip_special_tokens=True)
    assert choice["logprobs"]["tokens"] == [decoded(tok, i) for i in seq]
    assert all(x is not None for x in choice["logprobs"]["token_logprobs"][1:])
    assert out["usage"]["completion_tokens"] == 3


def test_decoding_quirks(server):
    """The tokens decoded one by one do not spell the text: the spm tokenizer's lose their
    leading space and its BOS shows as `<s>`; bytes of an unmerged character are U+FFFD."""
    for text in PROMPTS:
        out = completions(server, prompt=text, echo=True, logprobs=0, max_tokens=0)
        tokens = out["choices"][0]["logprobs"]["tokens"]
        tok = oracle.load(str(server.model_dir))[0]
        if server.kind == "spm":
            assert tokens[0] == "<s>"
            assert "".join(tokens) != text
            words = text.split(" ")
            assert " " + words[1] not in tokens  # no token keeps its leading space
            assert all(not t.startswith(" ") for t in tokens)
        else:
            assert tokens[0] != "<s>"
            # Byte-level tokens spell the text but where a character's bytes were split.
            assert ("".join(tokens) == text) == all("\ufffd" not in t for t in tokens)
            if text.isascii():
                assert "".join(tokens) == text
        if "漢" in text:
            assert any("\ufffd" in t for t in tokens)
            assert "".join(tokens) != text
    if server.kind == "bpe":
        # The byte-level tokens do spell ASCII text, offsets and all.
        out = completions(server, prompt=PROMPTS[0], echo=True, logprobs=0, max_tokens=0)
        lp = out["choices"][0]["logprobs"]
        assert [PROMPTS[0][o:o + len(t)] for o, t in zip(lp["text_offset"], lp["tokens"])] == lp["tokens"]


def assert_error(status, out, code, kind):
    assert status == code, out
    assert out["object"] == "error" and out["type"] == kind and out["code"] == code
    assert isinstance(out["message"], str) and out["message"]


def test_errors(server):
    post = server.post
    assert_error(*post("/v1/completions", b"{not json"), 400, "BadRequestError")
    assert_error(*post("/v1/completions", [1, 2]), 400, "BadRequestError")
    assert_error(*post("/v1/completions", {"model": server.name}), 400, "BadRequestError")
    assert_error(*post("/v1/completions", {"prompt": ""}), 400, "BadRequestError")
    assert_error(*post("/v1/completions", {"prompt": "x", "logprobs": -1}), 400, "BadRequestError")
    assert_error(*post("/v1/completions", {"prompt": "x", "logprobs": 21}), 400, "BadRequestError")
    assert_error(*post("/v1/completions", {"prompt": "x", "prompt_logprobs": "2"}), 400, "BadRequestError")
    assert_error(*post("/v1/completions", {"prompt": "x", "max_tokens": -1}), 400, "BadRequestError")
    # vLLM: max_tokens 0 is only echo without generation; elsewhere SamplingParams refuses it.
    status, out = post("/v1/completions", {"prompt": "x", "prompt_logprobs": 0, "max_tokens": 0})
    assert_error(status, out, 400, "BadRequestError")
    assert "max_tokens must be at least 1" in out["message"]
    status, out = post("/v1/completions", {"model": "nope", "prompt": "x"})
    assert_error(status, out, 404, "NotFoundError")
    assert "`nope`" in out["message"]
    assert_error(*post("/v1/completions", {"prompt": "x" * 5000, "echo": True, "logprobs": 0,
                                           "max_tokens": 0}), 400, "BadRequestError")
    assert server.get("/health")[0] == 200
    status, models = server.get("/v1/models")
    assert status == 200 and [m["id"] for m in models["data"]] == [server.name]


def test_stats(server):
    server.reset()
    assert server.stats() == {"requests": 0, "prompts": 0, "largest_batch": 0}
    completions(server, prompt=PROMPTS[:3], echo=True, logprobs=0, max_tokens=0)
    completions(server, prompt=PROMPTS[0], prompt_logprobs=0, max_tokens=1)
    assert server.stats() == {"requests": 2, "prompts": 4, "largest_batch": 3}
    server.post("/v1/completions", {"model": "nope", "prompt": "x"})
    assert server.stats()["requests"] == 3
    server.reset()
    assert server.stats()["requests"] == 0


def test_values_tell_texts_apart(server):
    """The oracle's values differ between texts by far more than the tests' tolerance, so a
    reward that mixed rows up could not pass them."""
    ctxs = ["What is the capital of France?\nAnswer:", "What is the capital of Peru?\nAnswer:",
            "What is 6 times 7?\nAnswer:"]
    vals = [oracle.mean_prob(oracle.target_logprobs(server.model_dir, c, " Paris")) for c in ctxs]
    assert all(0 < v < 1 for v in vals)
    assert min(abs(a - b) for i, a in enumerate(vals) for b in vals[i + 1:]) > 1e-4
    assert not math.isclose(vals[0], vals[1])


def test_oracle_boundaries(server):
    """Every text the reward's tests score has its target on a token boundary (with and
    without the baseline), the leaking one too; the straddling case has none."""
    for q, reasoning, ref in ROWS:
        for ctx in (context_of(q, reasoning), baseline_of(q)):
            lps = oracle.target_logprobs(server.model_dir, ctx, f" {ref}")
            assert lps and all(x < 0 for x in lps), (ctx, ref)
            # The target's logprobs are the tail of the whole text's.
            _, whole = oracle.token_logprobs(server.model_dir, ctx + f" {ref}")
            assert whole[-len(lps):] == lps
    assert oracle.target_logprobs(server.model_dir, context_of(ROWS[5][0], LEAKY_REASONING),
                                  f" {LONG_REFERENCE}")
    assert oracle.target_start(server.model_dir, *STRADDLE) is None
    # Reductions of a known list.
    lps = [-0.5, -1.5]
    assert abs(oracle.mean_prob(lps) - (0.6065306597 + 0.2231301601) / 2) < 1e-9
    assert oracle.mean_logprob(lps) == -1.0 and oracle.sum_logprob(lps) == -2.0
    assert abs(oracle.exp_mean_logprob(lps) - 0.3678794412) < 1e-9
