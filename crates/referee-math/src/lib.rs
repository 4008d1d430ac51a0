//! Math answer extraction and equivalence. Placeholder crate: the `math_equiv` grader and its
//! parser arrive with issue 3. It exists now so the workspace has the shape of DESIGN.md §4.
