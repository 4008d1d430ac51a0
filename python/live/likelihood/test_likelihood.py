"""Referee's `likelihood` reward against the real server (server.py): every reduction, with and
without a baseline, equals the oracle (the model run directly, the target found by the
tokenizer's own offsets) for both tokenizers and both ways of asking (`echo`,
`prompt_logprobs`), through the CLI and the Python package alike; a target that shares a token
with its context, a reasoning that restates the reference, the trainer's own logprobs and a
server that dies mid-run each come out as the spec says, never as a number that was not scored.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import oracle
from cases import LEAKY_REASONING, LONG_REFERENCE, ROWS, STRADDLE, baseline_of, context_of

ROOT = Path(__file__).resolve().parents[3]
REDUCTIONS = ("mean_prob", "mean_logprob", "sum_logprob", "exp_mean_logprob")
CONTEXT = "{{item.question}}\n{{sample.reasoning}}\nAnswer:"
TARGET = " {{item.reference}}"
BASELINE = "{{item.question}}\nAnswer:"

def exe() -> str:
    return os.environ.get("REFEREE_BIN", str(ROOT / "target" / "debug" / "referee"))


def row(i, question, reasoning, reference, **sample) -> dict:
    return {
        "id": f"r{i}",
        "item": {"question": question, "reference": reference},
        "sample": {"output_text": f"<think>{reasoning}</think> The final answer.", **sample},
    }


def spec(server, api="echo", reduce="mean_prob", *, baseline=None, leak=None,
         context=CONTEXT, target=TARGET, max_batch=8) -> dict:
    grader = {
        "type": "likelihood", "name": "lik", "judge": "policy", "api": api,
        "context": context, "target": target, "reduce": reduce,
    }
    if baseline is not None:
        grader["baseline"] = baseline
    if leak is not None:
        grader["leak"] = leak
    elif reduce not in ("mean_prob", "exp_mean_logprob") or baseline is not None:
        # Unbounded rewards have no natural floor: the spec must say what a leak scores.
        grader["leak"] = {"reward": -100.0}
    return {
        "judges": {"policy": {"base_url": server.base_url, "model": server.name,
                              "max_batch": max_batch}},
        "judge_cache": {"backend": "off"},
        "grader": grader,
    }


def run_cli(tmp_path: Path, spec_value: dict, rows: list[dict], *extra) -> list[dict]:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(json.dumps(spec_value, ensure_ascii=False))  # JSON is YAML
    rows_file = tmp_path / "rows.jsonl"
    rows_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = subprocess.run([exe(), "score", str(spec_file), str(rows_file), "-q", *extra],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def run_python(spec_value: dict, rows: list[dict]) -> list[dict]:
    import referee

    program = referee.compile(spec_value)
    return [r.to_dict() for r in program.score_detailed(rows)]


@pytest.fixture(params=["cli", "python"])
def score(request, tmp_path):
    """``score(spec, rows) -> [result dicts]`` through the CLI or the Python package."""
    if request.param == "cli":
        return lambda s, rows: run_cli(tmp_path, s, rows)
    return run_python


def by_id(results: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in results}


def assert_ok(result: dict, want: float):
    assert result["status"] == "ok", result
    assert abs(result["components"]["lik"] - want) < 1e-5, (result, want)
    assert abs(result["reward"] - want) < 1e-5, (result, want)


@pytest.mark.parametrize("api", ["echo", "prompt_logprobs"])
def test_reductions_equal_the_oracle(server, score, api):
    rows = [row(i, *r) for i, r in enumerate(ROWS)]
    for reduction in REDUCTIONS:
        results = by_id(score(spec(server, api, reduction), rows))
        for i, (q, reasoning, ref) in enumerate(ROWS):
            want = oracle.value(server.model_dir, context_of(q, reasoning), f" {ref}", reduction)
            assert_ok(results[f"r{i}"], want)


@pytest.mark.parametrize("api", ["echo", "prompt_logprobs"])
def test_baseline_difference(server, score, api):
    rows = [row(i, *r) for i, r in enumerate(ROWS)]
    for reduction in ("mean_prob", "sum_logprob"):
        results = by_id(score(spec(server, api, reduction, baseline=BASELINE), rows))
        for i, (q, reasoning, ref) in enumerate(ROWS):
            want = oracle.value(server.model_dir, context_of(q, reasoning), f" {ref}", reduction,
                                baseline=baseline_of(q))
            assert_ok(results[f"r{i}"], want)


@pytest.mark.parametrize("api", ["echo", "prompt_logprobs"])
def test_batch_with_shared_contexts(server, score, api):
    """Twelve rows, several with the same context (and some the same context and target):
    each gets its own value, and no request carries more than `max_batch` prompts."""
    base = ROWS[:4]
    data = []
    for i in range(12):
        q, reasoning, _ = base[i % 4]
        ref = ["Paris", "Lima", "42"][i % 3]  # contexts repeat every 4 rows, targets every 3
        data.append((q, reasoning, ref))
    rows = [row(i, *r) for i, r in enumerate(data)]
    server.reset()
    results = by_id(score(spec(server, api, "mean_logprob"), rows))
    for i, (q, reasoning, ref) in enumerate(data):
        assert_ok(results[f"r{i}"], oracle.value(server.model_dir, context_of(q, reasoning),
                                                 f" {ref}", "mean_logprob"))
    stats = server.stats()
    assert stats["requests"] >= 2 and 1 <= stats["largest_batch"] <= 8


@pytest.mark.parametrize("api", ["echo", "prompt_logprobs"])
def test_no_boundary_is_an_error(server, score, api):
    """The context ends mid-word: the tokenizer merges "Par" + "is" into one token, so the
    target has no tokens of its own. An error with a reason, never a number."""
    q, ref = STRADDLE
    assert oracle.target_logprobs(server.model_dir, q, ref) is None
    ok_ref = ROWS[0]
    rows = [row(0, q, "", ref), row(1, ok_ref[0] + "\nAnswer:", "", " " + ok_ref[2])]
    s = spec(server, api, "mean_prob", context="{{item.question}}", target="{{item.reference}}")
    results = by_id(score(s, rows))
    bad = results["r0"]
    assert bad["status"] == "error" and bad["reward"] is None, bad
    assert bad["reason"].startswith("likelihood_") and bad["message"], bad
    assert bad["components"].get("lik") is None
    assert_ok(results["r1"], oracle.value(server.model_dir, ok_ref[0] + "\nAnswer:",
                                          " " + ok_ref[2], "mean_prob"))


@pytest.mark.parametrize("api", ["echo", "prompt_logprobs"])
def test_reference_leak(server, score, api):
    q = ROWS[5][0]
    leaky = row(0, q, LEAKY_REASONING, LONG_REFERENCE)
    clean = row(1, q, "Recall biology.", LONG_REFERENCE)
    want_leaky = oracle.value(server.model_dir, context_of(q, LEAKY_REASONING),
                              f" {LONG_REFERENCE}", "mean_prob")
    want_clean = oracle.value(server.model_dir, context_of(q, "Recall biology."),
                              f" {LONG_REFERENCE}", "mean_prob")

    results = by_id(score(spec(server, api), [leaky, clean]))
    assert results["r0"]["reward"] == 0 and results["r0"]["status"] != "error", results["r0"]
    assert_ok(results["r1"], want_clean)

    results = by_id(score(spec(server, api, leak={"action": "error"}), [leaky, clean]))
    assert results["r0"]["status"] == "error" and results["r0"]["reason"] == "reference_leak"
    assert results["r0"]["reward"] is None
    assert_ok(results["r1"], want_clean)

    results = by_id(score(spec(server, api, leak={"action": "allow"}), [leaky]))
    assert_ok(results["r0"], want_leaky)


def test_trainer_logprobs_make_no_request(server, score):
    given = [[-0.5, -1.25, -2.0], [-0.1], [-3.0, -0.25]]
    rows = [row(i, *ROWS[i], target_logprobs=lps) for i, lps in enumerate(given)]
    for reduction in REDUCTIONS:
        server.reset()
        results = by_id(score(spec(server, "echo", reduction), rows))
        for i, lps in enumerate(given):
            assert_ok(results[f"r{i}"], oracle.reduce(reduction, lps))
        assert server.stats()["requests"] == 0


def test_server_killed_mid_run(launch, tmp_path):
    """The server dies while a request is in flight: the rows it had not answered are errors
    with a `judge_*` reason; no row gets a 0 (or any number) it was not scored."""
    srv = launch("bpe", delay_ms=1500, name="dying")
    rows = [row(i, *ROWS[i % len(ROWS)]) for i in range(6)]
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(json.dumps(spec(srv, "echo", "mean_prob", max_batch=2), ensure_ascii=False))
    rows_file = tmp_path / "rows.jsonl"
    rows_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    proc = subprocess.Popen([exe(), "score", str(spec_file), str(rows_file), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while srv.stats()["requests"] == 0:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "no request reached the server"
            time.sleep(0.05)
        srv.stop()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    results = [json.loads(line) for line in out.splitlines()]
    assert len(results) == len(rows)
    errors = [r for r in results if r["status"] == "error"]
    assert errors, results
    for r in results:
        if r["status"] == "error":
            assert r["reason"].startswith("judge_") and r["reward"] is None, r
        else:
            i = int(r["id"][1:])
            q, reasoning, ref = ROWS[i % len(ROWS)]
            assert_ok(r, oracle.value(srv.model_dir, context_of(q, reasoning), f" {ref}", "mean_prob"))
