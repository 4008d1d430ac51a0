"""Referee: reward specs compiled once and scored fast, from Python.

    import referee
    program = referee.compile("spec.yaml")
    program.score([{"prompt": "2+2?", "completion": "\\boxed{4}", "answer": "4"}])

Audits of a spec (the CLI's ``fuzz``, ``eval``, ``compare``, same JSON reports):
``referee.fuzz(spec, rows)``, ``referee.evaluate(spec, rows)``, ``referee.compare(a, b, rows)``.

Trainer adapters: ``referee.trl``, ``referee.verl``, ``referee.openrlhf``,
``referee.verifiers``, ``referee.slime``, ``referee.ray``.
"""

from ._api import Component, Program, Result, SpecError, compare, compile, evaluate, fuzz
from ._referee import __version__

__all__ = [
    "Component",
    "Program",
    "Result",
    "SpecError",
    "compare",
    "compile",
    "evaluate",
    "fuzz",
    "__version__",
]
