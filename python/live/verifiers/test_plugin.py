"""referee.verifiers inside verifiers 0.4 (v1 Task API): verifiers' own plugin loader
(TaskConfig.rewards -> loaders.load_plugged_fn), its Task.score (argument injection by name,
the Mapping handling, the weights, the error boundary), on traces built by its own graph code
(graph.prepare_turn(...).commit(Response), as its interception server builds them) from its
pydantic messages. Every value is compared with `referee score` on the same rows as plain dicts."""

from __future__ import annotations

import asyncio
import inspect
import time
from pathlib import Path

import pytest
import verifiers
import verifiers.v1 as vf
from verifiers.v1 import graph
from verifiers.v1.types import AssistantMessage, Response, ToolCall, ToolMessage, UserMessage

import referee
import referee.verifiers as rvf

HERE = Path(__file__).resolve().parent
SPEC = HERE / "spec.yaml"


class MathTask(vf.TaskData):
    """A taskset's row: the fields a spec reads as {{item.answer}} / {{item.info.calls}}."""

    answer: str | None = None
    info: dict = {}


WEATHER = '{"city": "Paris", "unit": "celsius"}'
CALL = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}

# (answer, expected calls, turns). A turn is (input messages, the assistant's reply); each is
# given once as verifiers' pydantic messages and once as the plain OpenAI dicts a JSONL holds.
CASES = {
    # Correct, reasoning only in reasoning_content: the R1 format sees its <think> section.
    "reasoning": ("4", [], [(
        [UserMessage(content="What is 2+2?")],
        AssistantMessage(content="<answer>\\boxed{4}</answer>", reasoning_content="2+2 is 4."),
    )]),
    # Wrong and unformatted.
    "wrong": ("4", [], [(
        [UserMessage(content="What is 2+2?")],
        AssistantMessage(content="The answer is \\boxed{5}."),
    )]),
    # The graded message is a tool call with no content (content None): its tool_calls are the
    # output tools, flat verifiers ToolCalls with arguments as JSON text.
    "tool_only": ("Paris", [CALL], [(
        [UserMessage(content="Weather in Paris?")],
        AssistantMessage(
            content=None, reasoning_content="I should call the tool.",
            tool_calls=[ToolCall(id="c1", name="get_weather", arguments=WEATHER)],
        ),
    )]),
    # Two turns: a tool call, its result, then the final answer (the last assistant turn is
    # graded; it made no call, and none is expected of it).
    "multi_turn": ("18", [], [
        (
            [UserMessage(content="Temperature in Paris, doubled?")],
            AssistantMessage(content=None, tool_calls=[
                ToolCall(id="c1", name="get_weather", arguments=WEATHER)]),
        ),
        (
            [ToolMessage(tool_call_id="c1", name="get_weather", content="9")],
            AssistantMessage(content="<answer>\\boxed{18}</answer>",
                             reasoning_content="9 doubled is 18."),
        ),
    ]),
    # No answer in the task: nobody can score it.
    "unscorable": (None, [], [(
        [UserMessage(content="What is 2+2?")],
        AssistantMessage(content="<answer>\\boxed{4}</answer>", reasoning_content="easy"),
    )]),
}


def task_data(answer, calls, turns) -> MathTask:
    return MathTask(prompt=list(turns[0][0]), answer=answer, info={"calls": calls})


def build_trace(data: vf.TaskData, turns) -> vf.Trace:
    """A trace as verifiers' interception server builds it, turn by turn."""
    trace = vf.Trace(task=vf.TraceTask(type="MathTask", data=data),
                     agent=vf.AgentInfo(config=vf.AgentConfig()))
    prompt: list = []
    for new, reply in turns:
        prompt = prompt + list(new)
        finish = "tool_calls" if reply.tool_calls else "stop"
        response = Response(id=f"r{len(prompt)}", created=int(time.time()), model="policy",
                            message=reply, finish_reason=finish)
        graph.prepare_turn(trace, prompt).commit(response)
        prompt = prompt + [reply]
    return trace


