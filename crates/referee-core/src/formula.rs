//! Arithmetic formulas for the `multi` grader's `calculate_output`.
//!
//! A formula such as `"min(1, 0.7*correct + 0.3*format) - 0.1 * abs(len)"` combines sub-grader
//! scores. It is parsed once (at spec compile time) into a compact postfix (RPN) program and then
//! evaluated per sample with a fixed-size stack array: no recursion and no heap allocation.
//!
//! # Grammar
//!
//! ```text
//! formula := expr
//! expr    := term (('+' | '-') term)*          left-associative
//! term    := unary (('*' | '/') unary)*        left-associative
//! unary   := ('-' | '+')* power
//! power   := primary ('^' unary)?              right-associative; the exponent may be signed
//! primary := number | variable | function '(' expr (',' expr)* ')' | '(' expr ')'
//! ```
//!
//! * **Precedence** is `^` > unary minus > `* /` > `+ -`, so `-2^2 = -4` and `2*3^2 = 18`. This
//!   is the mathematical convention and what Python's `**` does, which is what formula authors
//!   (and the Python reference graders) expect. `^` is exponentiation, never XOR.
//! * `^` is **right-associative** (`2^3^2 = 2^9 = 512`) as in mathematics and Python. Its right
//!   operand may carry signs, so `2^-1 = 0.5` and `2^-1^2 = 2^-(1^2)`.
//! * Unary signs may repeat (`--x = x`, `1 - -1 = 2`), like Python.
//! * **Numbers**: `1`, `1.5`, `.5`, `1.`, `1e-3`, `2E+2`. There is no `inf`/`nan` literal, and a
//!   literal that overflows to infinity (`1e999`) is rejected: a formula's constants are finite.
//!   A number immediately followed by letters, digits or dots (`2x`, `1e`, `1.2.3`) is invalid;
//!   there is no implicit multiplication.
//! * **Whitespace** (any Unicode whitespace) is allowed between any two tokens.
//! * **Variables** are `[A-Za-z_][A-Za-z0-9_]*` and must be one of the names given to
//!   [`Formula::parse`]; names are case-sensitive.
//! * **Functions** are lowercase and case-sensitive: `min`, `max` (1 or more arguments), `abs`,
//!   `floor`, `ceil`, `exp`, `sqrt`, `log` (natural logarithm) (exactly 1 argument). A name
//!   followed by `(` is always a call. A bare name is looked up as a variable first, so a
//!   sub-grader called `max` can be used as `max` (and `max(max, 1)` still calls the function);
//!   a bare function name that is not a variable is an error.
//! * **Nesting** is limited to 64 levels; each parenthesised group, function call and `^`
//!   exponent opens one level. The limit bounds parser recursion and lets evaluation use a fixed
//!   `3 * (64 + 1)`-slot stack array (the worst-case stack height; `min`/`max` are compiled
//!   pairwise so they do not need one slot per argument).
//!
//! # Evaluation
//!
//! Plain IEEE-754 `f64` arithmetic; nothing is clamped or hidden, because the caller turns a
//! non-finite result into an error status: `x/0 = ±inf`, `0/0 = NaN`, `log(0) = -inf`,
//! `log(-1) = sqrt(-1) = NaN`, `exp(1000) = inf`, `^` is `f64::powf`. Unlike `f64::min`/`max`,
//! `min` and `max` propagate NaN, so a NaN sub-score is never silently discarded. A value missing
//! from the slice passed to [`Formula::eval`] evaluates as NaN rather than panicking.
//!
//! # Errors
//!
//! [`Formula::parse`] reports every error it can find, sorted by byte offset: unknown variables
//! (with a "did you mean" when a known name is close), unknown functions, wrong arity, stray or
//! unexpected tokens, invalid numbers, unbalanced parentheses, the empty formula and excessive
//! nesting. After an error the parser substitutes a placeholder and keeps going (an unexpected
//! token is reported once and the parse resumes at the next operand), so `foo + bar + (` reports
//! both unknown variables and the unclosed parenthesis.

use std::fmt;

/// Maximum nesting depth: parenthesised groups, function calls and `^` exponents.
const MAX_DEPTH: usize = 64;

/// Evaluation stack size. Within one nesting level at most three values wait on the stack (the
/// left operand of `+ -`, the left operand of `* /`, and either a `min`/`max` accumulator or the
/// base of a `^`) before the next level starts; a leaf level holds at most three as well.
const STACK_CAP: usize = 3 * (MAX_DEPTH + 1);

const FUNCTION_NAMES: [&str; 8] = ["min", "max", "abs", "floor", "ceil", "exp", "sqrt", "log"];

/// One instruction of the postfix program.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Const(f64),
    Var(usize),
    Neg,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Min,
    Max,
    Abs,
    Floor,
    Ceil,
    Exp,
    Sqrt,
    Ln,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Min,
    Max,
    Abs,
    Floor,
    Ceil,
    Exp,
    Sqrt,
    Log,
}

impl Func {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "min" => Func::Min,
            "max" => Func::Max,
            "abs" => Func::Abs,
            "floor" => Func::Floor,
            "ceil" => Func::Ceil,
            "exp" => Func::Exp,
            "sqrt" => Func::Sqrt,
            "log" => Func::Log,
            _ => return None,
        })
    }

    /// The instruction of a one-argument function; `None` for the variadic `min`/`max`.
    fn unary_op(self) -> Option<Op> {
        match self {
            Func::Min | Func::Max => None,
            Func::Abs => Some(Op::Abs),
            Func::Floor => Some(Op::Floor),
            Func::Ceil => Some(Op::Ceil),
            Func::Exp => Some(Op::Exp),
            Func::Sqrt => Some(Op::Sqrt),
            Func::Log => Some(Op::Ln),
        }
    }
}

/// A compiled formula: parsed once at spec compile time, evaluated per sample.
#[derive(Debug, Clone)]
pub struct Formula {
    program: Box<[Op]>,
    used: Box<[usize]>,
}

