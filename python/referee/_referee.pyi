"""Type stubs for the native module (crates/referee-py)."""

from typing import Any, Literal, Mapping, Optional, Sequence

__version__: str

_Errors = list[tuple[str, Optional[str], str]]

class Result:
    """One sample's result (DESIGN.md §2)."""

    id: Any
    reward: Optional[float]
    status: Literal["ok", "not_applicable", "error"]
    reason: Optional[str]
    message: Optional[str]
    components: dict[str, Optional[float]]
    advantage: Optional[float]
    group_flag: Optional[str]
    usage: Optional[dict[str, Any]]
    step_rewards: Optional[list[dict[str, Any]]]
    """Per-step credit, `[{start, end, value, component, turn?, token_start?, token_end?}]`
    (char offsets into the output; the token span when the row gave `completion_ids` and the
    program a tokenizer, or `token_offsets`), for programs with step components; `None`
    otherwise."""
    token_error: Optional[str]
    """Why the row's tokens could not be placed on the step rewards (char spans only then)."""
    trace: Optional[dict[str, Any]]
    def to_dict(self) -> dict[str, Any]: ...

class Program:
    def score(
        self,
        samples: Sequence[Mapping[str, Any]],
        *,
        format: str = "auto",
        id_field: Optional[str] = None,
        group_field: Optional[str] = None,
        response_field: Optional[str] = None,
    ) -> list[Optional[float]]: ...
    def score_detailed(
        self,
        samples: Sequence[Mapping[str, Any]],
        *,
        format: str = "auto",
        id_field: Optional[str] = None,
        group_field: Optional[str] = None,
        response_field: Optional[str] = None,
        explain: bool = False,
    ) -> list[Result]: ...
    def explain(
        self,
        sample: Mapping[str, Any],
        *,
        format: str = "auto",
        id_field: Optional[str] = None,
        group_field: Optional[str] = None,
        response_field: Optional[str] = None,
    ) -> Result: ...
    def openrlhf_answer(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]: ...
    @property
    def component_names(self) -> list[str]: ...
    @property
    def waits(self) -> bool: ...
    def parts(self) -> list[tuple[str, float, "Program | _Errors"]]: ...
    # The audits. `rows`: a data file's text (str) or JSON-like row dicts; `options`: the
    # core's options object (the CLI's flag names with underscores).
    def fuzz(
        self,
        rows: "str | Sequence[Any]",
        options: Optional[Mapping[str, Any]] = None,
        *,
        label: Optional[str] = None,
        exploits: Optional[Sequence[tuple[str, str]]] = None,
        data_name: str = "rows",
    ) -> tuple[dict[str, Any], list[str]]: ...
    def evaluate(
        self,
        rows: "str | Sequence[Any]",
        options: Optional[Mapping[str, Any]] = None,
        *,
        label: Optional[str] = None,
    ) -> dict[str, Any]: ...
    def compare(
        self,
        other: Optional["Program"],
        rows: "str | Sequence[Any]",
        options: Optional[Mapping[str, Any]] = None,
        *,
        a_name: str = "a",
        b_name: str = "b",
    ) -> dict[str, Any]: ...

def compile(
    spec: Any,
    *,
    judge: Optional[str] = None,
    judge_model: Optional[str] = None,
    judge_cache: Optional[str] = None,
    judge_fallback: Optional[str] = None,
    tokenizer: Optional[str] = None,
) -> tuple[Optional[Program], Optional[_Errors]]: ...
