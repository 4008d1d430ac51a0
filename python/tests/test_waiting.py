"""A grader that waits (code_exec in Referee's sandbox) from Python, sync and from asyncio,
against the CLI on the same rows (examples/code)."""

from __future__ import annotations

import asyncio
import json

import referee
from conftest import ROOT

SPEC = ROOT / "examples" / "code" / "spec.yaml"
ROWS = [json.loads(line) for line in (ROOT / "examples" / "code" / "rollouts.jsonl").read_text().splitlines() if line.strip()]


def test_sandboxed_grader_sync_and_async_match_cli(cli):
    prog = referee.compile(SPEC)
    assert prog.waits
    want = cli(SPEC, ROWS)
    got = prog.score_detailed(ROWS)
    assert [(r.reward, r.status, r.reason) for r in got] == [
        (w["reward"], w["status"], w.get("reason")) for w in want]
    assert any(r.reward == 1.0 for r in got) and any(r.reward != 1.0 for r in got)

    async def main():
        # Two batches at once from one event loop, with the loop free meanwhile.
        return await asyncio.gather(prog.score_async(ROWS), prog.score_async(ROWS[::-1]))

    a, b = asyncio.run(main())
    assert a == [w["reward"] for w in want]
    assert b == a[::-1]