/// A problem found while parsing a formula.
#[derive(Debug, Clone, PartialEq)]
pub struct FormulaError {
    /// Byte offset in the source.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for FormulaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for FormulaError {}

impl Formula {
    /// `vars` are the allowed variable names; index i of `vars` is index i of the values passed
    /// to eval. Collects every error it can and returns them all (sorted by offset); a formula is
    /// only returned when there are none.
    pub fn parse(src: &str, vars: &[&str]) -> Result<Formula, Vec<FormulaError>> {
        compile(src, vars).0
    }

    /// Evaluates with `values[i]` bound to `vars[i]` (a missing value reads as NaN). May return
    /// NaN or ±inf; see the module docs.
    pub fn eval(&self, values: &[f64]) -> f64 {
        let mut stack = [0.0_f64; STACK_CAP];
        let mut sp = 0;
        for &op in &*self.program {
            match op {
                Op::Const(c) => {
                    stack[sp] = c;
                    sp += 1;
                }
                Op::Var(i) => {
                    stack[sp] = values.get(i).copied().unwrap_or(f64::NAN);
                    sp += 1;
                }
                Op::Neg | Op::Abs | Op::Floor | Op::Ceil | Op::Exp | Op::Sqrt | Op::Ln => {
                    let x = &mut stack[sp - 1];
                    *x = match op {
                        Op::Neg => -*x,
                        Op::Abs => x.abs(),
                        Op::Floor => x.floor(),
                        Op::Ceil => x.ceil(),
                        Op::Exp => x.exp(),
                        Op::Sqrt => x.sqrt(),
                        _ => x.ln(),
                    };
                }
                Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Pow | Op::Min | Op::Max => {
                    sp -= 1;
                    let b = stack[sp];
                    let a = &mut stack[sp - 1];
                    *a = match op {
                        Op::Add => *a + b,
                        Op::Sub => *a - b,
                        Op::Mul => *a * b,
                        Op::Div => *a / b,
                        Op::Pow => a.powf(b),
                        _ if a.is_nan() || b.is_nan() => f64::NAN,
                        Op::Min => a.min(b),
                        _ => a.max(b),
                    };
                }
            }
        }
        stack[0]
    }

    /// Indices (into vars) of the variables the formula actually uses, sorted, deduplicated.
    pub fn used_vars(&self) -> &[usize] {
        &self.used
    }
}

/// Parses `src`; also returns the program's maximum stack height (for tests).
fn compile(src: &str, vars: &[&str]) -> (Result<Formula, Vec<FormulaError>>, usize) {
    if src.trim().is_empty() {
        return (Err(vec![error(0, "empty formula".to_string())]), 0);
    }
    let mut p = Parser {
        src,
        vars,
        toks: lex(src),
        pos: 0,
        errors: Vec::new(),
        program: Vec::new(),
        height: 0,
        max_height: 0,
    };
    p.parse_seq(0, Ctx::Top);
    if p.errors.is_empty() {
        // Guaranteed by the grammar and the nesting limit; checked so that eval cannot panic.
        debug_assert_eq!(p.height, 1);
        debug_assert!(p.max_height <= STACK_CAP);
        if p.height != 1 || p.max_height > STACK_CAP {
            p.error(0, "formula is too complex to evaluate".to_string());
        }
    }
    if !p.errors.is_empty() {
        p.errors.sort_by_key(|e| e.offset);
        return (Err(p.errors), p.max_height);
    }
    let mut used: Vec<usize> = p
        .program
        .iter()
        .filter_map(|op| match op {
            Op::Var(i) => Some(*i),
            _ => None,
        })
        .collect();
    used.sort_unstable();
    used.dedup();
    let formula = Formula {
        program: p.program.into_boxed_slice(),
        used: used.into_boxed_slice(),
    };
    (Ok(formula), p.max_height)
}

fn error(offset: usize, message: String) -> FormulaError {
    FormulaError { offset, message }
}

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    Num(f64),
    /// A malformed number such as `2x` or `1.2.3`.
    BadNumber,
    Ident,
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    LParen,
    RParen,
    Comma,
    /// A run of characters that cannot start a token.
    Unknown,
    Eof,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Lexes the whole source; the last token is always `Eof`.
fn lex(src: &str) -> Vec<Token> {
    let bytes = src.as_bytes();
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let starts_token = |i: usize| {
        let b = at(i);
        matches!(b, b'+' | b'-' | b'*' | b'/' | b'^' | b'(' | b')' | b',')
            || is_ident_continue(b)
            || (b == b'.' && at(i + 1).is_ascii_digit())
    };
    let mut toks = Vec::new();
    let mut i = 0;
    while let Some(c) = src[i..].chars().next() {
        let start = i;
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        let single = match c {
            '+' => Some(Tok::Plus),
            '-' => Some(Tok::Minus),
            '*' => Some(Tok::Star),
            '/' => Some(Tok::Slash),
            '^' => Some(Tok::Caret),
            '(' => Some(Tok::LParen),
            ')' => Some(Tok::RParen),
            ',' => Some(Tok::Comma),
            _ => None,
        };
        let tok = if let Some(tok) = single {
            i += 1;
            tok
        } else if c.is_ascii_digit() || (c == '.' && at(i + 1).is_ascii_digit()) {
            while at(i).is_ascii_digit() {
                i += 1;
            }
            if at(i) == b'.' {
                i += 1;
                while at(i).is_ascii_digit() {
                    i += 1;
                }
            }
            if matches!(at(i), b'e' | b'E') {
                let mut j = i + 1;
                if matches!(at(j), b'+' | b'-') {
                    j += 1;
                }
                if at(j).is_ascii_digit() {
                    i = j;
                    while at(i).is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let end = i;
            while is_ident_continue(at(i)) || at(i) == b'.' {
                i += 1;
            }
            match src[start..i].parse::<f64>() {
                Ok(v) if i == end => Tok::Num(v),
                _ => Tok::BadNumber,
            }
        } else if is_ident_start(at(i)) {
            while is_ident_continue(at(i)) {
                i += 1;
            }
            Tok::Ident
        } else {
            i += c.len_utf8();
            while let Some(c) = src[i..].chars().next() {
                if c.is_whitespace() || starts_token(i) {
                    break;
                }
                i += c.len_utf8();
            }
            Tok::Unknown
        };
        toks.push(Token { tok, start, end: i });
    }
    toks.push(Token {
        tok: Tok::Eof,
        start: src.len(),
        end: src.len(),
    });
    toks
}

// ---------------------------------------------------------------------------------------------
// Parser: recursive descent emitting postfix code, with error recovery. Recursion only happens
// when entering a nesting level, which is bounded by MAX_DEPTH.

/// What may legitimately end an expression sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Only the end of input.
    Top,
    /// `)` of a parenthesised group.
    Paren,
    /// `,` or `)` of a function call.
    Call,
}

struct Parser<'a> {
    src: &'a str,
    vars: &'a [&'a str],
    toks: Vec<Token>,
    pos: usize,
    errors: Vec<FormulaError>,
    program: Vec<Op>,
    height: usize,
    max_height: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token {
        self.toks[self.pos]
    }

