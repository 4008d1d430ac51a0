"""A verifiers 0.4 taskset (`--env.taskset.id referee_booking`): book meetings through the
calendar tool server (`referee_booking.tools`). Each task is a line of a JSONL file
(`--env.taskset.tasks`, default the package's `tasks.jsonl`): `{"prompt", "initial_state",
"expected_state", "info": {"confirmation"}}`. The reward is a plugin (`TaskConfig.rewards`, see `eval.toml`):
Referee's, grading the final state and the trajectory."""

import json
from pathlib import Path

import verifiers.v1 as vf

from referee_booking.tools import Booking, CalendarToolset


class BookingData(vf.TaskData):
    initial_state: dict = {}
    expected_state: dict | None = None
    info: dict = {}


class BookingTaskConfig(vf.TaskConfig):
    tools: vf.ToolsetConfig = vf.ToolsetConfig()


class BookingTask(vf.Task[BookingData, Booking, BookingTaskConfig]):
    @classmethod
    def toolsets(cls, config: BookingTaskConfig) -> list[vf.Toolset]:
        return [CalendarToolset(config.tools)]

    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        """The calendar as the task starts (the tools read and write it through verifiers'
        state channel)."""
        trace.state.bookings = list(self.data.initial_state.get("bookings", []))


class BookingConfig(vf.TasksetConfig):
    task: BookingTaskConfig = BookingTaskConfig()
    tasks: Path = Path(__file__).with_name("tasks.jsonl")


class BookingTaskset(vf.Taskset[BookingTask, BookingConfig]):
    def load(self):
        with open(self.config.tasks, encoding="utf-8") as f:
            for line in f:
                yield BookingTask(BookingData(**json.loads(line)), self.config.task)


__all__ = ["BookingTaskset"]
