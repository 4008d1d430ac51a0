"""The live agent tests' environment: a verl ``BaseTool`` that books a seat (loaded by verl from
tools.yaml, ``multi_turn.tool_config_path``). Its state is the one the agent loop keeps in
``agent_data.extra_fields["state"]``, which verl hands the reward function in ``extra_info``."""

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

SEATS = {"LH123": {"12A", "12B"}}


class BookTool(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        # referee.verl.RefereeToolAgentLoop seeds the state from the row's initial_state; under
        # verl's own tool_agent this tool starts it.
        state = kwargs["agent_data"].extra_fields.setdefault("state", {"bookings": []})
        flight, seat = parameters.get("flight"), parameters.get("seat")
        if seat not in SEATS.get(flight, ()):
            return ToolResponse(text=f"error: no seat {seat} on {flight}"), 0.0, {}
        state["bookings"].append({"flight": flight, "seat": seat})
        return ToolResponse(text=f"booked {flight} seat {seat}"), 0.0, {}
