"""Values as trainers pass them: numpy scalars and arrays, pydantic messages, dataclasses, other
mappings and sequences convert at the boundary (DESIGN.md §8.8), and chat messages in the
trainers' shapes (reasoning fields, tool calls, no content) are read as the CLI reads the same
rows written as JSON."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, namedtuple
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pydantic
import pytest

import referee

TOOLS = Path(__file__).resolve().parent / "specs" / "tool_format.yaml"


def test_numpy_values_in_extra_info_score_like_plain_ones(cli, specs: Path):
    spec = specs / "verl_math.yaml"
    prog = referee.compile(spec)
    plain = {"data_source": "openai/gsm8k", "response": "\\boxed{72}",
             "reward_model": {"ground_truth": "72"},
             "extra_info": {"index": 3, "num_turns": 2, "split": "train",
                            "tools_kwargs": {"calc": {"create_kwargs": {"k": [1, 2]}}},
                            "scores": [0.5, 1.0], "flag": True}}
    numpy_row = {"data_source": np.str_("openai/gsm8k"), "response": "\\boxed{72}",
                 "reward_model": {"ground_truth": np.array("72")},
                 "extra_info": {"index": np.int64(3), "num_turns": np.int32(2),
                                "split": "train",
                                "tools_kwargs": {"calc": {"create_kwargs": {"k": np.array([1, 2])}}},
                                "scores": np.array([0.5, 1.0], dtype=np.float32), "flag": np.bool_(True)}}
    (want,) = cli(spec, [plain], "--format", "verl")
    got = prog.score_detailed([numpy_row], format="verl")[0]
    assert (got.status, got.reward, got.id) == ("ok", 1.0, 3) == (want["status"], want["reward"], want["id"])
    assert dict(got.components) == want["components"]


def test_other_python_values_convert_and_never_raise():
    Point = namedtuple("Point", "x y")

    @dataclasses.dataclass
    class Meta:
        tags: tuple
        weight: float

    class Opaque:
        def __str__(self):
            return "opaque!"

    row = {"item": {"answer": "4", "nan": float("nan"), "inf": np.float64("inf"),
                    "point": Point(1, 2), "meta": Meta(("a", "b"), 0.5), "set": {3},
                    "bytes": b"caf\xc3\xa9 \xff", "proxy": MappingProxyType({"k": np.int8(1)}),
                    "ordered": OrderedDict(a=1), 7: "int key", np.int64(8): "numpy key",
                    "opaque": Opaque(), "big": 2**80, "matrix": np.eye(2)},
           "sample": {"output_text": "\\boxed{4}"}}
    prog = referee.compile({"type": "string_check", "input": "{{item.meta}} {{item.point}} "
                            "{{item.bytes}} {{item.opaque}} {{item.7}} {{item.8}}",
                            "reference": "x", "operation": "ne"})
    r = prog.explain(row)
    assert r.status == "ok", r
    # A dataclass and a named tuple as objects, bytes as text, an opaque object as its str(),
    # an int and a numpy int key as their digits.
    want = '{"tags":["a","b"],"weight":0.5} {"x":1,"y":2} caf\u00e9 \ufffd opaque! int key numpy key'
    assert want in r.trace["note"], r.trace


class ToolCall(pydantic.BaseModel):
    id: str
    type: str = "function"
    name: str
    arguments: str


class Message(pydantic.BaseModel):
    role: str
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None


def test_pydantic_messages_read_like_dicts(cli):
    msgs = [Message(role="user", content="Weather in Paris?"),
            Message(role="assistant", reasoning_content="I should call the tool.",
                    tool_calls=[ToolCall(id="c1", name="get_weather",
                                         arguments='{"city": "Paris"}')])]
    gold = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    as_dicts = [m.model_dump() for m in msgs]
    prog = referee.compile(TOOLS)
    want = cli_rows(cli, [{"item": {"ground_truth": gold}, "sample": {"messages": as_dicts}}])
    got = prog.score_detailed([{"item": {"ground_truth": gold}, "sample": {"messages": msgs}}])
    assert [(r.status, r.reward, dict(r.components)) for r in got] == want
    assert got[0].components["call"] == 1.0


def test_trl_parsed_completions(cli):
    """TRL with a response-parsing tokenizer: `thinking` beside `content`, a tool-call-only
    message without `content`."""
    rows = [
        {"prompt": [{"role": "user", "content": "2+2?"}], "ground_truth": [],
         "completion": [{"role": "assistant", "thinking": "2 and 2 make 4",
                         "content": "<answer>4</answer>"}]},
        {"prompt": [{"role": "user", "content": "Weather?"}],
         "ground_truth": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
         "completion": [{"role": "assistant", "tool_calls": [
             {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}]},
    ]
    prog = referee.compile(TOOLS)
    got = prog.score_detailed(rows, format="trl")
    assert [(r.status, r.reward, dict(r.components)) for r in got] == cli_rows(cli, rows, "--format", "trl")
    assert dict(got[0].components) == {"call": 1.0, "format": 1.0}
    assert got[1].components["call"] == 1.0


def test_openrlhf_answer_matches_get_reward_shape():
    prog = referee.compile("{type: string_check, name: exact, input: '{{sample.output_text}}', "
                           "reference: '{{item.label}}', operation: eq}")
    prompt = "<|im_start|>user\nWhat is 2+2? Answer with the number only.<|im_end|>\n<|im_start|>assistant\n"
    ans = prog.openrlhf_answer([
        {"query": prompt + "4", "prompt": prompt, "label": "4"},
        {"query": prompt[30:] + "4", "prompt": prompt, "label": "4"},
        {"query": "4", "prompt": prompt, "label": "4"},
    ])
    assert ans == {"rewards": [1.0, 1.0, 0.0], "scores": [1.0, 1.0, 0.0],
                   "extra_logs": {"exact": [1.0, 1.0, 0.0], "referee_error": [0.0, 0.0, 1.0]}}


def cli_rows(cli, rows, *args):
    return [(w["status"], w["reward"], w["components"]) for w in cli(TOOLS, rows, *args)]
