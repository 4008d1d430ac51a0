#!/usr/bin/env python3
"""A judge that always takes the same time: an OpenAI-compatible loopback server for the
judge-scaling bench (benches/judge/scale.py). Stdlib only, one asyncio loop (no threads), so it
holds thousands of connections at once.

    python3 benches/judge/mock_server.py [--port 0] [--delay 1.0] [--backlog 4096]

Prints one JSON line `{"pid": ..., "port": ..., "base_url": "http://127.0.0.1:PORT/v1"}` once it
listens on 127.0.0.1, then serves until killed. HTTP/1.1 with keep-alive (a connection serves
requests until the client closes it or sends `Connection: close`).

- `POST /v1/chat/completions`: answered exactly `--delay` seconds after the request was read,
  with a well-formed chat completion whose content is a verdict Referee's graders accept. The
  verdict follows the request's `response_format` JSON schema when there is one, else the
  prompt's own instructions:
  - a schema with `verdicts` (the `rubric` grader): one `{"id", "reason", "verdict"}` per id the
    schema's `id` enum lists, in order, the verdict `true` (or the best of its choices);
  - a schema with `result` (`score_model`): `{"steps": [{description, conclusion}], "result": R}`,
    R the schema's maximum (1 without one), steps included only when the schema has them;
  - no schema: the ids named in the prompt ("each of the ids 1, 2 exactly once"), else a
    `result` with steps.
- `GET /stats`: `{"requests", "in_flight", "peak_in_flight", "connections", "peak_connections",
  "connections_opened", "recorded"}`: chat requests answered, requests read and not yet
  answered (now, and the most at once), connections open (now, the most at once, ever).
- `POST /reset`: zeroes the counters and peaks; `POST /reset?record=1` also starts keeping every
  chat request body (until the next reset), served by `GET /recorded` as a JSON list.
"""
import argparse
import asyncio
import json
import os
import re
import sys
import time

STATS = {"requests": 0, "in_flight": 0, "peak_in_flight": 0, "connections": 0,
         "peak_connections": 0, "connections_opened": 0}
RECORD = {"on": False, "bodies": []}
IDS_IN_PROMPT = re.compile(r"each of the ids ([0-9, ]+) exactly once")


def verdict(body):
    """The verdict a request asks for, as the text of the reply."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    props = schema.get("properties") or {}
    if "verdicts" in props:
        item = props["verdicts"].get("items", {}).get("properties", {})
        ids = item.get("id", {}).get("enum") or []
        v = item.get("verdict", {})
        choices = [c for alt in v.get("anyOf", []) for c in alt.get("enum", [])]
        best = choices[-1] if choices else True
        return json.dumps({"verdicts": [{"id": i, "reason": "The response meets it.", "verdict": best}
                                        for i in ids]})
    if "result" in props:
        r = props["result"]
        out = {}
        if "steps" in props:
            out["steps"] = [{"description": "Read the response.", "conclusion": "It answers the question."}]
        out["result"] = r["maximum"] if "maximum" in r else (r["enum"][-1] if r.get("enum") else 1)
        return json.dumps(out)
    text = "\n".join(m.get("content", "") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
                     for m in body.get("messages", []))
    m = IDS_IN_PROMPT.search(text)
    if m:
        ids = [int(x) for x in m.group(1).replace(" ", "").split(",") if x]
        return json.dumps({"verdicts": [{"id": i, "reason": "The response meets it.", "verdict": True} for i in ids]})
    return json.dumps({"steps": [{"description": "Read the response.", "conclusion": "It answers the question."}],
                       "result": 1})


def completion(body, content):
    return {
        "id": f"mock-{STATS['requests']}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "mock"),
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def response(code, body: bytes, close=False, ctype="application/json"):
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(code, "OK")
    head = (f"HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n")
    return head.encode() + body


async def handle(reader, writer, delay):
    STATS["connections"] += 1
    STATS["connections_opened"] += 1
    STATS["peak_connections"] = max(STATS["peak_connections"], STATS["connections"])
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _version = (lines[0].split(" ") + ["", "", ""])[:3]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            if headers.get("transfer-encoding", "").lower() == "chunked":
                raw = b""
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    chunk = await reader.readexactly(size + 2)
                    if size == 0:
                        break
                    raw += chunk[:-2]
            else:
                raw = await reader.readexactly(int(headers.get("content-length") or 0))
            close = headers.get("connection", "").lower() == "close"
            path = target.split("?")[0]
            if method == "POST" and path.endswith("/chat/completions"):
                STATS["in_flight"] += 1
                STATS["peak_in_flight"] = max(STATS["peak_in_flight"], STATS["in_flight"])
                try:
                    body = json.loads(raw)
                    if RECORD["on"]:
                        RECORD["bodies"].append(body)
                    await asyncio.sleep(delay)
                    out = response(200, json.dumps(completion(body, verdict(body))).encode(), close)
                    STATS["requests"] += 1
                finally:
                    STATS["in_flight"] -= 1
            elif method == "GET" and path == "/stats":
                out = response(200, json.dumps(dict(STATS, recorded=len(RECORD["bodies"]))).encode(), close)
            elif method == "GET" and path == "/recorded":
                out = response(200, json.dumps(RECORD["bodies"]).encode(), close)
            elif method == "POST" and path == "/reset":
                for k in ("requests", "peak_in_flight", "peak_connections", "connections_opened"):
                    STATS[k] = 0
                STATS["peak_in_flight"] = STATS["in_flight"]
                STATS["peak_connections"] = STATS["connections"]
                RECORD["on"] = "record=1" in target
                RECORD["bodies"] = []
                out = response(200, b'{"reset": true}', close)
            elif method == "GET":
                out = response(200, b'{"status": "ok"}', close)
            else:
                out = response(404, b'{"error": {"message": "not found"}}', close)
            writer.write(out)
            await writer.drain()
            if close:
                return
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        return
    finally:
        STATS["connections"] -= 1
        writer.close()


async def serve(args):
    srv = await asyncio.start_server(lambda r, w: handle(r, w, args.delay), "127.0.0.1", args.port,
                                     backlog=args.backlog, limit=1 << 24)
    port = srv.sockets[0].getsockname()[1]
    print(json.dumps({"pid": os.getpid(), "port": port, "base_url": f"http://127.0.0.1:{port}/v1"}), flush=True)
    async with srv:
        await srv.serve_forever()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--backlog", type=int, default=4096)
    args = ap.parse_args()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
