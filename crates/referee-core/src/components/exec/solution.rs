//! What `code_exec` runs: the solution's code chosen from a chat answer, and the dataset's own
//! header run before it.
//!
//! **The block rule** (`extract: auto`, the default). Chat models answer in prose around fenced
//! blocks, and often end with an "Example usage" block that calls the function without defining
//! it. The anchors differ: open-r1 and LiveCodeBench take the *last* block (which loses the
//! solution to a usage block), human-eval-style instruct harnesses take the *first* block that
//! defines the function (which grades a draft the model then corrected), evalplus sanitises the
//! answer down to the definitions it needs. Referee takes:
//! - with an entry point (call tests, HumanEval, MBPP): the **last** block that **defines** it
//!   (`def name(`, `async def name(`, or a `class Solution` with that method). A model that
//!   corrects itself ("wait, that is wrong, here is the fix") is graded on the fix. Blocks after
//!   it that only use the function are **left out**, not run after it: they add nothing to the
//!   function's correctness and can only interfere (print into a stdout test, wait on `input()`,
//!   loop, or rebind the name the tests call). Several different definitions offered as
//!   alternatives are a hedge: only the last is graded, so hedging never earns more than
//!   committing to one;
//! - without one (stdin programs): the last block that is a **whole program** (Python: it reads
//!   input or prints; C/C++: it has `main(`), not a usage snippet or a block of sample input;
//! - no block qualifies: the last block, as before, so the trace says why it failed.
//!
//! `last_block` and `first_block` keep the anchors' plain rules.
//!
//! **The prefix.** HumanEval's prompt is the function's header (`from typing import List`, helper
//! functions, the signature and docstring); human-eval runs it before the completion, and a chat
//! model's answer often uses its imports without repeating them. The prefix is run as its own
//! code before the solution, never joined to it as text: the solution's first line becomes
//! `exec(compile(<prefix as a string literal>, "prompt.py", "exec"))`, so an answer cannot end
//! the header early or continue it, and the header cannot read the tests (they reach the
//! sandbox only in the test process). Errors in the solution are reported at the solution's own
//! line numbers.

use std::fmt::Write as _;

/// The fenced code blocks of a completion: (info string, body).
pub fn code_blocks(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(nl) = after.find('\n') else { break };
        let info = after[..nl].trim();
        let body_start = &after[nl + 1..];
        // The closing fence starts a line.
        let mut search = 0;
        let mut end = None;
        while let Some(i) = body_start[search..].find("```") {
            let pos = search + i;
            if pos == 0 || body_start.as_bytes()[pos - 1] == b'\n' {
                end = Some(pos);
                break;
            }
            search = pos + 3;
        }
        if let Some(e) = end {
            out.push((info, &body_start[..e]));
            rest = &body_start[e + 3..];
        } else {
            // An unclosed block runs to the end (a truncated completion).
            out.push((info, body_start));
            break;
        }
    }
    out
}

pub fn tag_matches(info: &str, language: &str) -> bool {
    let tag = info
        .split(|c: char| c.is_whitespace() || c == '{')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if tag.is_empty() {
        return true;
    }
    match language {
        "python" => matches!(tag.as_str(), "python" | "py" | "python3" | "py3"),
        "cpp" => matches!(tag.as_str(), "cpp" | "c++" | "cc" | "cxx" | "c"),
        other => tag == other,
    }
}

/// Whether Python code defines `name` as a function (at any indentation: a method of
/// `class Solution` counts) or holds a `class Solution` with such a method.
pub fn defines(code: &str, name: &str) -> bool {
    code.lines().any(|l| {
        let l = l.trim_start();
        let l = l.strip_prefix("async ").map_or(l, str::trim_start);
        l.strip_prefix("def ")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix(name))
            .is_some_and(|r| r.trim_start().starts_with('('))
    })
}

/// Whether a block is a whole program rather than a usage snippet or sample data.
fn is_program(code: &str, language: &str) -> bool {
    match language {
        "python" => ["input(", "sys.stdin", "open(0", "print(", "sys.stdout"]
            .iter()
            .any(|m| code.contains(m)),
        _ => code.contains("main("),
    }
}

/// Which block a rule chose: its index among the completion's blocks of the language, their
/// count, and its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chosen<'a> {
    pub index: usize,
    pub of: usize,
    pub code: &'a str,
    /// Blocks after the chosen one that were left out.
    pub after: usize,
}

/// The block the `auto` rule takes (see the module docs); `None` when there is no block.
pub fn choose<'a>(
    blocks: &[&'a str],
    entry_point: Option<&str>,
    language: &str,
) -> Option<Chosen<'a>> {
    let n = blocks.len();
    let pick = match entry_point {
        Some(ep) if language == "python" => blocks.iter().rposition(|b| defines(b, ep)),
        Some(_) => None,
        None => blocks.iter().rposition(|b| is_program(b, language)),
    };
    let index = pick.or_else(|| n.checked_sub(1))?;
    Some(Chosen {
        index,
        of: n,
        code: blocks[index],
        after: n - 1 - index,
    })
}

/// The source to run: the solution, with the prefix run first as its own code (see the module
/// docs), and the (1-based) line of the source that runs it: the solution's lines after it are
/// one further down, which [`solution_lines`] undoes in error texts.
pub fn with_prefix(code: &str, prefix: &str) -> (String, usize) {
    // `from __future__` imports must open the module: the prefix runs after them.
    let lines: Vec<&str> = code.split_inclusive('\n').collect();
    let after_future = lines
        .iter()
        .rposition(|l| l.trim_start().starts_with("from __future__"))
        .map_or(0, |i| i + 1);
    let mut out = String::with_capacity(code.len() + prefix.len() + 64);
    for l in &lines[..after_future] {
        out.push_str(l);
    }
    if after_future > 0 && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("exec(compile(");
    python_literal(prefix, &mut out);
    out.push_str(", \"prompt.py\", \"exec\"))\n");
    for l in &lines[after_future..] {
        out.push_str(l);
    }
    (out, after_future + 1)
}

