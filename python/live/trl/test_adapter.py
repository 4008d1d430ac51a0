"""The adapter's own promises, with TRL's and transformers' real objects: async functions do not
block the event loop; a message from transformers' response parser without ``content`` scores as
the CLI scores it; the functions pickle (async_grpo pickles them into its rollout process)."""

from __future__ import annotations

import asyncio
import pickle
import time

import pytest

import referee
import referee.trl

ADD = "Write a program that prints the sum of two integers."


def test_async_functions_leave_the_event_loop_running(live, spec):
    """Scoring (here: the sandbox running the tests) happens on a worker thread: a coroutine on
    the same loop keeps ticking meanwhile, and the functions run concurrently."""
    funcs = referee.trl.reward_funcs(spec, asynchronous=True)
    n = 16
    kwargs = dict(prompts=[ADD] * n, completions=[live.COMPLETIONS[ADD][0]] * n,
                  completion_ids=[[1]] * n, tests=[live.ADD_TESTS] * n, calls=["[]"] * n)

    async def main():
        ticks = 0
        done = False

        async def ticker():
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0.001)

        t = asyncio.create_task(ticker())
        t0 = time.monotonic()
        out = await asyncio.gather(*(f(**kwargs) for f in funcs))
        elapsed = time.monotonic() - t0
        done = True
        await t
        return out, ticks, elapsed

    (tests, think, calls), ticks, elapsed = asyncio.run(main())
    assert tests == [1.0] * n and think == [1.0] * n and calls == [1.0] * n
    assert ticks >= 3, (ticks, elapsed)


def test_parsed_message_without_content(live, cli, spec):
    """transformers' own ``parse_response`` (which TRL's wraps) leaves ``content`` out of a
    tool-call-only message and puts the reasoning in ``reasoning_content``."""
    tok = live.make_tokenizer(parse=True)
    prompt = [{"role": "user", "content": "Call the add tool on 1 and 2."}]
    prefix = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    texts = [f"<think>\nI will call add.\n</think>\n\n{live.ADD_CALL}", live.ADD_CALL,
             "<think>\nOnly thinking.\n</think>\n\n"]
    msgs = [tok.parse_response(tok(t + live.END, add_special_tokens=False)["input_ids"],
                               prefix=prefix) for t in texts]
    assert "content" not in msgs[0] and msgs[0]["reasoning_content"] == "I will call add."
    assert "content" not in msgs[1] and "tool_calls" in msgs[1]
    completions = [[m] for m in msgs]
    columns = {"tests": [[{"input": "", "output": "3\n"}]] * 3,
               "calls": [live.ADD_CALL_EXPECTED] * 3}
    funcs = referee.trl.reward_funcs(spec)
    got = {f.__name__: f(prompts=[prompt] * 3, completions=completions, **columns) for f in funcs}
    want = cli(spec, [{"prompt": prompt, "completion": c, "tests": t, "calls": k}
                      for c, t, k in zip(completions, columns["tests"], columns["calls"])],
               "--format", "trl")
    for name, values in got.items():
        assert values == [w["components"][name] for w in want]
    assert got["calls"][:2] == [1.0, 1.0] and got["calls"][2] == 0.0
    whole = referee.trl.reward_func(spec)(prompts=[prompt] * 3, completions=completions, **columns)
    assert whole == [w["reward"] for w in want]


def test_functions_pickle(live, spec):
    funcs = referee.trl.reward_funcs(spec) + referee.trl.reward_funcs(spec, asynchronous=True)
    funcs.append(referee.trl.reward_func(spec, name="whole"))
    back = pickle.loads(pickle.dumps(funcs))
    assert [f.__name__ for f in back] == [f.__name__ for f in funcs]
    kwargs = dict(prompts=[ADD], completions=[live.COMPLETIONS[ADD][1]],
                  tests=[live.ADD_TESTS], calls=["[]"])

    async def call(f):
        out = f(**kwargs)
        return await out if asyncio.iscoroutine(out) else out

    assert [asyncio.run(call(f)) for f in back] == [asyncio.run(call(f)) for f in funcs]
    assert [asyncio.run(call(f)) for f in back][:3] == [[0.5], [1.0], [1.0]]
    # A compiled Program does not pickle: the error says what to give instead.
    (f,) = referee.trl.reward_funcs(referee.compile("type: regex\npattern: x\n"))
    with pytest.raises(TypeError, match="path, text or dict"):
        pickle.dumps(f)
