"""Referee's reward functions in a real TRL GRPOTrainer with ``environment_factory`` (2 steps on
CPU, tiny random Qwen2): TRL parses the fixed completions' tool calls (Qwen3 response template),
runs them as the environments' tool methods, appends the results and has the model write the
turn after each one, then calls the reward functions with the multi-turn completions and
``environments=``. Three environments, routed by the dataset's ``environment`` column: the final
state as a ``referee_state`` property, as a ``state`` attribute (a dataclass), and none at all.
What TRL logs must equal ``referee score`` on Referee rows written here from what TRL passed
(the completions, the environments' bookings), and the scripted rollouts must score what the
state says they did."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import referee.trl

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "trl-env"
_spec = importlib.util.spec_from_file_location("calendar_env", EXAMPLE / "calendar_env.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)  # the example's environment: Slots (tools), Calendar (+ state)

CAL, DIARY, OPAQUE = (f"Book a meeting on tuesday at 10:00 in the {w}." for w in
                      ("calendar", "diary", "planner"))
ENVIRONMENT = {CAL: "calendar", DIARY: "diary", OPAQUE: "opaque"}
NAMES = ["booked", "confirmed"]
EXPECTED = {"bookings": [{"day": "tuesday", "time": "10:00"}]}
CONFIRMATION = "booked tuesday 10:00"


def book(day: str, time: str) -> str:
    args = json.dumps({"name": "book", "arguments": {"day": day, "time": time}})
    return f"<tool_call>\n{args}\n</tool_call>"


# Each prompt's rollouts: books the slot; books another slot first (the last confirmation is
# right, the state is not); a slot that does not exist (the tool raises; TRL writes the error
# as the result); claims the booking without calling anything.
ROLLOUTS = [
    f"<think>\nI will book it.\n</think>\n\n{book('tuesday', '10:00')}",
    f"{book('tuesday', '11:00')}\n{book('tuesday', '10:00')}",
    book("tuesday", "25:00"),
    "<think>\nSaying so is enough.\n</think>\n\nYour meeting on tuesday at 10:00 is booked.",
]
# (booked, confirmed) of each rollout where the environment has a state.
SCRIPTED = [(1.0, 1.0), (0.0, 1.0), (0.0, 0.0), (0.0, 0.0)]
COMPLETIONS = {p: ROLLOUTS for p in ENVIRONMENT}


@dataclass
class Booked:
    bookings: list = field(default_factory=list)


class Diary(example.Slots):
    """Its state is a ``state`` attribute, a dataclass the core converts."""

    def reset(self, **row) -> None:
        super().reset(**row)
        self.state = Booked(self._bookings)


class Opaque(example.Slots):
    """Exposes no state: a spec that reads it cannot score these rollouts."""


def snapshot(env):
    """The bookings an environment holds, read here (not through the adapter's protocol)."""
    return None if isinstance(env, Opaque) else {"bookings": [dict(b) for b in env._bookings]}


FACTORY = {"calendar": example.Calendar, "diary": Diary, "opaque": Opaque}


def rows() -> list[dict]:
    return [{"prompt": [{"role": "user", "content": p}], "environment": e,
             "expected_state": EXPECTED, "confirmation": CONFIRMATION}
            for p, e in ENVIRONMENT.items()]


def cli_of_step(live, cli, spec, step) -> list[dict]:
    """``referee score`` on Referee rows built from what TRL passed: the item is the dataset
    row, the sample the multi-turn completion and the environment's bookings."""
    data = []
    for p, c, env in zip(step["prompts"], step["completions"], step["environments"]):
        state = snapshot(env)
        data.append({
            "item": {"prompt": p, "environment": ENVIRONMENT[live.prompt_key(p)],
                     "expected_state": EXPECTED, "confirmation": CONFIRMATION},
            "sample": {"messages": c, **({"state": state} if state is not None else {})},
        })
    return cli(spec, data, "--format", "referee")


def test_environment_factory(live, cli, tmp_path):
    spec = EXAMPLE / "spec.yaml"
    funcs = referee.trl.reward_funcs(spec)
    weights = referee.trl.reward_weights(spec)
    assert [f.__name__ for f in funcs] == NAMES
    steps = live.train(tmp_path, rows(), funcs, weights, parse=True, batch=12, generations=4,
                       completions=COMPLETIONS, environment_factory=FACTORY,
                       # Room for both results of the two-call rollout: TRL drops tool results
                       # past the completion budget (the calls' side effects stay in the state).
                       max_completion_length=192)
    seen = set()
    for step in steps:
        want = cli_of_step(live, cli, spec, step)
        for name in NAMES:
            exp = [None if w["reward"] is None else w["components"][name] for w in want]
            assert live.same(step["rewards"][name], exp), (name, step["rewards"][name], exp)
            assert math.isclose(step["logs"][f"rewards/{name}/mean"], live.nanmean(exp),
                                abs_tol=1e-6)
        assert math.isclose(step["logs"]["reward"], live.nanmean([w["reward"] for w in want]),
                            abs_tol=1e-6)
        for p, c, env, w, status, booked, confirmed in zip(
                step["prompts"], step["completions"], step["environments"], want,
                step["extra"]["booked/status"], step["rewards"]["booked"],
                step["rewards"]["confirmed"]):
            key = live.prompt_key(p)
            assert type(env).__name__.lower() == ENVIRONMENT[key]
            k = next(i for i, text in enumerate(ROLLOUTS)
                     if c[0].get("reasoning_content", "") in text and _calls(c[0]) == _calls_of(text))
            seen.add((ENVIRONMENT[key], k))
            if ENVIRONMENT[key] == "opaque":
                # No state: not scored by any function (NaN in TRL), never a 0.
                assert w["status"] == "error" and w["reason"] == "missing_field"
                assert status == "missing_field"
                assert math.isnan(booked) and math.isnan(confirmed)
                continue
            assert (booked, confirmed) == SCRIPTED[k], (key, k, c, snapshot(env))
            assert status == "ok"
            if k < 3:  # TRL ran the calls: tool turns follow the call, the model's turn after
                tools = [m for m in c if m["role"] == "tool"]
                assert [m["name"] for m in tools] == ["book"] * len(_calls_of(ROLLOUTS[k]))
                assert c[len(tools) + 1]["role"] == "assistant"
            if k == 2:
                assert "no slot at 25:00" in tools[0]["content"]
    # Every scripted rollout ran in every environment (each step has the whole dataset).
    assert seen == {(e, k) for e in FACTORY for k in range(len(ROLLOUTS))}


def _calls(msg: dict) -> list:
    return [(t["function"]["name"], t["function"]["arguments"]) for t in msg.get("tool_calls") or []]


def _calls_of(text: str) -> list:
    out = []
    for part in text.split("<tool_call>\n")[1:]:
        call = json.loads(part.split("\n</tool_call>")[0])
        out.append((call["name"], call["arguments"]))
    return out
