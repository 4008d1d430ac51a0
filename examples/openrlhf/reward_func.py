"""OpenRLHF reward function file backed by Referee (OpenRLHF 0.11.2).

    pip install referee                          # or `pip install .` at the repository root
    export REFEREE_SPEC=/abs/path/reward.yaml    # e.g. python/tests/specs/label.yaml: math_equiv on {{item.label}}
    python -m openrlhf.cli.train_ppo_ray ... --reward.remote_url examples/openrlhf/reward_func.py \
        --data.label_key answer

OpenRLHF's SingleTurnAgentExecutor loads this file and calls
`reward_func([query], [prompt], [label])` once per sample. The query is the (possibly
left-truncated) prompt plus the response; Referee grades only the response (see
referee/openrlhf.py). Every row gets a number; rows that could not be scored are flagged with
`extra_logs["referee_error"]` = 1.0, and `scores` lie in [0, 1] for dynamic filtering.
"""

from referee.openrlhf import reward_func

__all__ = ["reward_func"]
