"""The core API against the CLI on the same rows: compile, score, score_detailed, explain,
components, errors, the GIL and asyncio."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

import referee

MIXED_ROWS = [
    # referee / openai rows
    {"id": "a", "item": {"solution": "4"}, "sample": {"output_text": "<think>\nx\n</think>\n<answer>\n\\boxed{4}\n</answer>"}},
    {"id": "b", "item": {"solution": "4"}, "model_sample": "\\boxed{5}"},
    # TRL rows, standard and conversational
    {"id": "c", "prompt": "2+2?", "completion": "The answer is \\boxed{4}.", "solution": "4"},
    {"id": "d", "prompt": [{"role": "user", "content": "2+2?"}],
     "completion": [{"role": "assistant", "content": "<think>a</think><answer>\\boxed{4}</answer>"}],
     "solution": "4"},
    # verl row (the spec reads item.solution, which a verl row lacks: an error status)
    {"data_source": "gsm8k", "reward_model": {"ground_truth": "4"}, "response": "\\boxed{4}",
     "extra_info": {"index": 9}},
    # rows that never become samples
    {"nothing": 1},
    {"item": {}, "sample": {"output_text": 3}},
]


def test_compile_accepts_text_dict_path_and_path_string(specs: Path):
    path = specs / "math_format.yaml"
    text = path.read_text()
    as_dict = {"grader": {"type": "weighted_sum", "normalize": "none", "weights": [1.0, 0.5],
                          "inputs": [{"type": "math_equiv", "name": "accuracy", "reference": "{{item.solution}}"},
                                     {"type": "format", "name": "format", "style": "r1"}]}}
    row = [{"prompt": "q", "completion": "<think>\nx\n</think>\n<answer>\n\\boxed{4}\n</answer>", "solution": "4"}]
    for spec in (path, str(path), text, as_dict):
        prog = referee.compile(spec)
        assert prog.component_names == ["accuracy", "format"]
        assert prog.score(row) == [1.5]
    # A string that is not an existing spec file is spec text (here, YAML for a bare string).
    with pytest.raises(referee.SpecError) as e:
        referee.compile(str(specs / "missing.yaml"))
    assert e.value.errors


def test_score_detailed_matches_cli(cli, specs: Path):
    spec = specs / "math_format.yaml"
    prog = referee.compile(spec)
    got = [r.to_dict() for r in prog.score_detailed(MIXED_ROWS)]
    want = cli(spec, MIXED_ROWS)
    for g, w in zip(got, want):
        w.pop("line", None)
        if g["status"] == "error":
            # The CLI prefixes a row's message with its line number.
            assert w["message"].endswith(g["message"]), (g, w)
            g.pop("message"), w.pop("message")
        assert g == w
    assert len(got) == len(want) == len(MIXED_ROWS)
    assert [r["status"] for r in got] == ["ok", "ok", "ok", "ok", "error", "error", "error"]
    assert prog.score(MIXED_ROWS) == [w["reward"] for w in want]
    assert [g["reward"] for g in got[:4]] == [1.5, 0.0, 1.0, 1.5]


def test_explain_matches_cli_explain(cli, specs: Path):
    spec = specs / "math_format.yaml"
    prog = referee.compile(spec)
    r = prog.explain(MIXED_ROWS[0])
    (w,) = cli(spec, MIXED_ROWS[:1], "--explain")
    assert r.trace == w["trace"]
    assert r.trace["children"][0]["name"] == "accuracy"
    assert prog.score_detailed(MIXED_ROWS[:1], explain=True)[0].trace == w["trace"]
    assert prog.score_detailed(MIXED_ROWS[:1])[0].trace is None


def test_step_rewards_match_the_cli(cli, specs: Path):
    spec = specs / "steps.yaml"
    prog = referee.compile(spec)
    rows = [{"id": "s", "item": {}, "sample": {"output_text": "1. fine\n2. wrong é"}},
            {"prompt": "q", "completion": "1. all fine"}, {"nothing": 1}]
    got = prog.score_detailed(rows)
    want = cli(spec, rows)
    assert got[0].step_rewards == want[0]["step_rewards"] == [
        {"start": 0, "end": 7, "value": 1.0, "component": "process"},
        {"start": 8, "end": 18, "value": 0.0, "component": "process"},
    ]
    # Char offsets index the Python string itself.
    text = rows[0]["sample"]["output_text"]
    assert text[8:18] == "2. wrong é"
    assert got[1].to_dict()["step_rewards"] == [{"start": 0, "end": 11, "value": 1.0, "component": "process"}]
    assert got[2].step_rewards is None and got[2].status == "error"
    # A spec without step components has none.
    assert referee.compile(specs / "math_format.yaml").score_detailed(rows[:1])[0].step_rewards is None


def byte_tokenizer(path: Path) -> Path:
    """A byte-level BPE ``tokenizer.json`` without merges: token ``i`` is byte ``i`` (GPT-2's
    byte-to-char table), so ids are ``list(text.encode())`` and a multi-byte char spans tokens."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": {chars[b]: b for b in range(256)}, "merges": []},
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_step_rewards_get_token_spans_from_completion_ids(cli, specs: Path, tmp_path: Path):
    tok = byte_tokenizer(tmp_path / "tokenizer.json")
    spec = specs / "steps.yaml"
    text = "1. fine\n2. wrong é"
    rows = [{"id": "s", "sample": {"output_text": text, "completion_ids": list(text.encode())}},
            {"id": "o", "sample": {"output_text": text, "token_offsets": [[i, i + 1] for i in range(len(text))]}},
            {"id": "x", "sample": {"output_text": "1. other", "completion_ids": list(text.encode())}}]
    got = referee.compile(spec, tokenizer=tok).score_detailed(rows)
    assert got[0].token_error is None
    # "é" is two bytes, so two tokens: the second step ends on token 18 (its second byte).
    assert got[0].step_rewards == [
        {"start": 0, "end": 7, "value": 1.0, "component": "process", "token_start": 0, "token_end": 7},
        {"start": 8, "end": 18, "value": 0.0, "component": "process", "token_start": 8, "token_end": 19},
    ]
    assert [(st["token_start"], st["token_end"]) for st in got[1].step_rewards] == [(0, 7), (8, 18)]
    assert got[2].reward == 1.0 and "different text" in got[2].token_error
    assert got[2].to_dict()["token_error"] == got[2].token_error
    assert got[0].to_dict() == cli(spec, rows[:1], "--tokenizer", str(tok))[0]
    # Without the tokenizer the ids cannot be placed, and the result says so.
    assert "no tokenizer" in referee.compile(spec).score_detailed(rows[:1])[0].token_error
    with pytest.raises(ValueError, match="cannot load tokenizer"):
        referee.compile(spec, tokenizer=tmp_path / "missing.json")