    fn advance(&mut self) {
        if self.peek().tok != Tok::Eof {
            self.pos += 1;
        }
    }

    fn text(&self, t: Token) -> &'a str {
        &self.src[t.start..t.end]
    }

    fn describe(&self, t: Token) -> String {
        if t.tok == Tok::Eof {
            "end of formula".to_string()
        } else {
            format!("`{}`", self.text(t))
        }
    }

    fn error(&mut self, offset: usize, message: String) {
        self.errors.push(error(offset, message));
    }

    fn emit(&mut self, op: Op) {
        match op {
            Op::Const(_) | Op::Var(_) => self.height += 1,
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Pow | Op::Min | Op::Max => {
                self.height = self.height.saturating_sub(1);
            }
            _ => {}
        }
        self.max_height = self.max_height.max(self.height);
        self.program.push(op);
    }

    /// Stands in for an operand that could not be parsed (the program is discarded anyway).
    fn placeholder(&mut self) {
        self.emit(Op::Const(f64::NAN));
    }

    fn starts_primary(&self) -> bool {
        matches!(
            self.peek().tok,
            Tok::Num(_) | Tok::BadNumber | Tok::Ident | Tok::LParen
        )
    }

    fn starts_operand(&self) -> bool {
        self.starts_primary() || matches!(self.peek().tok, Tok::Plus | Tok::Minus)
    }

    fn too_deep(&mut self, offset: usize) {
        self.error(
            offset,
            format!("nesting deeper than {MAX_DEPTH} levels (parentheses, calls and `^`)"),
        );
    }

    fn unclosed(&mut self, open: usize) {
        self.error(
            open,
            "unbalanced parentheses: `(` is never closed".to_string(),
        );
    }

    /// An expression followed by whatever `ctx` allows. Anything else is reported, skipped if it
    /// cannot start an operand, and parsing resumes with the next expression.
    fn parse_seq(&mut self, depth: usize, ctx: Ctx) {
        self.parse_expr(depth);
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Eof => return,
                Tok::RParen if ctx != Ctx::Top => return,
                Tok::Comma if ctx == Ctx::Call => return,
                Tok::RParen => {
                    self.error(t.start, "unbalanced parentheses: unmatched `)`".to_string());
                }
                Tok::Comma => self.error(
                    t.start,
                    "unexpected `,` outside a function call".to_string(),
                ),
                Tok::Unknown => self.unknown_chars(t),
                _ => {
                    let expected = match ctx {
                        Ctx::Top => "an operator",
                        Ctx::Paren => "an operator or `)`",
                        Ctx::Call => "an operator, `,` or `)`",
                    };
                    let found = self.describe(t);
                    self.error(t.start, format!("expected {expected}, found {found}"));
                }
            }
            if !self.starts_operand() {
                self.advance();
            }
            if self.starts_operand() {
                self.parse_expr(depth);
            }
        }
    }

    fn unknown_chars(&mut self, t: Token) {
        let text = self.text(t);
        let what = if text.chars().count() == 1 {
            "character"
        } else {
            "characters"
        };
        self.error(t.start, format!("unexpected {what} `{text}`"));
    }

    fn parse_expr(&mut self, depth: usize) {
        self.parse_term(depth);
        loop {
            let op = match self.peek().tok {
                Tok::Plus => Op::Add,
                Tok::Minus => Op::Sub,
                _ => return,
            };
            self.advance();
            self.parse_term(depth);
            self.emit(op);
        }
    }

    fn parse_term(&mut self, depth: usize) {
        self.parse_unary(depth);
        loop {
            let op = match self.peek().tok {
                Tok::Star => Op::Mul,
                Tok::Slash => Op::Div,
                _ => return,
            };
            self.advance();
            self.parse_unary(depth);
            self.emit(op);
        }
    }

    fn parse_unary(&mut self, depth: usize) {
        let mut negate = false;
        loop {
            match self.peek().tok {
                Tok::Minus => negate = !negate,
                Tok::Plus => {}
                _ => break,
            }
            self.advance();
        }
        self.parse_power(depth);
        if negate {
            self.emit(Op::Neg);
        }
    }

    fn parse_power(&mut self, depth: usize) {
        self.parse_primary(depth);
        let caret = self.peek();
        if caret.tok != Tok::Caret {
            return;
        }
        self.advance();
        if depth >= MAX_DEPTH {
            self.too_deep(caret.start);
            self.skip_operand();
            self.placeholder();
        } else {
            self.parse_unary(depth + 1);
        }
        self.emit(Op::Pow);
    }

    fn parse_primary(&mut self, depth: usize) {
        let mut skipped_unknown = false;
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Num(v) => {
                    self.advance();
                    if !v.is_finite() {
                        let text = self.text(t);
                        self.error(t.start, format!("number `{text}` is out of range"));
                    }
                    self.emit(Op::Const(v));
                }
                Tok::BadNumber => {
                    self.advance();
                    let text = self.text(t);
                    self.error(t.start, format!("invalid number `{text}`"));
                    self.placeholder();
                }
                Tok::Ident => self.parse_name(depth),
                Tok::LParen => {
                    self.advance();
                    if depth >= MAX_DEPTH {
                        self.too_deep(t.start);
                        self.skip_group(t.start);
                        self.placeholder();
                        return;
                    }
                    self.parse_seq(depth + 1, Ctx::Paren);
                    if self.peek().tok == Tok::RParen {
                        self.advance();
                    } else {
                        self.unclosed(t.start);
                    }
                }
                Tok::Unknown => {
                    self.advance();
                    self.unknown_chars(t);
                    skipped_unknown = true;
                    continue;
                }
                _ if skipped_unknown => self.placeholder(),
                _ => {
                    let found = self.describe(t);
                    let prev_star = self
                        .pos
                        .checked_sub(1)
                        .map(|p| self.toks[p])
                        .is_some_and(|p| p.tok == Tok::Star && p.end == t.start);
                    let message = if t.tok == Tok::Star && prev_star {
                        "`**` is not an operator; use `^` for powers".to_string()
                    } else {
                        format!("expected a number, variable, function call or `(`, found {found}")
                    };
                    self.error(t.start, message);
                    self.placeholder();
                }
            }
            return;
        }
    }

    /// A name: a call when followed by `(`, otherwise a variable.
    fn parse_name(&mut self, depth: usize) {
        let t = self.peek();
        self.advance();
        let name = self.text(t);
        if self.peek().tok == Tok::LParen {
            self.parse_call(t, depth);
            return;
        }
        if let Some(i) = self.vars.iter().position(|&v| v == name) {
            self.emit(Op::Var(i));
            return;
        }
        let message = if Func::from_name(name).is_some() {
            format!("`{name}` is a function, not a variable; call it as `{name}(...)`")
        } else {
            let hint = if let Some(s) = suggest(name, self.vars) {
                format!("did you mean `{s}`?")
            } else if self.vars.is_empty() {
                "no variables are defined".to_string()
            } else {
                format!("known variables: {}", name_list(self.vars))
            };
            format!("unknown variable `{name}`; {hint}")
        };
        self.error(t.start, message);
        self.placeholder();
    }

    fn parse_call(&mut self, name_tok: Token, depth: usize) {
        let name = self.text(name_tok);
        let open = self.peek();
        self.advance();
        let func = Func::from_name(name);
        if func.is_none() {
            let message = unknown_function_message(name, self.vars);
            self.error(name_tok.start, message);
        }
        if depth >= MAX_DEPTH {
            self.too_deep(open.start);
            self.skip_group(open.start);
            self.placeholder();
            return;
        }
        let mut argc = 0_usize;
        if self.peek().tok == Tok::RParen {
            self.advance();
        } else {
            loop {
                self.parse_seq(depth + 1, Ctx::Call);
                argc += 1;
                if argc >= 2 {
                    match func {
                        Some(Func::Min) => self.emit(Op::Min),
                        Some(Func::Max) => self.emit(Op::Max),
                        _ => {}
                    }
                }
                match self.peek().tok {
                    Tok::Comma => self.advance(),
                    Tok::RParen => {
                        self.advance();
                        break;
                    }
                    _ => {
                        self.unclosed(open.start);
                        break;
                    }
                }
            }
        }
        if let Some(f) = func {
            let variadic = f.unary_op().is_none();
            if variadic && argc == 0 {
                self.error(
                    name_tok.start,
                    format!("`{name}` takes at least 1 argument, got 0"),
                );
            } else if !variadic && argc != 1 {
                self.error(
                    name_tok.start,
                    format!("`{name}` takes exactly 1 argument, got {argc}"),
                );
            }
            if let (Some(op), 1) = (f.unary_op(), argc) {
                self.emit(op);
            }
        }
        if argc == 0 {
            self.placeholder();
        }
    }

    /// After a `(` that is too deep: skips to its matching `)` without recursing.
    fn skip_group(&mut self, open: usize) {
        let mut balance = 1_usize;
        loop {
            match self.peek().tok {
                Tok::LParen => balance += 1,
                Tok::RParen => {
                    balance -= 1;
                    if balance == 0 {
                        self.advance();
                        return;
                    }
                }
                Tok::Eof => {
                    self.unclosed(open);
                    return;
                }
                _ => {}
            }
            self.advance();
        }
    }

    /// After a `^` that is too deep: skips the (signed, possibly chained) exponent.
    fn skip_operand(&mut self) {
        let mut expect_operand = true;
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Plus | Tok::Minus if expect_operand => self.advance(),
                Tok::Caret => {
                    self.advance();
                    expect_operand = true;
                }
                Tok::LParen => {
                    self.advance();
                    self.skip_group(t.start);
                    expect_operand = false;
                }
                Tok::Num(_) | Tok::BadNumber | Tok::Ident | Tok::Unknown => {
                    self.advance();
                    expect_operand = false;
                }
                _ => return,
            }
        }
    }
}

