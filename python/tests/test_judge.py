"""A model grader (score_model) from Python against a real OpenAI-compatible server on loopback
(a scripted http.server): `judge=`, `judge_model=` and `judge_cache=` reach the core, usage comes
back with each result, judge failures are statuses, and sync and asyncio callers both work."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import referee

SPEC = {
    "type": "score_model", "name": "judge", "model": "ignored-by-default-endpoint",
    "input": [
        {"role": "system", "content": "Grade the answer against the reference, 0 to 1."},
        {"role": "user", "content": "Reference: {{item.reference}}\nAnswer: {{sample.output_text}}"},
    ],
}
ROWS = [
    {"item": {"reference": "Paris"}, "sample": {"output_text": "The capital of France is Paris."}},
    {"item": {"reference": "Paris"}, "sample": {"output_text": "It is Lyon."}},
]


class Judge(BaseHTTPRequestHandler):
    calls: list = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Judge.calls.append(body)
        text = body["messages"][-1]["content"]
        result = 1 if "Paris." in text.split("Answer:")[-1] else 0
        reply = {
            "id": "x", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": json.dumps({"steps": [], "result": result})}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def judge_url():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_judge_options_usage_and_cache(judge_url):
    Judge.calls.clear()
    prog = referee.compile(SPEC, judge=judge_url, judge_model="tiny-judge", judge_cache="memory")
    assert prog.waits
    res = prog.score_detailed(ROWS)
    assert [r.reward for r in res] == [1.0, 0.0]
    assert [r.status for r in res] == ["ok", "ok"]
    assert len(Judge.calls) == 2 and {c["model"] for c in Judge.calls} == {"tiny-judge"}
    assert res[0].usage["judge_calls"] == 1 and res[0].usage["prompt_tokens"] == 20
    # Scored again: served from the cache, no new call.
    again = prog.score_detailed(ROWS)
    assert [r.reward for r in again] == [1.0, 0.0] and len(Judge.calls) == 2
    assert again[0].usage["cache_hits"] == 1 and again[0].usage["judge_calls"] == 0

    async def main():
        return await asyncio.gather(prog.score_async(ROWS), prog.score_async(ROWS[::-1]))

    assert asyncio.run(main()) == [[1.0, 0.0], [0.0, 1.0]]


def test_unreachable_judge_is_a_status_not_an_exception():
    # Port 9 (discard) on loopback: nothing listens; every call fails.
    prog = referee.compile(SPEC, judge="http://127.0.0.1:9/v1", judge_cache="off")
    res = prog.score_detailed(ROWS[:1])
    assert res[0].status == "error" and res[0].reward is None and res[0].reason
    assert res[0].usage["judge_errors"] >= 1
