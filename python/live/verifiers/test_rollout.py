"""Real verifiers 0.4 evaluations with Referee as the reward, against a policy served on
127.0.0.1 from Python's stdlib with fixed completions: `vf-eval @ eval.toml` (the taskset
python/live/verifiers/referee_vf_tasks, the `bash` harness's chat program in the `subprocess`
runtime, verifiers' interception server), and the multi-turn booking agent of
examples/verifiers-booking (its calendar MCP tool server writes the rollout's typed state, which
verifiers syncs to `trace.state`; the `null` harness). verifiers builds the traces, calls the
plugin through its loader, and writes traces.jsonl; each trace's rewards are compared with
`referee score` on the trace's messages as plain dicts (and, for the agent, the final state).

The bash harness's chat program is a PEP 723 script that verifiers installs with uv (pinned in
requirements.txt) from PyPI on first use, resolved as of UV_EXCLUDE_NEWER so the run is
reproducible; later runs reuse uv's cache under ~/.cache/referee/uv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import verifiers.v1 as vf

import referee

HERE = Path(__file__).resolve().parent
SPEC = HERE / "spec.yaml"
BOOKING = HERE.parents[2] / "examples" / "verifiers-booking"

TASKS = [
    {"prompt": "What is 2+2?", "answer": "4", "info": {"calls": []}},
    {"prompt": "Temperature in Paris, doubled?", "answer": "18", "info": {"calls": []}},
    {"prompt": "What is 3+3?", "answer": "6", "info": {"calls": []}},
    {"prompt": "Nobody wrote down the answer: what is 1+1?", "info": {"calls": []}},
]


def call(*calls: tuple[str, dict]) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"index": i, "id": f"call_{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)]}


def slot(time: str, day: str = "tuesday") -> dict:
    return {"day": day, "time": time}


# The booking agent's tasks and rollouts (first turn, and the turn after the tool results):
# books the slot; books another slot first (the confirmation is right, the state is not);
# claims the booking without a call; moves a booking (a cancel and a book, from a state set up
# by the task); and a task without its expected state (nobody can score it).
BOOK = "calendar_book"
BOOKING_TASKS = [
    ({"prompt": "Book a meeting on tuesday at 10:00.", "expected_state": {"bookings": [slot("10:00")]},
      "info": {"confirmation": "booked tuesday 10:00"}},
     [call((BOOK, slot("10:00"))), {"role": "assistant", "content": "Booked."}]),
    ({"prompt": "Please book tuesday 10:00 for me.", "expected_state": {"bookings": [slot("10:00")]},
      "info": {"confirmation": "booked tuesday 10:00"}},
     [call((BOOK, slot("11:00")), (BOOK, slot("10:00"))), {"role": "assistant", "content": "Done."}]),
    ({"prompt": "Could you book tuesday at 10:00?", "expected_state": {"bookings": [slot("10:00")]},
      "info": {"confirmation": "booked tuesday 10:00"}},
     [{"role": "assistant", "content": "Your meeting on tuesday at 10:00 is booked."}]),
    ({"prompt": "Move my tuesday 09:00 meeting to 11:00.", "initial_state": {"bookings": [slot("09:00")]},
      "expected_state": {"bookings": [slot("11:00")]}, "info": {"confirmation": "booked tuesday 11:00"}},
     [call(("calendar_cancel", slot("09:00")), (BOOK, slot("11:00"))),
      {"role": "assistant", "reasoning_content": "Cancelled, then booked.", "content": "Moved."}]),
    ({"prompt": "Book friday at 09:00.", "info": {"confirmation": "booked friday 09:00"}},
     [call((BOOK, slot("09:00", "friday"))), {"role": "assistant", "content": "Booked."}]),
]
# (booked, confirmed) of the scorable ones.
BOOKING_SCORES = [(1.0, 1.0), (0.0, 1.0), (0.0, 0.0), (1.0, 1.0)]
BOOKING_REPLIES = {t["prompt"]: turns for t, turns in BOOKING_TASKS}


def reply(messages: list) -> dict:
    """The policy's fixed completion for a request (by its question and turn)."""
    question = next(m["content"] for m in messages if m["role"] == "user")
    tool_results = [m for m in messages if m["role"] == "tool"]
    if question in BOOKING_REPLIES:
        turns = BOOKING_REPLIES[question]
        return turns[min(1 if tool_results else 0, len(turns) - 1)]
    if question.startswith("Temperature"):
        if not tool_results:  # turn 1: a real call of the harness's bash tool
            return {"role": "assistant", "content": None, "tool_calls": [{
                "index": 0, "id": "call_1", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": "echo 9"})}}]}
        return {"role": "assistant", "reasoning_content": "The tool says 9; doubled, 18.",
                "content": "<answer>\\boxed{18}</answer>"}
    if question.startswith("What is 3+3"):
        return {"role": "assistant", "content": "It is \\boxed{7}."}
    return {"role": "assistant", "reasoning_content": "Adding them up.",
            "content": "<answer>\\boxed{4}</answer>" if "2+2" in question else "\\boxed{2}"}


class Policy(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions (streamed, as the chat program asks, or not)."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        msg = reply(body["messages"])
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        usage = {"prompt_tokens": 8, "completion_tokens": 8, "total_tokens": 16}
        head = {"id": "cmpl-1", "created": int(time.time()), "model": body.get("model")}
        if not body.get("stream"):
            data = json.dumps({**head, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": msg, "finish_reason": finish}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        chunk = {**head, "object": "chat.completion.chunk"}
        for c in ({**chunk, "choices": [{"index": 0, "delta": msg, "finish_reason": None}]},
                  {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                   "usage": usage}):
            self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def policy_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Policy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def plain(m) -> dict:
    """A verifiers message as the OpenAI-style dict a JSONL row would hold."""
    d = m.model_dump(exclude_none=True)
    if m.role == "assistant" and m.tool_calls:
        d["tool_calls"] = [{"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}}
                           for c in m.tool_calls]
    d.pop("provider_state", None)
    return d


def run_eval(tmp_path: Path, url: str, tasks: list = TASKS, config: Path = HERE / "eval.toml",
             spec: Path = SPEC, path: Path = HERE, args: tuple = ()) -> list:
    """`vf-eval @ config` on `tasks` (given to the taskset as $REFEREE_VF_TASKS, or in `args`
    as `{tasks}`), with `path` on PYTHONPATH; the episodes of traces.jsonl."""
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    bindir = str(Path(sys.executable).parent)  # the venv's uv, for the chat program
    cache = Path(os.environ.get("REFEREE_CACHE_DIR", Path.home() / ".cache" / "referee"))
    env = {
        **os.environ,
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": str(path),
        "REFEREE_SPEC": str(spec),
        "REFEREE_VF_TASKS": str(tasks_file),
        "UV_CACHE_DIR": str(cache / "uv"),
        "UV_EXCLUDE_NEWER": "2026-12-01T00:00:00Z",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(Path(bindir) / "vf-eval"), "@", str(config), "-m", "policy",
         "--client.base-url", url, "--client.api-key-var", "REFEREE_TEST_KEY", "--no-push",
         "-c", "4", "-o", str(out), *(a.format(tasks=tasks_file) for a in args)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (traces,) = out.glob("*/traces.jsonl")
    episodes = [vf.WireEpisode.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert len(episodes) == len(tasks)
    return episodes


def test_vf_eval_rollouts_match_cli(cli, tmp_path, policy_url):
    episodes = run_eval(tmp_path, policy_url)
    by_prompt = {e.traces[0].task.data.prompt: e for e in episodes}
    weights = dict(referee.compile(SPEC).components)
    rows, traces = [], []
    for task in TASKS:
        (trace,) = by_prompt[task["prompt"]].traces
        item = {"prompt": task["prompt"], "answer": task.get("answer"), "info": task["info"]}
        rows.append({"item": item, "sample": {"messages": [plain(m) for m in trace.messages]}})
        traces.append(trace)
    want = cli(SPEC, rows)

    for task, trace, w in zip(TASKS, traces, want):
        name = task["prompt"]
        assert trace.metrics["referee_error"] == (1.0 if w["status"] == "error" else 0.0), name
        if w["reward"] is None:
            continue
        assert trace.ok, (name, trace.errors)
        assert {k: r.score for k, r in trace.rewards.items()} == {
            k: weights[k] * v for k, v in w["components"].items()}, name
        assert trace.reward == pytest.approx(w["reward"], abs=1e-12), name
        for k, v in w["components"].items():
            assert trace.metrics[f"referee/{k}"] == v

    assert [w["reward"] for w in want[:3]] == [1.75, 1.75, 0.25]
    # The two-turn rollout really called the harness's bash tool and graded the final turn.
    tool_trace = traces[1]
    calls = [m for m in tool_trace.messages if m.role == "assistant" and m.tool_calls]
    assert calls and calls[0].tool_calls[0].name == "bash"
    results = [m for m in tool_trace.messages if m.role == "tool"]
    assert results and "9" in str(results[0].content)
    assert tool_trace.messages[-1].reasoning_content.startswith("The tool says 9")

    # The unscorable rollout: a failed rollout with Referee's reason, no reward recorded, and
    # the run (and the other rollouts) went on.
    bad, w = traces[3], want[3]
    assert w["status"] == "error" and w["reason"] == "missing_field"
    assert not bad.ok and not by_prompt[TASKS[3]["prompt"]].ok
    assert bad.errors[-1].type == "TaskError" and "missing_field" in bad.errors[-1].message
    assert bad.rewards == {"referee": None}
    assert bad.info["referee"]["reason"] == "missing_field"


def replayed(task: dict, trace) -> dict:
    """The calendar the trajectory leaves behind, replayed from its tool calls and results
    (independently of the tool server): what the plugin must have handed the spec."""
    bookings = list(task.get("initial_state", {}).get("bookings", []))
    results = {m.tool_call_id: m.content for m in trace.messages if m.role == "tool"}
    for m in trace.messages:
        for c in (m.tool_calls or []) if m.role == "assistant" else []:
            args = json.loads(c.arguments)
            if c.name == BOOK and results[c.id] == f"booked {args['day']} {args['time']}":
                bookings.append(args)
            elif c.name == "calendar_cancel":
                bookings.remove(args)
    return {"bookings": bookings}


def test_booking_agent_state_and_tool_results(cli, tmp_path, policy_url):
    """The multi-turn agent: the calendar tools ran in their MCP server, their results are tool
    turns of the trace, the state they wrote reached the spec as `sample.state`, and a rollout
    whose task has no expected state is a failed rollout, not a 0."""
    tasks = [t for t, _ in BOOKING_TASKS]
    episodes = run_eval(tmp_path, policy_url, tasks, BOOKING / "eval.toml", BOOKING / "spec.yaml",
                        BOOKING, ("--env.taskset.tasks", "{tasks}"))
    by_prompt = {e.traces[0].task.data.prompt: e.traces[0] for e in episodes}
    spec = BOOKING / "spec.yaml"
    weights = dict(referee.compile(spec).components)
    traces = [by_prompt[t["prompt"]] for t in tasks]
    # The item is the task as written (the unscorable one has no `expected_state`).
    rows = [{"item": t, "sample": {"messages": [plain(m) for m in tr.messages],
                                   "state": replayed(t, tr)}}
            for t, tr in zip(tasks, traces)]
    want = cli(spec, rows)

    for task, trace, w, scores in zip(tasks, traces, want, BOOKING_SCORES):
        name = task["prompt"]
        assert trace.ok, (name, trace.errors)
        assert (w["components"]["booked"], w["components"]["confirmed"]) == scores, name
        assert {k: r.score for k, r in trace.rewards.items()} == {
            k: weights[k] * v for k, v in w["components"].items()}, name
        assert trace.reward == pytest.approx(w["reward"], abs=1e-12), name
        assert trace.metrics["referee/booked"] == scores[0]
        assert trace.metrics["referee_error"] == 0.0
    # The tools really ran: one tool turn per call, answering it, with the server's result.
    for k in (0, 1, 3):
        msgs = traces[k].messages
        calls = [c for m in msgs if m.role == "assistant" for c in (m.tool_calls or [])]
        results = [m for m in msgs if m.role == "tool"]
        assert [r.tool_call_id for r in results] == [c.id for c in calls]
        assert results[-1].content == tasks[k]["info"]["confirmation"]
        assert msgs[-1].role == "assistant" and not msgs[-1].tool_calls
    # The state the spec saw came from the server, not the trajectory's text: the claim made no
    # call, and the two-booking rollout's confirmation is right while its state is not.
    assert not any(m.role == "tool" for m in traces[2].messages)
    assert replayed(tasks[1], traces[1]) == {"bookings": [slot("11:00"), slot("10:00")]}

    bad, w = traces[4], want[4]
    assert w["status"] == "error" and w["reason"] == "missing_field" and w["reward"] is None
    assert not bad.ok
    assert bad.errors[-1].type == "TaskError" and "missing_field" in bad.errors[-1].message
    assert bad.rewards == {"referee": None}
    assert bad.metrics["referee_error"] == 1.0
