"""OpenRLHF multi-turn tool-using agent rewarded by Referee as a trajectory (OpenRLHF 0.11.2).

    export REFEREE_SPEC=/abs/path/examples/openrlhf/tool_spec.yaml
    python -m openrlhf.cli.train_ppo_ray ... --train.agent_func_path examples/openrlhf/tool_agent_func.py \
        --data.label_key expected_state

The environment is a tiny flight-booking service with one tool, `book(flight, seat)`. The policy
calls it in Qwen's hermes format (`<tool_call>{"name": "book", "arguments": {...}}</tool_call>`),
the environment answers with a tool turn, and an action without a call is the final answer,
which ends the episode. The spec (tool_spec.yaml) grades the outcome by the bookings made
(`state_match` against the row's label, the expected state) and the last answer's format; the
turns themselves are `sample.messages` (`{{sample.messages[tool=book][-1].content}}` is the
last booking result).
"""

import json

from openrlhf.utils.agent import MultiTurnAgentExecutor

from referee.openrlhf import RefereeAgent, tool_result

SEATS = {"LH123": {"12A", "12B"}, "BA456": {"3C"}}
# What a Qwen chat template puts around a tool result, after the policy's turn.
TOOL_TURN = "<|im_end|>\n<|im_start|>user\n<tool_response>\n{}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"


class AgentInstance(RefereeAgent):
    max_turns = 4      # a turn limit: the episode is scored as it stands then

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bookings = []

    def final_state(self):
        # The environment's state after the episode: what the spec's state_match compares.
        return {"bookings": self.bookings}

    def book(self, args):
        flight, seat = args.get("flight"), args.get("seat")
        if seat not in SEATS.get(flight, ()):
            return f"error: no seat {seat} on {flight}"
        if any(b == {"flight": flight, "seat": seat} for b in self.bookings):
            return f"error: {flight} {seat} is already booked"
        self.bookings.append({"flight": flight, "seat": seat})
        return f"booked {flight} seat {seat}"

    async def feedback(self, states):
        calls = states["message"].get("tool_calls")
        if not calls:
            return "", True    # the final answer
        results = []
        for call in calls:
            fn = call["function"]
            try:
                args = json.loads(fn["arguments"])
            except ValueError:
                args = None
            if fn["name"] != "book":
                out = f"error: unknown tool {fn['name']}"
            elif not isinstance(args, dict):
                out = "error: the arguments are not a JSON object"
            else:
                out = self.book(args)
            results.append(tool_result(call, out))
        text = "".join(TOOL_TURN.format(r["content"]) for r in results)
        return {"text": text, "messages": results}


class AgentExecutor(MultiTurnAgentExecutor):
    def __init__(self):
        super().__init__(AgentInstance)