def plain(message) -> dict:
    """The message as an OpenAI-style dict (nested function calls), written out by hand."""
    if isinstance(message, AssistantMessage):
        d: dict = {"role": "assistant", "content": message.content}
        if message.reasoning_content is not None:
            d["reasoning_content"] = message.reasoning_content
        if message.tool_calls:
            d["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
        return d
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "name": message.name,
                "content": message.content}
    return {"role": message.role, "content": message.content}


def plain_row(answer, calls, turns) -> dict:
    messages = [plain(m) for new, reply in turns for m in [*new, reply]]
    item = {"prompt": [plain(m) for m in turns[0][0]], "answer": answer,
            "info": {"calls": calls}}
    return {"item": item, "sample": {"messages": messages}}


def config(fn: str, **entry) -> vf.TaskConfig:
    """A TaskConfig from the data a TOML/CLI config gives (`[...task.rewards.referee]`)."""
    return vf.TaskConfig.model_validate({"rewards": {"referee": {"fn": fn, **entry}}})


async def score_all(cfg: vf.TaskConfig, cases: dict) -> dict:
    """Task.score on every case at once (verifiers gathers rollouts concurrently)."""
    traces, errors = {}, {}

    async def one(name, case):
        data = task_data(*case)
        trace = build_trace(data, case[2])
        traces[name] = trace
        try:
            await vf.Task(data, cfg).score(trace)
        except vf.TaskError as e:
            errors[name] = e

    await asyncio.gather(*(one(n, c) for n, c in cases.items()))
    return {n: (traces[n], errors.get(n)) for n in cases}


@pytest.fixture
def spec_env(monkeypatch):
    monkeypatch.setenv("REFEREE_SPEC", str(SPEC))


def test_installed_version():
    assert verifiers.__version__ == "0.4.0"
    assert not hasattr(verifiers, "Rubric")  # the legacy API is gone: see test_rubric_removed


def test_module_plugin_matches_cli(cli, spec_env):
    """fn = "referee.verifiers:reward" with $REFEREE_SPEC: per-component contributions,
    the total, the raw components as metrics, and the failed rollout, all as the CLI says."""
    want = dict(zip(CASES, cli(SPEC, [plain_row(*c) for c in CASES.values()])))
    got = asyncio.run(score_all(config("referee.verifiers:reward"), CASES))
    weights = dict(referee.compile(SPEC).components)
    assert weights == {"accuracy": 1.0, "format": 0.5, "tool": 0.25}

    for name, (trace, error) in got.items():
        w = want[name]
        assert trace.metrics["referee_error"] == (1.0 if w["status"] == "error" else 0.0), name
        assert trace.info["referee"]["status"] == w["status"]
        for comp, v in w["components"].items():
            if v is not None:
                assert trace.metrics[f"referee/{comp}"] == v, (name, comp)
        if w["reward"] is None:
            continue
        assert error is None and set(trace.rewards) == set(weights), name
        for comp, r in trace.rewards.items():
            assert r.weight == 1.0
            assert r.score == weights[comp] * w["components"][comp], (name, comp)
        assert trace.reward == pytest.approx(w["reward"], abs=1e-12), name

    # What the rows test: reasoning_content is the <think> section, tool_calls the output tools.
    assert want["reasoning"]["components"] == {"accuracy": 1.0, "format": 1.0, "tool": 1.0}
    assert want["wrong"]["components"] == {"accuracy": 0.0, "format": 0.0, "tool": 1.0}
    assert want["tool_only"]["components"]["tool"] == 1.0
    assert want["multi_turn"]["components"] == {"accuracy": 1.0, "format": 1.0, "tool": 1.0}
    assert got["reasoning"][0].reward == 1.75

    # The unscorable row: a failed rollout (verifiers' TaskError, recorded on the trace by its
    # Rollout), its reward entry None ("scoring didn't run"), never a 0 passed off as a score.
    trace, error = got["unscorable"]
    assert want["unscorable"]["status"] == "error"
    assert want["unscorable"]["reason"] == "missing_field"
    assert error is not None and "missing_field" in str(error)
    assert isinstance(error.__cause__, rvf.UnscoredError)
    assert trace.rewards == {"referee": None}
    assert trace.info["referee"]["reason"] == "missing_field"