def test_mapping_options_reach_the_core(cli, specs: Path):
    prog = referee.compile(specs / "verl_math.yaml")
    rows = [{"data_source": "x", "reward_model": {"ground_truth": "72"}, "gen": {"text": "\\boxed{72}"},
             "extra_info": {"index": 5}, "uid": "g1"}]
    (r,) = prog.score_detailed(rows, format="verl", response_field="gen.text")
    (w,) = cli(specs / "verl_math.yaml", rows, "--format", "verl", "--response-field", "gen.text")
    assert (r.id, r.reward, r.components) == (w["id"], w["reward"], w["components"]) == (5, 1.0, {"correct": 1.0, "boxed": 1.0})
    with pytest.raises(ValueError, match="unknown input format"):
        prog.score(rows, format="csv")


def test_group_stage_advantages_match_cli(cli, specs: Path):
    spec = specs / "grouped.yaml"
    rows = [{"group": g, "item": {"answer": "4"}, "sample": {"output_text": f"\\boxed{{{a}}}"}}
            for g, a in [("q1", 4), ("q1", 5), ("q2", 4), ("q1", 4), ("q2", 4)]]
    got = referee.compile(spec).score_detailed(rows)
    want = cli(spec, rows)
    assert [r.advantage for r in got] == [w["advantage"] for w in want]
    assert got[0].advantage > 0 > got[1].advantage
    assert [r.group_flag for r in got] == [w.get("group_flag") for w in want]


def test_components_and_weights(specs: Path):
    prog = referee.compile(specs / "math_format.yaml")
    assert prog.component_names == ["accuracy", "format"]
    assert prog.components == [referee.Component("accuracy", 1.0), referee.Component("format", 0.5)]
    prog = referee.compile(specs / "verl_math.yaml")
    assert [c.name for c in prog.components] == ["correct", "boxed"]
    assert [round(c.weight, 12) for c in prog.components] == [0.9, 0.1]
    one = referee.compile(specs / "label.yaml")
    assert one.components == [referee.Component("correct", 1.0)]
    assert one.parts()[0][2] is one


