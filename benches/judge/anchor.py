#!/usr/bin/env python3
"""The anchor of benches/judge/scale.py: the same judge calls Referee made, sent with the official
client the way a Python reward function does it today: `openai.AsyncOpenAI`, `asyncio.gather`
under an `asyncio.Semaphore(concurrency)`, each reply's content parsed as the JSON verdict.
Runs in the venv scale.py makes from benches/judge/requirements.txt.

    python anchor.py --base-url URL --bodies FILE.json --concurrency 1024

FILE.json is a JSON list of chat-completion request bodies (scale.py records Referee's own, at
the mock server). The client's connection pool is sized to the concurrency (the library's
default caps it at 1,000 connections, 100 kept alive). Prints one JSON line: calls, verdicts
that parsed, and the wall and CPU seconds of the calls alone (from the first call to the last
reply, after the import and the client's creation).
"""
import argparse
import asyncio
import json
import resource
import sys
import time

import httpx2
import openai

KNOWN = {"model", "messages", "temperature", "max_tokens", "top_p", "seed", "response_format",
         "logprobs", "top_logprobs", "reasoning_effort"}


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def run(args, bodies):
    client = openai.AsyncOpenAI(
        base_url=args.base_url, api_key="unused", max_retries=3, timeout=60.0,
        http_client=openai.DefaultAsyncHttpxClient(
            limits=httpx2.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)))
    sem = asyncio.Semaphore(args.concurrency)

    async def one(body):
        kw = {k: v for k, v in body.items() if k in KNOWN}
        extra = {k: v for k, v in body.items() if k not in KNOWN}
        async with sem:
            r = await client.chat.completions.create(**kw, extra_body=extra or None)
        verdict = json.loads(r.choices[0].message.content)
        return isinstance(verdict, dict) and ("result" in verdict or "verdicts" in verdict)

    c0, t0 = cpu(), time.perf_counter()
    ok = await asyncio.gather(*(one(b) for b in bodies))
    wall, used = time.perf_counter() - t0, cpu() - c0
    await client.close()
    return {"calls": len(bodies), "parsed": sum(ok), "calls_wall_s": wall, "calls_cpu_s": used}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--concurrency", type=int, default=1024)
    args = ap.parse_args()
    with open(args.bodies, encoding="utf-8") as f:
        bodies = json.load(f)
    out = asyncio.run(run(args, bodies))
    out["openai"] = openai.__version__
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
