"""The live tests' taskset (`--env.taskset.id referee_vf_tasks`): one task per line of the JSONL
file named by $REFEREE_VF_TASKS, each `{"prompt", "answer", "info"}`."""

import json
import os

import verifiers.v1 as vf


class MathTaskData(vf.TaskData):
    answer: str | None = None
    info: dict = {}


class MathTask(vf.Task[MathTaskData, vf.State, vf.TaskConfig]):
    pass


class MathTaskset(vf.Taskset[MathTask]):
    def load(self):
        with open(os.environ["REFEREE_VF_TASKS"], encoding="utf-8") as f:
            for line in f:
                yield MathTask(MathTaskData(**json.loads(line)), self.config.task)


__all__ = ["MathTaskset"]