fn unknown_function_message(name: &str, vars: &[&str]) -> String {
    if vars.contains(&name) {
        return format!(
            "`{name}` is a variable, not a function; there is no implicit multiplication, \
             write `{name} * (...)`"
        );
    }
    let hint = match (name, suggest(name, &FUNCTION_NAMES)) {
        ("ln", _) => "did you mean `log`? (`log` is the natural logarithm)".to_string(),
        ("pow", _) => "use `a ^ b` for powers".to_string(),
        (_, Some(s)) => format!("did you mean `{s}`?"),
        (_, None) => format!("available functions: {}", name_list(&FUNCTION_NAMES)),
    };
    format!("unknown function `{name}`; {hint}")
}

/// `` `a`, `b`, `c` ``, cut off after eight names.
fn name_list(names: &[&str]) -> String {
    let mut out: Vec<String> = names.iter().take(8).map(|n| format!("`{n}`")).collect();
    if names.len() > 8 {
        out.push("...".to_string());
    }
    out.join(", ")
}

/// The closest candidate, if close enough to be a plausible typo (case-insensitive optimal
/// string alignment distance of at most a third of the length, minimum one).
fn suggest<'c>(name: &str, candidates: &[&'c str]) -> Option<&'c str> {
    const MAX_LEN: usize = 64;
    if name.len() > MAX_LEN {
        return None;
    }
    let mut best: Option<(usize, &'c str)> = None;
    for &candidate in candidates {
        if candidate.len() > MAX_LEN {
            continue;
        }
        let d = distance(name, candidate);
        let longest = name.chars().count().max(candidate.chars().count());
        if d <= (longest / 3).max(1) && d < longest && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Case-insensitive optimal string alignment distance (Levenshtein plus adjacent transpositions,
/// so `emial` is one edit from `email`).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let width = b.len() + 1;
    let mut d = vec![0_usize; (a.len() + 1) * width];
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        d[i * width] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = v;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const VARS: [&str; 3] = ["x", "y", "z"];

    fn ev(src: &str) -> f64 {
        ev_with(src, &VARS, &[3.0, 4.0, 0.0])
    }

    fn ev_with(src: &str, vars: &[&str], values: &[f64]) -> f64 {
        match Formula::parse(src, vars) {
            Ok(f) => f.eval(values),
            Err(e) => panic!("{src:?} failed to parse: {e:?}"),
        }
    }

    fn errs(src: &str, vars: &[&str]) -> Vec<FormulaError> {
        match Formula::parse(src, vars) {
            Ok(_) => panic!("{src:?} parsed but should not"),
            Err(e) => e,
        }
    }

    /// (offset, message) pairs, for compact assertions.
    fn err_list(src: &str, vars: &[&str]) -> Vec<(usize, String)> {
        errs(src, vars)
            .into_iter()
            .map(|e| (e.offset, e.message))
            .collect()
    }

    fn assert_one_error(src: &str, vars: &[&str], offset: usize, needle: &str) {
        let e = errs(src, vars);
        assert_eq!(e.len(), 1, "{src:?}: {e:?}");
        assert_eq!(e[0].offset, offset, "{src:?}: {e:?}");
        assert!(e[0].message.contains(needle), "{src:?}: {e:?}");
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn precedence_and_associativity() {
        let cases: &[(&str, f64)] = &[
            ("1 + 2 * 3", 7.0),
            ("(1 + 2) * 3", 9.0),
            ("10 - 4 - 3", 3.0),
            ("24 / 4 / 2", 3.0),
            ("2 * 3 / 4", 1.5),
            ("1 - 2 + 3", 2.0),
            ("-2^2", -4.0),
            ("(-2)^2", 4.0),
            ("2^3^2", 512.0),
            ("(2^3)^2", 64.0),
            ("2^-1", 0.5),
            ("-2^-2", -0.25),
            ("2^-1^2", 0.5),
            ("2 * 3^2", 18.0),
            ("2^3 * 2", 16.0),
            ("-3 * 2", -6.0),
            ("--2", 2.0),
            ("- - -2", -2.0),
            ("+3", 3.0),
            ("1 - -1", 2.0),
            ("1 + +1", 2.0),
            ("-x^2", -9.0),
            ("-(x)", -3.0),
            ("x - y * z", 3.0),
            ("2 ^ (1 + 1) ^ 2", 16.0),
        ];
        for &(src, want) in cases {
            assert_eq!(ev(src), want, "{src}");
        }
    }

    #[test]
    fn numbers_and_whitespace() {
        let cases: &[(&str, f64)] = &[
            ("1", 1.0),
            ("1.5", 1.5),
            (".5", 0.5),
            ("1.", 1.0),
            ("1e-3", 1e-3),
            ("2E+2", 200.0),
            ("1.5e1", 15.0),
            ("0.25E2", 25.0),
            ("007", 7.0),
            (" \t\n 1 \n+\t2 ", 3.0),
            ("min ( 1 , 2 )", 1.0),
            ("\u{a0}1\u{2003}", 1.0),
        ];
        for &(src, want) in cases {
            assert_eq!(ev(src), want, "{src:?}");
        }
    }

    #[test]
    fn every_function() {
        let cases: &[(&str, f64)] = &[
            ("min(3)", 3.0),
            ("min(3, 1, 2)", 1.0),
            ("min(x, y)", 3.0),
            ("max(7)", 7.0),
            ("max(1, 5, 2)", 5.0),
            ("max(-1, -5)", -1.0),
            ("abs(-2.5)", 2.5),
            ("abs(2.5)", 2.5),
            ("floor(-1.5)", -2.0),
            ("floor(1.5)", 1.0),
            ("ceil(-1.5)", -1.0),
            ("ceil(1.2)", 2.0),
            ("exp(0)", 1.0),
            ("exp(1)", std::f64::consts::E),
            ("sqrt(9)", 3.0),
            ("log(1)", 0.0),
            ("log(exp(2))", 2.0),
            ("sqrt(x^2 + y^2)", 5.0),
            ("max(min(x, 1), 0)", 1.0),
            ("min(1, 0.7*1 + 0.3*1) - 0.1 * abs(-1)", 0.9),
        ];
        for &(src, want) in cases {
            assert!(close(ev(src), want), "{src}: {} != {want}", ev(src));
        }
    }

    #[test]
    fn variables_and_used_vars() {
        let vars = ["name", "email", "unused"];
        let f = Formula::parse("(name + email) / 2", &vars).unwrap();
        assert_eq!(f.eval(&[1.0, 0.5, 9.0]), 0.75);
        assert_eq!(f.used_vars(), &[0, 1]);

        let vars = ["len", "format", "correct"];
        let f = Formula::parse("min(1, 0.7*correct + 0.3*format) - 0.1 * abs(len)", &vars).unwrap();
        assert!(close(f.eval(&[-1.0, 1.0, 0.5]), 0.55));
        assert_eq!(f.used_vars(), &[0, 1, 2]);

        let f = Formula::parse("z * z + x - z", &VARS).unwrap();
        assert_eq!(f.used_vars(), &[0, 2]);
        let f = Formula::parse("1 + 2", &VARS).unwrap();
        assert!(f.used_vars().is_empty());

        // Case-sensitive names; underscores and digits allowed.
        assert_eq!(ev_with("A + a", &["a", "A"], &[1.0, 10.0]), 11.0);
        assert_eq!(ev_with("_g1 * 2", &["_g1"], &[4.0]), 8.0);
    }

    #[test]
    fn variables_named_like_functions() {
        // A bare name is a variable when declared; followed by `(` it is always a call.
        let vars = ["max", "log"];
        assert_eq!(ev_with("max + log", &vars, &[2.0, 3.0]), 5.0);
        assert_eq!(ev_with("max(max, 10)", &vars, &[2.0, 3.0]), 10.0);
        assert_eq!(ev_with("log(log)", &vars, &[2.0, 1.0]), 0.0);
        assert_one_error("min + 1", &VARS, 0, "`min` is a function, not a variable");
    }

    #[test]
    fn non_finite_results_are_not_hidden() {
        assert_eq!(ev("x / 0"), f64::INFINITY);
        assert_eq!(ev("-x / z"), f64::NEG_INFINITY);
        assert!(ev("0 / 0").is_nan());
        assert!(ev("z / z").is_nan());
        assert_eq!(ev("log(0)"), f64::NEG_INFINITY);
        assert!(ev("log(-1)").is_nan());
        assert!(ev("sqrt(-1)").is_nan());
        assert_eq!(ev("exp(1000)"), f64::INFINITY);
        assert!(ev("(-8)^(1/3)").is_nan());
        assert_eq!(ev("1e308 * 10"), f64::INFINITY);
        // min/max propagate NaN in either position.
        let vars = ["a", "b"];
        for src in [
            "min(a, b)",
            "min(b, a)",
            "max(a, b)",
            "max(b, a)",
            "min(1, a, 2)",
        ] {
            assert!(ev_with(src, &vars, &[f64::NAN, 1.0]).is_nan(), "{src}");
        }
        assert_eq!(ev_with("min(a, b)", &vars, &[f64::INFINITY, 1.0]), 1.0);
        // A missing value reads as NaN instead of panicking.
        let f = Formula::parse("a + b", &vars).unwrap();
        assert!(f.eval(&[1.0]).is_nan());
        assert!(f.eval(&[]).is_nan());
    }

    #[test]
    fn error_display() {
        let e = errs("name + emial", &["name", "email"]);
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].to_string(),
            "at 7: unknown variable `emial`; did you mean `email`?"
        );
    }

    #[test]
    fn did_you_mean() {
        let vars = ["correct", "format", "length", "relevance_score", "Email"];
        let cases = [
            ("corect", "correct"),
            ("fromat", "format"),
            ("lenght", "length"),
            ("relevence_scor", "relevance_score"),
            ("email", "Email"),
            ("CORRECT", "correct"),
        ];
        for (typo, want) in cases {
            assert_one_error(typo, &vars, 0, &format!("did you mean `{want}`?"));
        }
        // Nothing close: list the known names instead.
        assert_one_error("banana", &vars, 0, "known variables: `correct`, `format`");
        assert_one_error("q", &["x"], 0, "known variables: `x`");
        assert_one_error("q", &[], 0, "no variables are defined");
        // Functions too.
        assert_one_error(
            "sqr(4)",
            &[],
            0,
            "unknown function `sqr`; did you mean `sqrt`?",
        );
        assert_one_error("MIN(1)", &[], 0, "did you mean `min`?");
        assert_one_error("ln(1)", &[], 0, "did you mean `log`?");
        assert_one_error("pow(2)", &[], 0, "use `a ^ b`");
        assert_one_error("round(1)", &[], 0, "available functions: `min`, `max`");
    }

    #[test]
    fn error_kinds_with_offsets() {
        // Empty formula.
        assert_eq!(err_list("", &VARS), vec![(0, "empty formula".to_string())]);
        assert_eq!(
            err_list(" \t\n", &VARS),
            vec![(0, "empty formula".to_string())]
        );
        // Unknown variable / function, variable called as a function.
        assert_one_error("x + foo", &VARS, 4, "unknown variable `foo`");
        assert_one_error("1 + foo(2)", &VARS, 4, "unknown function `foo`");
        assert_one_error("x (y)", &VARS, 0, "`x` is a variable, not a function");
        // Arity.
        assert_one_error(
            "1 + min()",
            &VARS,
            4,
            "`min` takes at least 1 argument, got 0",
        );
        assert_one_error("max()", &VARS, 0, "`max` takes at least 1 argument, got 0");
        assert_one_error("abs()", &VARS, 0, "`abs` takes exactly 1 argument, got 0");
        assert_one_error(
            "x+sqrt(1, 2)",
            &VARS,
            2,
            "`sqrt` takes exactly 1 argument, got 2",
        );
        for f in ["abs", "floor", "ceil", "exp", "sqrt", "log"] {
            assert_one_error(&format!("{f}(1,2,3)"), &VARS, 0, "got 3");
        }
        // Stray tokens.
        assert_one_error("x y", &VARS, 2, "expected an operator, found `y`");
        assert_one_error("2(3)", &VARS, 1, "expected an operator, found `(`");
        assert_one_error("(x y)", &VARS, 3, "expected an operator or `)`, found `y`");
        assert_one_error("min(x y)", &VARS, 6, "expected an operator, `,` or `)`");
        assert_one_error("x, y", &VARS, 1, "unexpected `,` outside a function call");
        assert_one_error("(x, y)", &VARS, 2, "unexpected `,` outside a function call");
        assert_one_error("x + ", &VARS, 4, "found end of formula");
        assert_one_error(
            "* x",
            &VARS,
            0,
            "expected a number, variable, function call or `(`, found `*`",
        );
        assert_one_error("x */ y", &VARS, 3, "found `/`");
        assert_one_error("x ** 2", &VARS, 3, "use `^` for powers");
        assert_one_error("x ^", &VARS, 3, "found end of formula");
        assert_one_error("min(x,)", &VARS, 6, "found `)`");
        assert_one_error("x # y", &VARS, 2, "unexpected character `#`");
        assert_one_error("x + ## y", &VARS, 4, "unexpected characters `##`");
        assert_one_error("x == y", &VARS, 2, "unexpected characters `==`");
        assert_one_error("é + x", &VARS, 0, "unexpected character `é`");
        let e = err_list("é + q", &VARS);
        assert_eq!((e[0].0, e[1].0), (0, 5), "byte offsets: {e:?}");
        assert_one_error("x.y", &VARS, 1, "unexpected character `.`");
        // Invalid numbers.
        assert_one_error("2x", &VARS, 0, "invalid number `2x`");
        assert_one_error("1 + 1e", &VARS, 4, "invalid number `1e`");
        assert_one_error("1.2.3", &VARS, 0, "invalid number `1.2.3`");
        assert_one_error("1e999", &VARS, 0, "number `1e999` is out of range");
        // Unbalanced parentheses.
        assert_one_error("(x + 1", &VARS, 0, "`(` is never closed");
        assert_one_error("x + 1)", &VARS, 5, "unmatched `)`");
        assert_one_error("abs(x", &VARS, 3, "`(` is never closed");
        assert_one_error("()", &VARS, 1, "found `)`");
        assert_eq!(
            err_list("((x)", &VARS),
            vec![(0, "unbalanced parentheses: `(` is never closed".to_string())]
        );
        assert_eq!(err_list("x))", &VARS).len(), 2);
    }

    #[test]
    fn multiple_errors_at_once() {
        let e = err_list("foo + bar + (", &VARS);
        let offsets: Vec<usize> = e.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, vec![0, 6, 12, 13], "{e:?}");
        assert!(e[0].1.starts_with("unknown variable `foo`"));
        assert!(e[1].1.starts_with("unknown variable `bar`"));
        assert!(e[2].1.contains("`(` is never closed"));
        assert!(e[3].1.contains("found end of formula"));

        let e = err_list("abs(x, y) + mx(1) + q ) + 2e + $", &["x", "y", "max"]);
        let offsets: Vec<usize> = e.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, vec![0, 12, 20, 22, 26, 31], "{e:?}");
        assert!(e[1].1.contains("did you mean `max`?"), "{e:?}");

        // Errors are sorted by offset even when found out of order.
        let e = err_list("(foo", &VARS);
        assert_eq!(e.iter().map(|(o, _)| *o).collect::<Vec<_>>(), vec![0, 1]);
    }

    fn nested_parens(n: usize) -> String {
        format!("{}x{}", "(".repeat(n), ")".repeat(n))
    }

    #[test]
    fn nesting_limit() {
        assert_eq!(ev(&nested_parens(MAX_DEPTH)), 3.0);
        assert_one_error(
            &nested_parens(MAX_DEPTH + 1),
            &VARS,
            MAX_DEPTH,
            "nesting deeper than 64",
        );

        let calls = |n: usize| format!("{}x{}", "abs(".repeat(n), ")".repeat(n));
        assert_eq!(ev(&calls(MAX_DEPTH)), 3.0);
        assert_one_error(
            &calls(MAX_DEPTH + 1),
            &VARS,
            4 * MAX_DEPTH + 3,
            "nesting deeper",
        );

        // Each `^` exponent is a level: 65 operands (64 carets) are fine, 66 are not.
        let chain = |n: usize| vec!["1"; n].join("^");
        assert_eq!(ev(&chain(MAX_DEPTH + 1)), 1.0);
        assert_one_error(
            &chain(MAX_DEPTH + 2),
            &VARS,
            2 * MAX_DEPTH + 1,
            "nesting deeper",
        );
        assert_one_error(
            &format!("{}^-2^(3)^-x + y", chain(MAX_DEPTH + 1)),
            &VARS,
            2 * MAX_DEPTH + 1,
            "nesting deeper",
        );

        // Errors past the limit are still found, and the skip stops at the group's end.
        let src = format!("{} + foo", nested_parens(MAX_DEPTH + 1));
        assert_eq!(err_list(&src, &VARS).len(), 2);
        let src = format!("{}x{}", "(".repeat(MAX_DEPTH + 1), ")".repeat(MAX_DEPTH));
        let e = err_list(&src, &VARS);
        assert_eq!(e.len(), 2, "{e:?}");

        // Very deep input neither overflows the stack nor floods the error list.
        let e = errs(&nested_parens(100_000), &VARS);
        assert_eq!(e.len(), 1);
        // Each of the 65 reachable levels is reported as unclosed, nothing more.
        let e = errs(&"(".repeat(100_000), &VARS);
        assert_eq!(e.len(), MAX_DEPTH + 2, "{e:?}");
        let e = errs(&chain(100_000), &VARS);
        assert_eq!(e.len(), 1);
        // Long flat formulas and sign runs are not nesting.
        assert_eq!(ev(&vec!["1"; 10_000].join(" + ")), 10_000.0);
        assert_eq!(ev(&format!("{}1", "-".repeat(10_001))), -1.0);
    }

    #[test]
    fn worst_case_stack_fits() {
        // Every level keeps three values waiting: `x +`, `x *` and the `min` accumulator.
        let mut src = "x + x * x".to_string();
        for _ in 0..MAX_DEPTH {
            src = format!("x + x * min(x, {src})");
        }
        let (result, max_height) = compile(&src, &VARS);
        assert_eq!(max_height, STACK_CAP);
        assert_eq!(result.unwrap().eval(&[1.0, 0.0, 0.0]), 2.0);
        // `^` bases: the exponent and its parentheses are two levels, so the height stays lower.
        let mut src = "x + x * x".to_string();
        for _ in 0..MAX_DEPTH / 2 {
            src = format!("x + x * x ^ ({src})");
        }
        let (result, max_height) = compile(&src, &VARS);
        assert_eq!(max_height, 3 * (MAX_DEPTH / 2) + 3);
        assert_eq!(result.unwrap().eval(&[1.0, 0.0, 0.0]), 2.0);
    }

    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) as usize
        }
    }

    fn check_never_panics(src: &str, vars: &[&str]) -> bool {
        match Formula::parse(src, vars) {
            Ok(f) => {
                for values in [
                    &[0.0, 0.0, 0.0, 0.0, 0.0][..],
                    &[1.0, -2.0, 3.5, 1e308, -0.0],
                    &[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, 1.0],
                    &[],
                ] {
                    let _ = f.eval(values);
                }
                let used = f.used_vars();
                assert!(used.windows(2).all(|w| w[0] < w[1]), "{src:?}");
                assert!(used.iter().all(|&i| i < vars.len()), "{src:?}");
                true
            }
            Err(errors) => {
                assert!(!errors.is_empty(), "{src:?}");
                assert!(errors.windows(2).all(|w| w[0].offset <= w[1].offset));
                for e in &errors {
                    assert!(
                        e.offset <= src.len() && src.is_char_boundary(e.offset),
                        "{src:?}"
                    );
                    assert!(!e.message.is_empty());
                }
                false
            }
        }
    }

    /// A random, fully parenthesised formula and its value computed directly (same f64 ops in
    /// the same order, so the compiled program must agree bit for bit).
    fn generate(rng: &mut Lcg, depth: usize, out: &mut Vec<&'static str>) -> f64 {
        const VAR_NAMES: [&str; 5] = ["a", "b", "email", "max", "x_1"];
        const NUMS: [(&str, f64); 6] = [
            ("0", 0.0),
            ("1", 1.0),
            ("2.5", 2.5),
            (".5", 0.5),
            ("1e-3", 1e-3),
            ("2E+2", 200.0),
        ];
        let choice = if depth == 0 {
            rng.next() % 2
        } else {
            rng.next() % 8
        };
        match choice {
            0 => {
                let i = rng.next() % VAR_NAMES.len();
                out.push(VAR_NAMES[i]);
                FUZZ_VALUES[i]
            }
            1 => {
                let (text, v) = NUMS[rng.next() % NUMS.len()];
                out.push(text);
                v
            }
            2 | 3 => {
                out.push("(");
                let a = generate(rng, depth - 1, out);
                let op = ["+", "-", "*", "/", "^"][rng.next() % 5];
                out.extend([")", op, "("]);
                let b = generate(rng, depth - 1, out);
                out.push(")");
                match op {
                    "+" => a + b,
                    "-" => a - b,
                    "*" => a * b,
                    "/" => a / b,
                    _ => a.powf(b),
                }
            }
            4 => {
                out.extend(["-", "("]);
                let a = generate(rng, depth - 1, out);
                out.push(")");
                -a
            }
            5 => {
                let (name, f): (&str, fn(f64) -> f64) = [
                    ("abs", f64::abs as fn(f64) -> f64),
                    ("floor", f64::floor),
                    ("ceil", f64::ceil),
                    ("exp", f64::exp),
                    ("sqrt", f64::sqrt),
                    ("log", f64::ln),
                ][rng.next() % 6];
                out.extend([name, "("]);
                let a = generate(rng, depth - 1, out);
                out.push(")");
                f(a)
            }
            _ => {
                let is_min = rng.next() % 2 == 0;
                out.extend([if is_min { "min" } else { "max" }, "("]);
                let mut acc = generate(rng, depth - 1, out);
                for _ in 0..rng.next() % 3 {
                    out.push(",");
                    let b = generate(rng, depth - 1, out);
                    acc = if acc.is_nan() || b.is_nan() {
                        f64::NAN
                    } else if is_min {
                        acc.min(b)
                    } else {
                        acc.max(b)
                    };
                }
                out.push(")");
                acc
            }
        }
    }

    const FUZZ_VARS: [&str; 5] = ["a", "b", "email", "max", "x_1"];
    const FUZZ_VALUES: [f64; 5] = [1.5, -2.0, 0.25, 3.0, 7.0];

    fn same(x: f64, y: f64) -> bool {
        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
    }

    #[test]
    fn fuzz_parse_and_eval_never_panic() {
        const TOKENS: &[&str] = &[
            "a", "b", "email", "max", "x_1", "foo", "min", "abs", "floor", "ceil", "exp", "sqrt",
            "log", "Min", "(", "(", "(", ")", ")", ")", ",", "+", "-", "*", "/", "^", "^", "1",
            "0", "2.5", ".5", "1.", "1e-3", "2E+2", "1e999", "2x", "1.2.3", "1e", ".", "#", "é",
            "**", " ", "\t", "",
        ];
        const CHARS: &[char] = &[
            'a', 'b', 'e', 'E', 'm', 'i', 'n', '_', '0', '1', '9', '.', '+', '-', '*', '/', '^',
            '(', ')', ',', ' ', '#', 'é', '€', '\u{a0}', '\n',
        ];
        let mut rng = Lcg(0x5eed);
        let (mut parsed, mut generated) = (0, 0);
        for round in 0..40_000 {
            let mut toks: Vec<&str> = Vec::new();
            if round % 2 == 0 {
                // Valid formula: must parse and match the directly computed value.
                let depth = rng.next() % 6;
                let want = generate(&mut rng, depth, &mut toks);
                let src = toks.join(" ");
                let f = Formula::parse(&src, &FUZZ_VARS).unwrap();
                assert!(same(f.eval(&FUZZ_VALUES), want), "{src}");
                generated += 1;
                // Then mutate it: replace, insert or delete a few tokens.
                for _ in 0..=rng.next() % 3 {
                    let i = rng.next() % (toks.len() + 1);
                    let t = TOKENS[rng.next() % TOKENS.len()];
                    match rng.next() % 3 {
                        0 if i < toks.len() => toks[i] = t,
                        1 if i < toks.len() => {
                            toks.remove(i);
                        }
                        _ => toks.insert(i, t),
                    }
                }
            } else {
                let len = if round % 20 == 1 {
                    rng.next() % 300
                } else {
                    rng.next() % 24
                };
                for _ in 0..len {
                    toks.push(TOKENS[rng.next() % TOKENS.len()]);
                }
            }
            let mut src = String::new();
            for t in toks {
                src.push_str(t);
                if rng.next() % 3 == 0 {
                    src.push(' ');
                }
            }
            if check_never_panics(&src, &FUZZ_VARS) {
                parsed += 1;
                // Wrapping a valid formula in parentheses changes nothing but its depth.
                let f = Formula::parse(&src, &FUZZ_VARS).unwrap();
                match Formula::parse(&format!("({src})"), &FUZZ_VARS) {
                    Ok(w) => assert!(same(f.eval(&FUZZ_VALUES), w.eval(&FUZZ_VALUES)), "{src}"),
                    Err(e) => assert!(e.iter().all(|e| e.message.contains("nesting")), "{e:?}"),
                }
            }
        }
        assert_eq!(generated, 20_000);
        assert!(parsed > 1_000, "only {parsed} random formulas parsed");

        // Random characters, including multi-byte ones.
        for _ in 0..30_000 {
            let len = rng.next() % 40;
            let src: String = (0..len).map(|_| CHARS[rng.next() % CHARS.len()]).collect();
            check_never_panics(&src, &FUZZ_VARS);
        }
    }
}