/// `s` as a Python string literal: quotes, backslashes and control characters escaped, the rest
/// (UTF-8) as it is. Nothing in `s` can end the literal.
fn python_literal(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            // Line and paragraph separators end a line in some readers; keep them escaped.
            '\u{2028}' | '\u{2029}' | '\u{85}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// An error text as the solution's author would read it: `solution.py` line numbers after the
/// prefix's line `exec_line` moved back by one (0: no prefix line).
pub fn solution_lines(text: &str, exec_line: usize) -> String {
    if exec_line == 0 || !text.contains("solution.py") {
        return text.to_string();
    }
    // `File "solution.py", line N` (tracebacks, syntax errors) and `(solution.py, line N)`
    // (the harness's load errors, SyntaxError's own message).
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("solution.py") {
        let (head, tail) = rest.split_at(i + "solution.py".len());
        out.push_str(head);
        let sep = tail
            .strip_prefix("\", line ")
            .map(|t| ("\", line ", t))
            .or_else(|| tail.strip_prefix(", line ").map(|t| (", line ", t)));
        match sep {
            Some((s, t)) => {
                let digits = t.bytes().take_while(u8::is_ascii_digit).count();
                match t[..digits].parse::<usize>() {
                    Ok(n) => {
                        out.push_str(s);
                        let n = if n > exec_line { n - 1 } else { n };
                        out.push_str(&n.to_string());
                        rest = &t[digits..];
                    }
                    Err(_) => rest = tail,
                }
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks() {
        let t = "text\n```python\na = 1\n```\nmore\n```\nb = 2\n```\n```cpp\nint x;\n```";
        let b = code_blocks(t);
        assert_eq!(b.len(), 3);
        assert_eq!(b[0], ("python", "a = 1\n"));
        assert_eq!(b[1], ("", "b = 2\n"));
        assert!(tag_matches("py", "python") && !tag_matches("cpp", "python"));
        assert_eq!(
            code_blocks("```python\nprint(1)\n"),
            vec![("python", "print(1)\n")]
        );
        assert_eq!(code_blocks("```python\ns = '```'\nprint(s)\n```").len(), 1);
    }

    #[test]
    fn the_last_block_that_defines_the_function() {
        let def = "from typing import List\ndef f(xs: List[int]) -> int:\n    return 1\n";
        let fix = "def f(xs):\n    return 2\n";
        let usage = "print(f([1, 2]))\nf = lambda *a: 3\n";
        let c = choose(&[def, usage], Some("f"), "python").unwrap();
        assert_eq!((c.index, c.of, c.after, c.code), (0, 2, 1, def));
        // A self-correction: the later definition counts.
        assert_eq!(
            choose(&[def, fix, usage], Some("f"), "python")
                .unwrap()
                .code,
            fix
        );
        // A method of class Solution, `async def`, spaces before the parenthesis.
        assert!(defines(
            "class Solution:\n    def f (self, x):\n        pass",
            "f"
        ));
        assert!(defines("async def f(x): pass", "f"));
        assert!(!defines("def fx(x): pass\nfx = f", "f"));
        // Nothing defines it: the last block, so the trace says what failed.
        assert_eq!(choose(&[usage], Some("f"), "python").unwrap().code, usage);
        assert_eq!(choose(&[], Some("f"), "python"), None);
    }

    #[test]
    fn the_last_block_that_is_a_whole_program() {
        let prog = "n = int(input())\nprint(n * 2)\n";
        let data = "3\n";
        let call = "solve()\n";
        assert_eq!(choose(&[prog, data], None, "python").unwrap().code, prog);
        assert_eq!(choose(&[prog, call], None, "python").unwrap().code, prog);
        let cpp = "int main() { return 0; }\n";
        assert_eq!(choose(&[cpp, "5 6\n"], None, "cpp").unwrap().code, cpp);
    }

    #[test]
    fn the_prefix_runs_first_and_cannot_be_escaped() {
        let (src, added) = with_prefix(
            "def f():\n    return List\n",
            "from typing import List\n\"\"\"x\"\"\"\\\n",
        );
        assert_eq!(added, 1);
        assert_eq!(
            src,
            "exec(compile(\"from typing import List\\n\\\"\\\"\\\"x\\\"\\\"\\\"\\\\\\n\", \"prompt.py\", \"exec\"))\ndef f():\n    return List\n"
        );
        let (src, line) = with_prefix(
            "from __future__ import annotations\ndef f(): pass\n",
            "import os",
        );
        assert!(src.starts_with("from __future__ import annotations\nexec(compile(\"import os\""));
        assert_eq!(line, 2);
        assert_eq!(
            solution_lines("solution.py, line 3", line),
            "solution.py, line 2"
        );
        assert_eq!(
            solution_lines("solution.py, line 1", line),
            "solution.py, line 1"
        );
    }

    #[test]
    fn errors_keep_the_solutions_line_numbers() {
        let t = "  File \"solution.py\", line 3\n    x =\n       ^\nSyntaxError: invalid syntax";
        assert_eq!(
            solution_lines(t, 1),
            "  File \"solution.py\", line 2\n    x =\n       ^\nSyntaxError: invalid syntax"
        );
        assert_eq!(
            solution_lines(
                "NameError: name 'List' is not defined (solution.py, line 4)",
                1
            ),
            "NameError: name 'List' is not defined (solution.py, line 3)"
        );
        assert_eq!(
            solution_lines("line 3 of prompt.py", 1),
            "line 3 of prompt.py"
        );
    }
}
