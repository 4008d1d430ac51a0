"""The calendar tool server: an MCP server verifiers launches per rollout (`python -m
referee_booking.tools`). Its tools write the rollout's typed state, which verifiers syncs to the
host as `trace.state`: the final state Referee grades (`{{sample.state}}`)."""

import verifiers.v1 as vf

SLOTS = ("09:00", "10:00", "11:00")


class Booking(vf.State):
    """The rollout's state: the meetings booked so far."""

    bookings: list[dict] = []


class CalendarToolset(vf.Toolset[vf.ToolsetConfig, Booking]):
    TOOL_PREFIX = "calendar"  # the tools are `calendar_book` and `calendar_cancel`

    @vf.tool
    def book(self, day: str, time: str) -> str:
        """Book a meeting on `day` (e.g. "tuesday") at `time` (HH:MM)."""
        if time not in SLOTS:
            raise ValueError(f"no slot at {time}")
        self.state.bookings = [*self.state.bookings, {"day": day, "time": time}]
        return f"booked {day} {time}"

    @vf.tool
    def cancel(self, day: str, time: str) -> str:
        """Cancel the meeting on `day` at `time`."""
        self.state.bookings = [b for b in self.state.bookings
                               if b != {"day": day, "time": time}]
        return f"cancelled {day} {time}"


if __name__ == "__main__":
    CalendarToolset.run()