def test_spec_error_carries_every_error_with_its_path():
    bad = {"type": "weighted_sum", "normalize": "average", "weights": [1, 2],
           "inputs": [{"type": "math_equiv", "gold": "1"}, {"type": "no_such_grader"}]}
    with pytest.raises(referee.SpecError) as e:
        referee.compile(bad)
    paths = [x["path"] for x in e.value.errors]
    assert "/normalize" in paths and "/inputs/1/type" in paths
    assert any(p.startswith("/inputs/0") for p in paths)
    assert all(set(x) == {"path", "node_type", "message"} for x in e.value.errors)
    assert isinstance(e.value, ValueError)
    assert "/normalize" in str(e.value)
    with pytest.raises(referee.SpecError) as e:
        referee.compile("type: [unclosed")
    assert "neither valid JSON nor valid YAML" in e.value.errors[0]["message"]
    with pytest.raises(TypeError):
        referee.compile(42)  # type: ignore[arg-type]


def test_failed_samples_are_statuses_not_exceptions(specs: Path):
    prog = referee.compile(specs / "math_format.yaml")
    rows = [{"prompt": "q", "completion": "\\boxed{4}", "solution": "\\frac{"},  # gold unparseable
            {"prompt": "q", "completion": "\\boxed{4}"},  # no solution column
            {"completion": 12}, "not a dict", {"item": {}, "sample": {"output_text": "x", "bad": {1, 2}}}]
    res = prog.score_detailed(rows)
    assert [r.status for r in res] == ["error"] * 5
    assert all(r.reward is None and r.reason for r in res)
    assert res[2].reason == "invalid_row" and res[3].reason == "invalid_row"
    assert prog.score(rows) == [None] * 5


def test_gil_is_released_while_scoring(specs: Path):
    prog = referee.compile(specs / "math_format.yaml")
    rows = [{"prompt": "q", "completion": f"<think>\nx\n</think>\n<answer>\n\\boxed{{\\frac{{{i}}}{{7}}}}\n</answer>",
             "solution": f"\\frac{{{2 * i}}}{{14}}"} for i in range(1, 4001)]
    ticks = 0
    stop = threading.Event()

    def spin():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    # Scoring alone, for the duration.
    t0 = time.perf_counter()
    prog.score(rows)
    alone = time.perf_counter() - t0
    th = threading.Thread(target=spin)
    th.start()
    time.sleep(0.01)
    before = ticks
    t0 = time.perf_counter()
    out = prog.score(rows)
    during = ticks - before
    stop.set()
    th.join()
    assert out == [1.5] * len(rows)
    # With the GIL held for the whole call the spinning thread would not run at all; released,
    # it keeps counting (at least a few thousand iterations in the call's time).
    assert alone > 0.005
    assert during > 1000, (during, alone)


def test_score_async_does_not_block_the_loop(specs: Path):
    prog = referee.compile(specs / "math_format.yaml")
    rows = [{"prompt": "q", "completion": f"\\boxed{{{i}}}", "solution": str(i)} for i in range(4000)]

    async def main():
        ticks = 0
        done = False

        async def ticker():
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.ensure_future(ticker())
        rewards, detailed = await asyncio.gather(prog.score_async(rows), prog.score_detailed_async(rows[:10]))
        done = True
        await t
        return rewards, detailed, ticks

    rewards, detailed, ticks = asyncio.run(main())
    assert rewards == [1.0] * len(rows)
    assert [r.reward for r in detailed] == [1.0] * 10
    assert ticks > 10


def test_many_threads_share_one_program(specs: Path):
    prog = referee.compile(specs / "math_format.yaml")
    rows = [{"prompt": "q", "completion": f"\\boxed{{{i % 7}}}", "solution": str(i % 5)} for i in range(500)]
    want = prog.score(rows)
    results = [None] * 8

    def work(k):
        results[k] = prog.score(rows)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(r == want for r in results)


def test_the_wheel_ships_types():
    from importlib import resources

    files = {p.name for p in resources.files("referee").iterdir()}
    assert {"py.typed", "_referee.pyi", "trl.py", "verl.py", "openrlhf.py", "verifiers.py", "slime.py",
            "ray.py"} <= files
    assert referee.__version__ == "0.1.0"
