"""A real verifiers 0.4 evaluation with Referee as the reward: `vf-eval @ eval.toml` (the
taskset python/live/verifiers/referee_vf_tasks, the `bash` harness's chat program in the
`subprocess` runtime, verifiers' interception server) against a policy served on 127.0.0.1 from
Python's stdlib with fixed completions. verifiers builds the traces, calls the plugin through its
loader, and writes traces.jsonl; each trace's rewards are compared with `referee score` on the
trace's messages as plain dicts.

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

TASKS = [
    {"prompt": "What is 2+2?", "answer": "4", "info": {"calls": []}},
    {"prompt": "Temperature in Paris, doubled?", "answer": "18", "info": {"calls": []}},
    {"prompt": "What is 3+3?", "answer": "6", "info": {"calls": []}},
    {"prompt": "Nobody wrote down the answer: what is 1+1?", "info": {"calls": []}},
]


def reply(messages: list) -> dict:
    """The policy's fixed completion for a request (by its question and turn)."""
    question = next(m["content"] for m in messages if m["role"] == "user")
    tool_results = [m for m in messages if m["role"] == "tool"]
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


def run_eval(tmp_path: Path, url: str) -> list:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    bindir = str(Path(sys.executable).parent)  # the venv's uv, for the chat program
    cache = Path(os.environ.get("REFEREE_CACHE_DIR", Path.home() / ".cache" / "referee"))
    env = {
        **os.environ,
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": str(HERE),
        "REFEREE_SPEC": str(SPEC),
        "REFEREE_VF_TASKS": str(tasks),
        "UV_CACHE_DIR": str(cache / "uv"),
        "UV_EXCLUDE_NEWER": "2026-12-01T00:00:00Z",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(Path(bindir) / "vf-eval"), "@", str(HERE / "eval.toml"), "-m", "policy",
         "--client.base-url", url, "--client.api-key-var", "REFEREE_TEST_KEY", "--no-push",
         "-c", "4", "-o", str(out)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (traces,) = out.glob("*/traces.jsonl")
    episodes = [vf.WireEpisode.model_validate_json(line) for line in traces.read_text().splitlines()]
    assert len(episodes) == len(TASKS)
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
