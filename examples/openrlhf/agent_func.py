"""OpenRLHF multi-turn agent whose episode is rewarded by Referee (OpenRLHF 0.11.2).

    export REFEREE_SPEC=/abs/path/reward.yaml
    python -m openrlhf.cli.train_ppo_ray ... --train.agent_func_path examples/openrlhf/agent_func.py \
        --data.label_key answer

OpenRLHF loads `AgentExecutor` from this file. Each episode: the policy answers, the environment
(`feedback` below) asks once for a check, the policy answers again, and the spec grades the last
answer. Intermediate steps return reward 0 (OpenRLHF sums the steps' rewards).
"""

from openrlhf.utils.agent import MultiTurnAgentExecutor

from referee.openrlhf import RefereeAgent


class AgentInstance(RefereeAgent):
    max_turns = 2      # the spec grades the answer of turn 2
    grade = "last"     # or "episode": everything after the prompt

    async def feedback(self, states):
        # The environment's text after the policy's action; `(text, True)` would end the episode.
        return "\nCheck your work and give your final answer again.\n"


class AgentExecutor(MultiTurnAgentExecutor):
    def __init__(self):
        super().__init__(AgentInstance)