def test_file_plugin_normalised_spec_matches_cli(cli, tmp_path):
    """fn = "file.py:name" with make_reward(spec): a `normalize: sum` root (weights w/Σw) with
    an unnamed input; the contributions add up to Referee's reward."""
    spec = HERE / "spec_sum.yaml"
    mod = tmp_path / "my_rewards.py"
    mod.write_text(
        "import referee.verifiers\n"
        f"referee_reward = referee.verifiers.make_reward({str(spec)!r})\n"
    )
    cases = {k: CASES[k] for k in ("reasoning", "wrong", "tool_only", "multi_turn")}
    want = dict(zip(cases, cli(spec, [plain_row(*c) for c in cases.values()])))
    got = asyncio.run(score_all(config(f"{mod}:referee_reward"), cases))
    weights = dict(referee.compile(spec).components)
    assert weights == {"accuracy": 0.5, "format": 0.25, "tool_call": 0.25}
    for name, (trace, error) in got.items():
        assert error is None
        assert set(trace.rewards) == set(weights)
        assert trace.reward == pytest.approx(want[name]["reward"], abs=1e-12), name
        for comp in ("accuracy", "format"):
            assert trace.rewards[comp].score == pytest.approx(
                weights[comp] * want[name]["components"][comp], abs=1e-12)
    # The unnamed input is scored alone: tool_only's call is right, the answer is not.
    assert got["tool_only"][0].rewards["tool_call"].score == 0.25
    assert got["reasoning"][0].reward == pytest.approx(1.0)


def test_on_error_value_in_a_task_method(cli):
    """A spec with `on_error`, plugged as a Task's own @vf.reward method next to another
    reward: the failed row gets the spec's value (verifiers needs a number) with referee_error
    1.0 in the trace's metrics, as the CLI reports status error; the rewards add up."""
    spec = HERE / "spec_on_error.yaml"
    cases = {k: CASES[k] for k in ("reasoning", "unscorable")}
    want = dict(zip(cases, cli(spec, [plain_row(*c) for c in cases.values()])))
    assert [w["status"] for w in want.values()] == ["ok", "error"]
    assert [w["reward"] for w in want.values()] == [1.0, 0.0]
    plugin = rvf.make_reward(spec)

    class Scored(vf.Task[MathTask, vf.State, vf.TaskConfig]):
        @vf.reward
        async def referee(self, task, trace):
            return await plugin(task=task, trace=trace)

        @vf.reward(weight=0.1)
        async def brevity(self, trace):
            return 1.0

    for name, case in cases.items():
        data = task_data(*case)
        trace = build_trace(data, case[2])
        asyncio.run(Scored(data).score(trace))
        assert trace.rewards["correct"].score == want[name]["reward"]
        assert trace.reward == pytest.approx(want[name]["reward"] + 0.1)
        assert trace.metrics["referee_error"] == (1.0 if want[name]["status"] == "error" else 0.0)


def test_plugin_shape_for_the_loader(spec_env):
    """What verifiers' loader and invoke() see: an async function whose only parameters are
    `task` and `trace` (no `runtime`, so it also runs when scoring offline)."""
    from verifiers.v1.utils.loaders import load_plugged_fn

    fn = load_plugged_fn("referee", config("referee.verifiers:reward").rewards["referee"], "reward")
    assert fn.__name__ == "referee" and fn._vf_weight == 1.0
    assert list(inspect.signature(fn).parameters) == ["task", "trace"]
    assert inspect.iscoroutinefunction(rvf.reward)
    assert inspect.iscoroutinefunction(rvf.make_reward(SPEC))


def test_bad_plugin_config_fails_the_rollout_not_the_run(monkeypatch):
    """No $REFEREE_SPEC: every rollout fails loudly with the reason; nothing crashes."""
    monkeypatch.delenv("REFEREE_SPEC", raising=False)
    got = asyncio.run(score_all(config("referee.verifiers:reward"), {"x": CASES["reasoning"]}))
    trace, error = got["x"]
    assert error is not None and "REFEREE_SPEC" in str(error)
    assert trace.rewards == {"referee": None}


def test_rubric_removed():
    with pytest.raises(RuntimeError, match="referee.verifiers:reward"):
        rvf.rubric(SPEC)
