"""OpenRLHF reward function file backed by Referee.

    pip install .            # the referee package (repository root)
    export REFEREE_SPEC=/abs/path/reward.yaml   # e.g. python/tests/specs/label.yaml: math_equiv on {{item.label}}
    python -m openrlhf.cli.train_ppo_ray ... --reward.remote_url examples/openrlhf/reward_func.py \
        --data.label_key answer

OpenRLHF calls `reward_func(queries, prompts, labels, **kwargs)`; the query is the templated
prompt plus the response, and the prompt is stripped from it before grading (see
referee/openrlhf.py). Returns {"rewards", "scores", "extra_logs"} with each named component and an
`error` flag in extra_logs.
"""

from referee.openrlhf import reward_func

__all__ = ["reward_func"]
