//! LaTeX and plain-text answers to [`Expr`]: a lexer that settles what a number is (separators,
//! decimal commas, scientific notation) and a recursive-descent parser with a depth cap.
//! Units come from a whitelist: text after a number is only dropped when it is a known unit, so
//! `1 \text{ or } 2` stays a hedge instead of becoming `1`.

use crate::expr::{Const, Expr, Func, Lit, Rel};
use crate::num::{q_from_decimal, Budget};
use crate::options::Limits;
use num_traits::Zero;

/// Why an answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// Not math: the message says where it stopped.
    Syntax(String),
    /// A cap was hit (length, depth).
    TooComplex(&'static str),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Syntax(m) => write!(f, "{m}"),
            ParseError::TooComplex(m) => write!(f, "too complex: {m}"),
        }
    }
}

/// A parsed answer.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub(crate) expr: Expr,
    /// The answer as normalised text, for plain-text comparison (`\text{(C)}` → `c`).
    pub(crate) text: String,
    /// Units written after numbers, canonical (`cm`, `hour`): stripped for the value, kept so
    /// that `5 \text{ km}` is not `5 \text{ m}`.
    pub(crate) units: Vec<String>,
}

impl Parsed {
    /// The canonical form shown in explanations.
    pub fn canonical(&self) -> String {
        crate::canon::show(&self.expr)
    }
}

/// Parses a bare answer with default limits.
pub fn parse(s: &str) -> Result<Parsed, ParseError> {
    parse_with(s, &Limits::default(), &[])
}

pub(crate) fn parse_with(
    s: &str,
    limits: &Limits,
    extra_units: &[String],
) -> Result<Parsed, ParseError> {
    if s.len() > limits.max_answer_bytes {
        return Err(ParseError::TooComplex("answer too long"));
    }
    let text = normalize_text(s);
    let (toks, mut units) = Lexer::new(s, extra_units).run(limits)?;
    units.sort_unstable();
    units.dedup();
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        max_depth: limits.max_depth,
        budget: Budget::new(*limits),
    };
    let expr = p.top()?;
    Ok(Parsed { expr, text, units })
}

/// Lower case, without LaTeX text wrappers, punctuation and spaces: `\text{(C)}` → `c`.
pub(crate) fn normalize_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let mut name = String::new();
            while let Some(&d) = chars.peek() {
                if d.is_ascii_alphabetic() {
                    name.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            if matches!(
                name.as_str(),
                "text"
                    | "textbf"
                    | "textit"
                    | "mathrm"
                    | "mathbf"
                    | "mbox"
                    | "emph"
                    | "textrm"
                    | "left"
                    | "right"
                    | "displaystyle"
                    | "quad"
                    | "qquad"
                    | "boxed"
            ) || name.is_empty()
            {
                continue;
            }
            out.push_str(&name.to_lowercase());
        } else if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if matches!(c, '.' | ',')
            && out.ends_with(|p: char| p.is_ascii_digit())
            && chars.peek().is_some_and(char::is_ascii_digit)
        {
            // `1.5 million` is not `15 million`.
            out.push(c);
        } else if matches!(c, '+' | '-' | '=' | '<' | '>' | '/' | '^' | '*' | '|') {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// Digits of the integer part, digits after the point, exponent.
    Num(String, Option<String>, i64),
    /// A repeating decimal: integer digits, fixed fraction digits, repeating digits.
    Repeating(String, String, String),
    Ident(String),
    /// A run of two or more letters that is not a known name: plain text.
    Word(String),
    Cmd(String),
    Sym(char),
    /// `\{` and `\}`.
    SetOpen,
    SetClose,
    /// `or`, `and`, `\text{ or }`: a list separator.
    /// `or` (true) or `and` (false).
    Conj(bool),
    Percent,
    Degree,
    Begin(String),
    End(String),
    RowSep,
    Amp,
}

struct Lexer<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    out: Vec<Tok>,
    extra_units: &'a [String],
    /// Inside `\text{..}`: single-letter units are read as units only there.
    in_text: usize,
    /// Brace depth at which each open `\text{` started.
    text_stack: Vec<usize>,
    brace: usize,
    /// Open `(` and `[` (a bare comma inside them is never a thousands separator).
    brackets: usize,
    /// Canonical units seen (see [`canonical_unit`]).
    units: Vec<String>,
    /// A pending `square`/`cubic` for the next unit.
    unit_power: u8,
    /// Where the last skipped unit word ended, so a `^2` after its `\text{}` goes with it.
    unit_end: usize,
}

const UNITS: &[&str] = &[
    "cm",
    "mm",
    "km",
    "m",
    "meter",
    "meters",
    "metre",
    "metres",
    "centimeter",
    "centimeters",
    "millimeter",
    "millimeters",
    "kilometer",
    "kilometers",
    "in",
    "inch",
    "inches",
    "ft",
    "foot",
    "feet",
    "yd",
    "yard",
    "yards",
    "mi",
    "mile",
    "miles",
    "kg",
    "g",
    "mg",
    "gram",
    "grams",
    "kilogram",
    "kilograms",
    "lb",
    "lbs",
    "pound",
    "pounds",
    "oz",
    "ounce",
    "ounces",
    "ton",
    "tons",
    "l",
    "ml",
    "liter",
    "liters",
    "litre",
    "litres",
    "gallon",
    "gallons",
    "quart",
    "quarts",
    "pint",
    "pints",
    "cup",
    "cups",
    "s",
    "sec",
    "second",
    "seconds",
    "min",
    "minute",
    "minutes",
    "h",
    "hr",
    "hrs",
    "hour",
    "hours",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "dollar",
    "dollars",
    "cent",
    "cents",
    "euro",
    "euros",
    "mph",
    "kmh",
    "unit",
    "units",
    "sq",
    "square",
    "cubic",
    "rad",
    "radian",
    "radians",
    "ev",
    "kev",
    "mev",
    "j",
    "kj",
    "n",
    "kn",
    "w",
    "kw",
    "kwh",
    "pa",
    "kpa",
    "atm",
    "hz",
    "khz",
    "mhz",
    "v",
    "mol",
    "cal",
    "kcal",
    "ohm",
    "ohms",
    "k",
    "kelvin",
    "squnits",
    "inches",
    "km/h",
    "m/s",
    "percent",
    "percentage",
    "pct",
    "degree",
    "degrees",
];

/// One spelling per unit (`centimeters` → `cm`); `None` for modifiers and generic words
/// (`square`, `units`) and for `extra_units`, which say nothing comparable.
fn canonical_unit(w: &str) -> Option<&'static str> {
    const GROUPS: &[&[&str]] = &[
        &[
            "cm",
            "centimeter",
            "centimeters",
            "centimetre",
            "centimetres",
        ],
        &["mm", "millimeter", "millimeters"],
        &["km", "kilometer", "kilometers"],
        &["m", "meter", "meters", "metre", "metres"],
        &["in", "inch", "inches"],
        &["ft", "foot", "feet"],
        &["yd", "yard", "yards"],
        &["mi", "mile", "miles"],
        &["kg", "kilogram", "kilograms"],
        &["g", "gram", "grams"],
        &["mg"],
        &["lb", "lbs", "pound", "pounds"],
        &["oz", "ounce", "ounces"],
        &["ton", "tons"],
        &["l", "liter", "liters", "litre", "litres"],
        &["ml"],
        &["gallon", "gallons"],
        &["quart", "quarts"],
        &["pint", "pints"],
        &["cup", "cups"],
        &["s", "sec", "second", "seconds"],
        &["min", "minute", "minutes"],
        &["h", "hr", "hrs", "hour", "hours"],
        &["day", "days"],
        &["week", "weeks"],
        &["month", "months"],
        &["year", "years"],
        &["dollar", "dollars"],
        &["cent", "cents"],
        &["euro", "euros"],
        &["mph"],
        &["kmh", "km/h"],
        &["m/s"],
        &["rad", "radian", "radians"],
        &["ev"],
        &["kev"],
        &["mev"],
        &["j"],
        &["kj"],
        &["n"],
        &["w"],
        &["kw"],
        &["pa"],
        &["kpa"],
        &["hz"],
        &["v"],
        &["mol"],
        &["k", "kelvin"],
        &["khz"],
        &["mhz"],
        &["kn"],
        &["cal"],
        &["kcal"],
        &["kwh"],
        &["atm"],
        &["ohm", "ohms"],
    ];
    let l = w.to_ascii_lowercase();
    GROUPS
        .iter()
        .find(|g| g.contains(&l.as_str()))
        .map(|g| g[0])
}

fn is_unit(w: &str, extra: &[String]) -> bool {
    let l = w.to_ascii_lowercase();
    UNITS.contains(&l.as_str()) || extra.iter().any(|u| u.eq_ignore_ascii_case(&l))
}

const FUNCS: &[(&str, Func)] = &[
    ("sin", Func::Sin),
    ("cos", Func::Cos),
    ("tan", Func::Tan),
    ("cot", Func::Cot),
    ("sec", Func::Sec),
    ("csc", Func::Csc),
    ("arcsin", Func::Asin),
    ("arccos", Func::Acos),
    ("arctan", Func::Atan),
    ("sinh", Func::Sinh),
    ("cosh", Func::Cosh),
    ("tanh", Func::Tanh),
    ("ln", Func::Ln),
    ("log", Func::Log),
    ("exp", Func::Exp),
];

const GREEK: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Xi",
    "Sigma",
    "Phi",
    "Psi",
    "Omega",
];

impl<'a> Lexer<'a> {
    fn new(src: &'a str, extra_units: &'a [String]) -> Self {
        Lexer {
            s: src.as_bytes(),
            src,
            i: 0,
            out: Vec::new(),
            extra_units,
            in_text: 0,
            text_stack: Vec::new(),
            brace: 0,
            brackets: 0,
            units: Vec::new(),
            unit_power: 0,
            unit_end: usize::MAX,
        }
    }

    fn peek(&self, k: usize) -> u8 {
        self.s.get(self.i + k).copied().unwrap_or(0)
    }

    fn starts(&self, lit: &str) -> bool {
        self.s[self.i..].starts_with(lit.as_bytes())
    }

    fn err<T>(&self, m: &str) -> Result<T, ParseError> {
        Err(ParseError::Syntax(format!("{m} at byte {}", self.i)))
    }

    fn run(mut self, limits: &Limits) -> Result<(Vec<Tok>, Vec<String>), ParseError> {
        let mut depth = 0usize;
        while self.i < self.s.len() {
            let c = self.s[self.i];
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b'$' | b'~' | b'`' | b'"' => self.i += 1,
                b'0'..=b'9' => self.number()?,
                b'.' if self.peek(1).is_ascii_digit() && !self.prev_is_value() => self.number()?,
                b'.' if self.starts("...") && self.ellipsis_after_decimal() => self.i += 3,
                b'a'..=b'z' | b'A'..=b'Z' => self.word(),
                b'\\' => self.command()?,
                b'{' => {
                    depth += 1;
                    if depth > limits.max_depth {
                        return Err(ParseError::TooComplex("nesting too deep"));
                    }
                    self.brace += 1;
                    self.out.push(Tok::Sym('{'));
                    self.i += 1;
                }
                b'}' => {
                    depth = depth.saturating_sub(1);
                    self.i += 1;
                    if self.text_stack.last() == Some(&self.brace) {
                        // End of a \text{..}: transparent, no token.
                        self.text_stack.pop();
                        self.in_text -= 1;
                        if self.unit_end == self.i - 1 {
                            // `20 \text{ cm}^2`: the power belongs to the unit.
                            let before = self.i;
                            self.skip_unit_power();
                            let power = &self.src[before..self.i];
                            if let Some(last) = self.units.last_mut() {
                                if power.contains(['2', '²']) {
                                    last.push_str("^2");
                                } else if power.contains(['3', '³']) {
                                    last.push_str("^3");
                                }
                            }
                        }
                    } else {
                        self.out.push(Tok::Sym('}'));
                    }
                    self.brace = self.brace.saturating_sub(1);
                }
                b'%' => {
                    self.out.push(Tok::Percent);
                    self.i += 1;
                }
                b'&' => {
                    self.out.push(Tok::Amp);
                    self.i += 1;
                }
                b'^' if self.caret_degree() => self.out.push(Tok::Degree),
                b'<' | b'>' | b'!' if self.peek(1) == b'=' => {
                    self.out.push(Tok::Cmd(
                        match c {
                            b'<' => "le",
                            b'>' => "ge",
                            _ => "ne",
                        }
                        .into(),
                    ));
                    self.i += 2;
                }
                b'+' | b'-' | b'*' | b'/' | b'^' | b'_' | b'(' | b')' | b'[' | b']' | b','
                | b';' | b'=' | b'<' | b'>' | b'!' | b'|' | b':' | b'\'' | b'.' | b'?' => {
                    match c {
                        b'(' | b'[' => self.brackets += 1,
                        b')' | b']' => self.brackets = self.brackets.saturating_sub(1),
                        _ => {}
                    }
                    self.out.push(Tok::Sym(c as char));
                    self.i += 1;
                }
                _ if c >= 0x80
                    && self.src[self.i..]
                        .chars()
                        .next()
                        .is_some_and(char::is_alphabetic)
                    && !self.src[self.i..].starts_with('π') =>
                {
                    self.word();
                }
                _ if c >= 0x80 => self.unicode()?,
                _ => return self.err("unexpected character"),
            }
        }
        if !self.text_stack.is_empty() {
            return self.err("unclosed \\text{");
        }
        Ok((self.out, self.units))
    }

    /// `= 0.333...`, `\approx 0.666\ldots`: an exact value followed by its expansion, cut off.
    /// The link is an approximation (`\frac13 = 0.333\ldots` reads as `\frac13 \approx
    /// 0.333`), so the exact part is the answer and the link must be a rounding or truncation
    /// of it. Anywhere else the ellipsis is not read (false): alone, `0.333\ldots` does not say
    /// which digits repeat, and in `1.5, 2.5, \ldots` it means "and so on".
    fn ellipsis_after_decimal(&mut self) -> bool {
        let n = self.out.len();
        if !matches!(self.out.last(), Some(Tok::Num(_, Some(f), 0)) if !f.is_empty()) {
            return false;
        }
        // Only right after `=` or `≈`.
        match n.checked_sub(2).map(|k| &self.out[k]) {
            Some(Tok::Sym('=')) => {
                self.out[n - 2] = Tok::Cmd("approx".into());
                true
            }
            Some(Tok::Cmd(c)) if c == "approx" => true,
            _ => false,
        }
    }

    /// `0.\overline{3}`, `0.1\overline{6}`, `0.\dot{3}`: a repeating decimal, exact. Called
    /// right after the command name; false (nothing consumed) when it is not one.
    fn repeating_decimal(&mut self) -> bool {
        let (int, frac) = match self.out.as_slice() {
            [.., Tok::Num(i, Some(f), 0)] => (i.clone(), f.clone()),
            [.., Tok::Num(i, None, 0), Tok::Sym('.')] => (i.clone(), String::new()),
            _ => return false,
        };
        if self.peek(0) != b'{' {
            return false;
        }
        let st = self.i + 1;
        let mut j = st;
        while self.s.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j == st || self.s.get(j) != Some(&b'}') || j - st > 30 || frac.len() > 30 {
            return false;
        }
        let rep = self.src[st..j].to_string();
        self.i = j + 1;
        if frac.is_empty() {
            self.out.pop();
        }
        self.out.pop();
        self.out.push(Tok::Repeating(int, frac, rep));
        true
    }

    /// Records a unit with its power: `cm^2`, `square cm` and `sq cm` are `cm^2`.
    fn note_unit(&mut self, w: &str) {
        let lw = w.to_ascii_lowercase();
        if matches!(lw.as_str(), "sq" | "square") {
            self.unit_power = 2;
            return;
        }
        if lw == "cubic" {
            self.unit_power = 3;
            return;
        }
        let pending = std::mem::take(&mut self.unit_power);
        // `m/s^2`: each part canonical with its power; a part we do not know drops the unit.
        let mut parts = Vec::new();
        for (k, part) in w.split('/').enumerate() {
            let power = if part.ends_with(['2', '²']) || part.ends_with("{2}") {
                2
            } else if part.ends_with(['3', '³']) || part.ends_with("{3}") {
                3
            } else if k == 0 {
                pending
            } else {
                0
            };
            let base = part.trim_end_matches(['^', '{', '}', '2', '3', '²', '³']);
            let Some(u) = canonical_unit(base) else {
                return;
            };
            parts.push(match power {
                2 | 3 => format!("{u}^{power}"),
                _ => u.to_string(),
            });
        }
        self.units.push(parts.join("/"));
    }

    fn prev_is_value(&self) -> bool {
        matches!(
            self.out.last(),
            Some(Tok::Num(..) | Tok::Ident(_) | Tok::Sym(')' | ']' | '}'))
        )
    }

    /// `^\circ`, `^{\circ}`: degrees.
    fn caret_degree(&mut self) -> bool {
        for lit in [
            "^\\circ",
            "^{\\circ}",
            "^ \\circ",
            "^{ \\circ }",
            "^{\\circ }",
        ] {
            if self.starts(lit) {
                self.i += lit.len();
                return true;
            }
        }
        false
    }

    fn unicode(&mut self) -> Result<(), ParseError> {
        let ch = self.src[self.i..].chars().next().unwrap_or('\u{fffd}');
        let n = ch.len_utf8();
        let tok = match ch {
            '\u{2212}' | '\u{2013}' | '\u{2012}' => Some(Tok::Sym('-')),
            '×' | '⋅' | '·' | '∙' => Some(Tok::Cmd("cdot".into())),
            '÷' => Some(Tok::Sym('/')),
            '≤' | '⩽' => Some(Tok::Cmd("le".into())),
            '≥' | '⩾' => Some(Tok::Cmd("ge".into())),
            '≠' => Some(Tok::Cmd("ne".into())),
            'π' => Some(Tok::Cmd("pi".into())),
            '∞' => Some(Tok::Cmd("infty".into())),
            '√' => Some(Tok::Cmd("sqrt".into())),
            '°' => Some(Tok::Degree),
            '∪' => Some(Tok::Cmd("cup".into())),
            '±' => Some(Tok::Cmd("pm".into())),
            '∓' => Some(Tok::Cmd("mp".into())),
            '∈' => Some(Tok::Cmd("in".into())),
            '∅' => Some(Tok::Cmd("emptyset".into())),
            '€' | '£' | '¥' | '₹' | '\u{a0}' | '\u{2009}' | '\u{202f}' | '\u{3000}' => None,
            '²' | '³' | '¹' => {
                // `x²`: a power.
                self.out.push(Tok::Sym('^'));
                let d = match ch {
                    '²' => "2",
                    '³' => "3",
                    _ => "1",
                };
                Some(Tok::Num(d.into(), None, 0))
            }
            '½' | '⅓' | '⅔' | '¼' | '¾' | '⅕' | '⅙' | '⅛' => {
                // `3½` reads as the mixed number 3 1/2.
                let (n, d) = match ch {
                    '½' => ("1", "2"),
                    '⅓' => ("1", "3"),
                    '⅔' => ("2", "3"),
                    '¼' => ("1", "4"),
                    '¾' => ("3", "4"),
                    '⅕' => ("1", "5"),
                    '⅙' => ("1", "6"),
                    _ => ("1", "8"),
                };
                self.out.push(Tok::Num(n.into(), None, 0));
                self.out.push(Tok::Sym('/'));
                Some(Tok::Num(d.into(), None, 0))
            }
            '０'..='９' => {
                // Full-width digits: rewrite the run as ASCII and lex it as a number.
                let mut digits = String::new();
                let mut j = self.i;
                for d in self.src[self.i..].chars() {
                    match d {
                        '０'..='９' => {
                            digits.push(char::from(b'0' + (d as u32 - '０' as u32) as u8));
                            j += d.len_utf8();
                        }
                        _ => break,
                    }
                }
                self.i = j;
                self.out.push(Tok::Num(digits, None, 0));
                return Ok(());
            }
            _ => return self.err("unexpected character"),
        };
        if let Some(t) = tok {
            self.out.push(t);
        }
        self.i += n;
        Ok(())
    }

    fn digits(&mut self) -> String {
        let st = self.i;
        while self.peek(0).is_ascii_digit() {
            self.i += 1;
        }
        self.src[st..self.i].to_string()
    }

    /// Exactly three digits next, and no fourth.
    fn group3_at(&self, at: usize) -> bool {
        let g = |k| self.s.get(at + k).copied().unwrap_or(0);
        g(0).is_ascii_digit()
            && g(1).is_ascii_digit()
            && g(2).is_ascii_digit()
            && !g(3).is_ascii_digit()
    }

    fn number(&mut self) -> Result<(), ParseError> {
        let mut int = self.digits();
        let mut frac: Option<String> = None;
        loop {
            // Thousands separators: `,`, `{,}`, `\,`, `\!`, `\ ` before exactly three digits.
            // Inside brackets a bare comma separates items: `(12,102)` is a pair.
            const SEPS: [&str; 11] = [
                ",\\! ", ",\\!", ",", "{,}", "{, }", " {,}", " {, }", "{,}\\!", "\\,", "\\!", "\\ ",
            ];
            let mut matched = false;
            if frac.is_none() && !int.is_empty() && !int.starts_with('0') {
                for sep in SEPS {
                    if sep.starts_with(',') && sep.len() == 1 && self.brackets > 0 {
                        continue;
                    }
                    if self.starts(sep) && self.group3_at(self.i + sep.len()) {
                        self.i += sep.len();
                        int.push_str(&self.digits());
                        matched = true;
                        break;
                    }
                }
            }
            if matched {
                continue;
            }
            break;
        }
        if frac.is_none() {
            if int == "0"
                && self.peek(0) == b','
                && self.group3_at(self.i + 1)
                && self.brackets == 0
            {
                // `0,111` can only be a decimal comma.
                self.i += 1;
                frac = Some(self.digits());
            } else if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
                self.i += 1;
                frac = Some(self.digits());
            } else if self.starts("{,}") && self.s.get(self.i + 3).is_some_and(u8::is_ascii_digit) {
                // A decimal comma in LaTeX: `3{,}5`.
                self.i += 3;
                frac = Some(self.digits());
            }
        }
        // Scientific notation `1.5e3`, `2E-4` (only directly attached).
        let mut exp = 0i64;
        if matches!(self.peek(0), b'e' | b'E') {
            let (sign, k) = match self.peek(1) {
                b'-' => (-1, 2),
                b'+' => (1, 2),
                _ => (1, 1),
            };
            if self.peek(k).is_ascii_digit() && !self.peek(k + 1).is_ascii_alphabetic() {
                let st = self.i + k;
                let mut j = st;
                while self.s.get(j).is_some_and(u8::is_ascii_digit) {
                    j += 1;
                }
                if !self.s.get(j).is_some_and(u8::is_ascii_alphabetic) {
                    let v: i64 = self.src[st..j].parse().unwrap_or(i64::MAX / 2).min(1 << 40);
                    exp = sign * v;
                    self.i = j;
                }
            }
        }
        if int.is_empty() && frac.as_deref().is_none_or(str::is_empty) {
            return self.err("empty number");
        }
        self.out.push(Tok::Num(int, frac, exp));
        Ok(())
    }

    fn word(&mut self) {
        let st = self.i;
        for ch in self.src[st..].chars() {
            if !ch.is_alphabetic() || ch == 'π' {
                break;
            }
            self.i += ch.len_utf8();
        }
        let w = &self.src[st..self.i];
        let lw = w.to_ascii_lowercase();
        let tok = match lw.as_str() {
            "or" => Tok::Conj(true),
            "and" => Tok::Conj(false),
            "pi" => Tok::Cmd("pi".into()),
            "inf" | "infty" | "infinity" => Tok::Cmd("infty".into()),
            "sqrt" => Tok::Cmd("sqrt".into()),
            "percent" | "percentage" | "pct" => Tok::Percent,
            "degree" | "degrees" => Tok::Degree,
            _ if FUNCS.iter().any(|(n, _)| *n == lw)
                && w.len() > 1
                && !(self.in_text > 0 && is_unit(w, self.extra_units) && self.after_value()) =>
            {
                Tok::Cmd(lw)
            }
            _ if w.len() == 1 => {
                if self.in_text > 0 && is_unit(w, self.extra_units) && self.after_value() {
                    let st = self.i - w.len();
                    self.skip_unit_power();
                    let src = self.src;
                    self.note_unit(&src[st..self.i]);
                    self.unit_end = self.i;
                    return;
                }
                Tok::Ident(w.to_string())
            }
            _ if is_unit(w, self.extra_units) && self.after_value() => {
                let st = self.i - w.len();
                self.skip_unit_power();
                let unit = self.src[st..self.i]
                    .trim_end_matches(['^', '{', '}', '2', '3'])
                    .to_string();
                self.note_unit(&unit);
                self.unit_end = self.i;
                return;
            }
            // `S_{MBCN}`: a subscript names a quantity, it is not prose.
            _ if self.out.ends_with(&[Tok::Sym('_'), Tok::Sym('{')]) => Tok::Ident(w.to_string()),
            _ => Tok::Word(w.to_string()),
        };
        self.out.push(tok);
    }

    /// A unit follows a value (`5 cm`, `5\text{ cm}`, `5^\circ\text{C}`).
    fn after_value(&self) -> bool {
        if matches!(self.out.last(), Some(Tok::Cmd(c)) if c == "pi" || c == "infty") {
            return true;
        }
        matches!(
            self.out.last(),
            Some(
                Tok::Num(..)
                    | Tok::Repeating(..)
                    | Tok::Sym(')' | '}' | ']')
                    | Tok::Degree
                    | Tok::Percent
                    | Tok::Ident(_)
            )
        )
    }

    /// `cm^2`, `cm^{3}` after a unit.
    fn skip_unit_power(&mut self) {
        for lit in ["^2", "^3", "^{2}", "^{3}", "²", "³"] {
            if self.starts(lit) {
                self.i += lit.len();
                break;
            }
        }
        // `m/s`, `km/h`, `m/s^2`: a compound unit.
        if self.peek(0) == b'/' {
            let st = self.i + 1;
            let mut j = st;
            while self.s.get(j).is_some_and(u8::is_ascii_alphabetic) {
                j += 1;
            }
            if j > st && is_unit(&self.src[st..j], self.extra_units) {
                self.i = j;
                self.skip_unit_power();
            }
        }
    }

    fn command(&mut self) -> Result<(), ParseError> {
        self.i += 1;
        let c = self.peek(0);
        if !c.is_ascii_alphabetic() {
            self.i += 1;
            match c {
                b'{' => {
                    self.brackets += 1;
                    self.out.push(Tok::SetOpen);
                }
                b'}' => {
                    self.brackets = self.brackets.saturating_sub(1);
                    self.out.push(Tok::SetClose);
                }
                b'%' => self.out.push(Tok::Percent),
                b'\\' => self.out.push(Tok::RowSep),
                b'$' => self.units.push("dollar".into()),
                b',' | b';' | b':' | b'!' | b' ' | b'(' | b')' | b'[' | b']' | b'>' => {}
                b'|' => self.out.push(Tok::Sym('|')),
                _ => return self.err("unknown command"),
            }
            return Ok(());
        }
        let st = self.i;
        while self.peek(0).is_ascii_alphabetic() {
            self.i += 1;
        }
        let name = self.src[st..self.i].to_string();
        if matches!(name.as_str(), "overline" | "dot" | "bar") && self.repeating_decimal() {
            return Ok(());
        }
        // `\mathbb{R}`: a set, not the letter R.
        if name == "mathbb" && self.peek(0) == b'{' && self.peek(2) == b'}' {
            let letter = self.peek(1);
            if letter.is_ascii_alphabetic() {
                self.i += 3;
                self.out.push(Tok::Cmd(format!("mathbb{}", letter as char)));
                return Ok(());
            }
        }
        match name.as_str() {
            "left" | "right" | "bigl" | "bigr" | "Bigl" | "Bigr" | "big" | "Big" | "biggl"
            | "biggr" | "displaystyle" | "textstyle" | "quad" | "qquad" | "limits" | "nolimits"
            | "boxed" | "fbox" | "mathit" | "mathsf" | "mathtt" | "vec" | "hat" | "tilde"
            | "mathcal" | "mathbb" | "mathbf" | "boldsymbol" | "bm" => {
                // Transparent wrappers: `\left(` is `(`; `\boxed{x}` inside an answer is `{x}`.
                if matches!(name.as_str(), "left" | "right") && self.peek(0) == b'.' {
                    self.i += 1;
                }
            }
            "text" | "textbf" | "textit" | "textrm" | "mathrm" | "mbox" | "emph" | "textnormal"
            | "operatorname" => {
                if self.peek(0) == b'{' {
                    self.i += 1;
                    self.brace += 1;
                    self.text_stack.push(self.brace);
                    self.in_text += 1;
                }
            }
            "begin" | "end" => {
                if self.peek(0) != b'{' {
                    return self.err("\\begin without an environment");
                }
                let st = self.i + 1;
                let Some(len) = self.src[st..].find('}') else {
                    return self.err("unclosed environment name");
                };
                let env = self.src[st..st + len].trim_end_matches('*').to_string();
                self.i = st + len + 1;
                if name == "begin" {
                    if env == "array" && self.peek(0) == b'{' {
                        // Column spec `{cc}`.
                        if let Some(l) = self.src[self.i..].find('}') {
                            self.i += l + 1;
                        }
                    }
                    self.out.push(Tok::Begin(env));
                } else {
                    self.out.push(Tok::End(env));
                }
            }
            "circ" | "degree" => self.out.push(Tok::Degree),
            "dollar" | "euro" | "pounds" | "cdotp" | "hspace" | "vspace" | "phantom" => {
                if matches!(name.as_str(), "hspace" | "vspace" | "phantom") && self.peek(0) == b'{'
                {
                    if let Some(l) = self.src[self.i..].find('}') {
                        self.i += l + 1;
                    }
                }
            }
            "lbrace" => self.out.push(Tok::SetOpen),
            "rbrace" => self.out.push(Tok::SetClose),
            "lvert" | "rvert" | "vert" | "mid" => self.out.push(Tok::Sym('|')),
            "ldots" | "cdots" | "dots" => {
                if !self.ellipsis_after_decimal() {
                    return self.err("ellipsis is not an answer");
                }
            }
            _ => {
                if self.in_text > 0 && is_unit(&name, self.extra_units) {
                    self.note_unit(&name);
                    return Ok(());
                }
                // `\quadx_{2}` (spaces stripped by a dataset): spacing, then the letters.
                for sp in ["qquad", "quad"] {
                    if name.len() > sp.len() && name.starts_with(sp) {
                        self.i = st + sp.len();
                        return Ok(());
                    }
                }
                self.out.push(Tok::Cmd(name));
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Parser

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    max_depth: usize,
    budget: Budget,
}

type PResult<T> = Result<T, ParseError>;

#[allow(clippy::unnecessary_box_returns)] // the point of it: shorthand for boxing children
fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn is_sym(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Sym(c))
    }

    fn is_cmd(&self, name: &str) -> bool {
        matches!(self.peek(), Some(Tok::Cmd(n)) if n == name)
    }

    fn eat_sym(&mut self, c: char) -> bool {
        if self.is_sym(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn err<T>(&self, m: &str) -> PResult<T> {
        Err(ParseError::Syntax(format!("{m} (token {})", self.pos)))
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(ParseError::TooComplex("nesting too deep"));
        }
        self.budget
            .charge(1)
            .map_err(|_| ParseError::TooComplex("parse step budget"))
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn top(&mut self) -> PResult<Expr> {
        // Trailing sentence punctuation: one full stop (`0.333...` keeps its dots and fails),
        // never `?` (`4?` is a question, not an answer).
        if self.toks.last() == Some(&Tok::Sym('.')) {
            self.toks.pop();
        }
        // `!` stays: `n!` is a factorial.
        while matches!(self.toks.last(), Some(Tok::Sym(',' | ';' | ':'))) {
            self.toks.pop();
        }
        // Leading `is`, `:` and similar lead-ins are not part of the answer.
        while matches!(self.peek(), Some(Tok::Sym(':'))) {
            self.pos += 1;
        }
        if self.toks.is_empty() {
            return self.err("empty answer");
        }
        if self.is_text_answer() {
            let words: Vec<&str> = self
                .toks
                .iter()
                .filter_map(|t| match t {
                    Tok::Word(w) => Some(w.as_str()),
                    _ => None,
                })
                .collect();
            if let ([Tok::Word(w)], [_]) = (self.toks.as_slice(), words.as_slice()) {
                if let Some(n) = number_word(w) {
                    return Ok(int_lit(&n.to_string()));
                }
            }
            return Ok(Expr::Text(String::new()));
        }
        // Multi-letter words in an otherwise mathematical answer are products of letters.
        let mut split = Vec::with_capacity(self.toks.len());
        for t in self.toks.drain(..) {
            match t {
                Tok::Word(w) => split.extend(w.chars().map(|c| Tok::Ident(c.to_string()))),
                t => split.push(t),
            }
        }
        self.toks = split;
        // A bare `1 \over 3` (the box's own braces were the group).
        if self.group_has_over() {
            self.toks.insert(0, Tok::Sym('{'));
            self.toks.push(Tok::Sym('}'));
        }
        let e = self.list()?;
        if self.pos < self.toks.len() {
            return self.err("unexpected token");
        }
        Ok(e)
    }

    /// Plain text: a word of four or more letters, or only words and punctuation.
    fn is_text_answer(&self) -> bool {
        let long_word = self
            .toks
            .iter()
            .any(|t| matches!(t, Tok::Word(w) if w.len() >= 4));
        let only_words = self.toks.iter().all(|t| {
            matches!(
                t,
                Tok::Word(_) | Tok::Ident(_) | Tok::Sym('(' | ')' | '.' | ',' | ':' | '\'' | '-')
            )
        }) && self.toks.iter().any(|t| matches!(t, Tok::Word(_)));
        long_word || only_words
    }

    fn at_separator(&self) -> bool {
        matches!(self.peek(), Some(Tok::Sym(',' | ';') | Tok::Conj(_)))
    }

    fn list(&mut self) -> PResult<Expr> {
        let first = self.item()?;
        if !self.at_separator() {
            return Ok(first);
        }
        let mut items = vec![first];
        let mut or = false;
        while self.at_separator() {
            // `1, 2, and 3`.
            while self.at_separator() {
                or |= self.peek() == Some(&Tok::Conj(true));
                self.pos += 1;
            }
            if self.peek().is_none() {
                // `3 or` with nothing after: unfinished, not the answer 3.
                if matches!(self.toks.get(self.pos.wrapping_sub(1)), Some(Tok::Conj(_))) {
                    return self.err("a list ends with a conjunction");
                }
                break;
            }
            items.push(self.item()?);
        }
        // `x < -1 or x > 2`: inequalities joined by `or` are a union of their sets.
        let inequality = |e: &Expr| matches!(e, Expr::Relation(_, r) if r.iter().all(|r| matches!(r, Rel::Lt | Rel::Le | Rel::Gt | Rel::Ge)));
        if or && items.iter().all(inequality) {
            return Ok(Expr::Union(items));
        }
        Ok(Expr::List(items))
    }

    fn relop(&self) -> Option<Rel> {
        match self.peek()? {
            Tok::Sym('=') => Some(Rel::Eq),
            Tok::Sym('<') => Some(Rel::Lt),
            Tok::Sym('>') => Some(Rel::Gt),
            Tok::Cmd(n) => match n.as_str() {
                "le" | "leq" | "leqslant" => Some(Rel::Le),
                "ge" | "geq" | "geqslant" => Some(Rel::Ge),
                "ne" | "neq" => Some(Rel::Ne),
                "approx" => Some(Rel::Approx),
                "equiv" | "in" | "coloneqq" => Some(Rel::Eq),
                "lt" => Some(Rel::Lt),
                "gt" => Some(Rel::Gt),
                _ => None,
            },
            _ => None,
        }
    }

    fn item(&mut self) -> PResult<Expr> {
        self.enter()?;
        let first = self.union()?;
        let mut terms = vec![first];
        let mut rels = Vec::new();
        while let Some(r) = self.relop() {
            self.pos += 1;
            rels.push(r);
            terms.push(self.union()?);
        }
        self.leave();
        Ok(if rels.is_empty() {
            terms.pop().unwrap_or(Expr::List(vec![]))
        } else {
            Expr::Relation(terms, rels)
        })
    }

    fn union(&mut self) -> PResult<Expr> {
        let first = self.additive()?;
        if self.is_cmd("setminus") || self.is_cmd("backslash") {
            // `\mathbb{R} \setminus \{0\}`.
            self.pos += 1;
            let removed = self.additive()?;
            return Ok(Expr::SetMinus(bx(first), bx(removed)));
        }
        let is_cup =
            |p: &Parser| p.is_cmd("cup") || matches!(p.peek(), Some(Tok::Ident(u)) if u == "U");
        if !is_cup(self) {
            return Ok(first);
        }
        let mut parts = vec![first];
        while is_cup(self) {
            self.pos += 1;
            parts.push(self.additive()?);
        }
        Ok(Expr::Union(parts))
    }

    fn additive(&mut self) -> PResult<Expr> {
        self.enter()?;
        let mut terms: Vec<Expr> = Vec::new();
        let mut pm: Option<Expr> = None;
        let mut first = true;
        loop {
            let sign = match self.peek() {
                Some(Tok::Sym('+')) => Some(1),
                Some(Tok::Sym('-')) => Some(-1),
                Some(Tok::Cmd(n)) if n == "pm" || n == "mp" => Some(0),
                _ => None,
            };
            if sign.is_none() && !first {
                break;
            }
            if let Some(sg) = sign {
                self.pos += 1;
                let t = self.term()?;
                match sg {
                    1 => terms.push(t),
                    -1 => terms.push(Expr::Neg(bx(t))),
                    _ => {
                        if pm.is_some() {
                            return self.err("two ± in one expression");
                        }
                        pm = Some(t);
                    }
                }
            } else {
                terms.push(self.term()?);
            }
            first = false;
        }
        self.leave();
        let sum = match terms.len() {
            0 => None,
            1 => terms.pop(),
            _ => Some(Expr::Add(terms)),
        };
        Ok(match pm {
            Some(b) => Expr::PlusMinus(sum.map(bx), bx(b)),
            None => sum.ok_or_else(|| ParseError::Syntax("empty expression".into()))?,
        })
    }

    fn starts_primary(&self) -> bool {
        match self.peek() {
            Some(
                Tok::Num(..)
                | Tok::Repeating(..)
                | Tok::Ident(_)
                | Tok::SetOpen
                | Tok::Begin(_)
                | Tok::Sym('(' | '{' | '[' | '|'),
            ) => true,
            Some(Tok::Cmd(n)) => !matches!(
                n.as_str(),
                "cdot"
                    | "over"
                    | "setminus"
                    | "backslash"
                    | "times"
                    | "div"
                    | "pm"
                    | "mp"
                    | "cup"
                    | "le"
                    | "leq"
                    | "leqslant"
                    | "ge"
                    | "geq"
                    | "geqslant"
                    | "ne"
                    | "neq"
                    | "approx"
                    | "equiv"
                    | "in"
                    | "lt"
                    | "gt"
                    | "rangle"
                    | "rfloor"
                    | "rceil"
                    | "coloneqq"
                    | "to"
                    | "right"
            ),
            _ => false,
        }
    }

    fn term(&mut self) -> PResult<Expr> {
        self.enter()?;
        let mut factors = vec![self.unary()?];
        loop {
            if self.is_cmd("cdot") || self.is_cmd("times") || self.is_sym('*') {
                self.pos += 1;
                factors.push(self.unary()?);
            } else if (self.is_sym(':') && self.pos > 0) || self.is_sym('/') || self.is_cmd("div") {
                let ratio = self.is_sym(':');
                self.pos += 1;
                let d = self.unary()?;
                let n = if factors.len() == 1 {
                    factors.pop().unwrap_or(Expr::List(vec![]))
                } else {
                    Expr::Mul(std::mem::take(&mut factors))
                };
                factors.push(if ratio {
                    Expr::Ratio(bx(n), bx(d))
                } else {
                    Expr::Frac(bx(n), bx(d))
                });
            } else if self.starts_primary() && !self.is_sym('|') {
                // Implicit multiplication, and mixed numbers `7\frac{3}{4}`, `7 3/4`.
                if factors.len() == 1 {
                    if let Expr::Num(Lit { places: None, .. }) = &factors[0] {
                        if let Some(m) = self.try_mixed(&factors[0])? {
                            factors[0] = self.postfix_ops(m)?;
                            continue;
                        }
                        if matches!(self.peek(), Some(Tok::Num(..))) {
                            return self.err("two numbers in a row");
                        }
                    }
                }
                if matches!(self.peek(), Some(Tok::Num(..)))
                    && matches!(factors.last(), Some(Expr::Num(_)))
                {
                    return self.err("two numbers in a row");
                }
                factors.push(self.unary()?);
            } else {
                break;
            }
        }
        self.leave();
        Ok(if factors.len() == 1 {
            factors.pop().unwrap_or(Expr::List(vec![]))
        } else {
            Expr::Mul(factors)
        })
    }

    /// `7\frac{3}{4}` or `7 3/4` where the fraction is proper and made of integers.
    fn try_mixed(&mut self, whole: &Expr) -> PResult<Option<Expr>> {
        let save = self.pos;
        let frac = if self.is_cmd("frac") || self.is_cmd("dfrac") || self.is_cmd("tfrac") {
            self.primary()?
        } else if matches!(self.peek(), Some(Tok::Num(_, None, 0)))
            && self.peek_at(1) == Some(&Tok::Sym('/'))
            && matches!(self.peek_at(2), Some(Tok::Num(_, None, 0)))
        {
            let n = self.primary()?;
            self.pos += 1;
            let d = self.primary()?;
            Expr::Frac(bx(n), bx(d))
        } else {
            return Ok(None);
        };
        if let Expr::Frac(n, d) = &frac {
            if let (Expr::Num(a), Expr::Num(b)) = (&**n, &**d) {
                if a.places.is_none()
                    && b.places.is_none()
                    && a.value < b.value
                    && !a.value.is_zero()
                {
                    return Ok(Some(Expr::Mixed(bx(whole.clone()), bx(frac))));
                }
            }
        }
        self.pos = save;
        Ok(None)
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let e = if self.eat_sym('-') {
            Expr::Neg(bx(self.unary()?))
        } else if self.eat_sym('+') {
            self.unary()?
        } else {
            self.power()?
        };
        self.leave();
        Ok(e)
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.postfix()?;
        if self.eat_sym('^') {
            let exp = self.script_arg()?;
            let e = Expr::Pow(bx(base), bx(exp));
            return self.postfix_ops(e);
        }
        Ok(base)
    }

    /// The argument of `^`, `_`, `\frac`, `\sqrt` written without braces: one token (one digit).
    fn script_arg(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = match self.peek().cloned() {
            Some(Tok::Sym('-')) => {
                self.pos += 1;
                Ok(Expr::Neg(bx(self.script_arg()?)))
            }
            Some(Tok::Sym('{') | Tok::Num(..)) => self.primary(),
            _ => self.postfix(),
        };
        self.leave();
        r
    }

    /// One digit of a multi-digit number for `\frac12`, leaving the rest in the stream.
    fn single_digit(&mut self) -> Option<Expr> {
        if let Some(Tok::Num(int, None, 0)) = self.peek().cloned() {
            if int.len() > 1 {
                let (d, rest) = int.split_at(1);
                self.toks[self.pos] = Tok::Num(rest.to_string(), None, 0);
                return Some(int_lit(d));
            }
        }
        None
    }

    fn latex_arg(&mut self) -> PResult<Expr> {
        if let Some(d) = self.single_digit() {
            return Ok(d);
        }
        self.script_arg()
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let p = self.primary()?;
        self.postfix_ops(p)
    }

    fn postfix_ops(&mut self, mut e: Expr) -> PResult<Expr> {
        loop {
            match self.peek() {
                Some(Tok::Sym('!')) => {
                    self.pos += 1;
                    if self.eat_sym('!') {
                        // `7!!` = 7·5·3·1, not (7!)!.
                        e = Expr::DoubleFactorial(bx(e));
                    } else {
                        e = Expr::Factorial(bx(e));
                    }
                }
                Some(Tok::Percent) => {
                    self.pos += 1;
                    e = Expr::Percent(bx(e));
                }
                Some(Tok::Degree) => {
                    self.pos += 1;
                    e = Expr::Degrees(bx(e));
                }
                Some(Tok::Sym('\'')) => {
                    self.pos += 1;
                    if let Expr::Var(v) = e {
                        e = Expr::Var(format!("{v}'"));
                    } else {
                        return self.err("prime on a non-variable");
                    }
                }
                Some(Tok::Sym('_')) => {
                    self.pos += 1;
                    e = self.subscript(e)?;
                }
                _ => return Ok(e),
            }
        }
    }

    fn subscript(&mut self, e: Expr) -> PResult<Expr> {
        let sub = self.script_arg()?;
        match e {
            Expr::Num(Lit {
                value,
                places: None,
                ..
            }) => {
                let Expr::Num(Lit {
                    value: base,
                    places: None,
                    ..
                }) = sub
                else {
                    return self.err("base subscript must be a number");
                };
                let base = base.to_integer();
                let base: u32 = base
                    .try_into()
                    .map_err(|_| ParseError::Syntax("bad base".into()))?;
                if !(2..=36).contains(&base) {
                    return self.err("base out of range");
                }
                let digits = value.to_integer().to_string();
                if digits
                    .chars()
                    .any(|c| c.to_digit(36).is_none_or(|d| d >= base))
                {
                    return self.err("digit not valid in its base");
                }
                Ok(Expr::Base { digits, base })
            }
            Expr::Var(v) => Ok(Expr::Var(format!("{v}_{}", crate::canon::show(&sub)))),
            _ => self.err("subscript on an expression"),
        }
    }

    fn group_until(&mut self, close: &[Tok]) -> PResult<(Vec<Expr>, Tok)> {
        let mut items = Vec::new();
        loop {
            if let Some(t) = self.peek() {
                if close.contains(t) {
                    let t = t.clone();
                    self.pos += 1;
                    return Ok((items, t));
                }
            } else {
                return self.err("unclosed bracket");
            }
            items.push(self.item()?);
            if self.at_separator() {
                self.pos += 1;
            } else if let Some(t) = self.peek() {
                if !close.contains(t) {
                    return self.err("expected a comma or a closing bracket");
                }
            }
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.primary_inner();
        self.leave();
        r
    }

    fn primary_inner(&mut self) -> PResult<Expr> {
        let Some(t) = self.next() else {
            return self.err("unexpected end");
        };
        match t {
            Tok::Num(int, frac, exp) => self.number(&int, frac.as_deref(), exp),
            Tok::Repeating(int, frac, rep) => {
                // x = int.frac + rep / (10^|frac| · (10^|rep| − 1)).
                let big = |d: &str| -> num_bigint::BigInt { d.parse().unwrap_or_default() };
                let ten = num_bigint::BigInt::from(10);
                let scale = num_traits::pow(ten.clone(), frac.len());
                let period = num_traits::pow(ten, rep.len()) - 1;
                let fixed = crate::num::Q::new(big(&format!("{int}{frac}")), scale.clone());
                let value = fixed + crate::num::Q::new(big(&rep), scale * period);
                Ok(Expr::Num(Lit {
                    value,
                    places: None,
                    sig: (int.len() + frac.len() + rep.len()) as u32,
                }))
            }
            Tok::Ident(name) => Ok(match name.as_str() {
                "e" => Expr::Const(Const::E),
                "i" => Expr::Const(Const::I),
                _ => {
                    // `f^{-1}(x)`: the inverse function, a name.
                    if matches!(name.as_str(), "f" | "g" | "h")
                        && self.toks[self.pos..].starts_with(&[
                            Tok::Sym('^'),
                            Tok::Sym('{'),
                            Tok::Sym('-'),
                            Tok::Num("1".into(), None, 0),
                            Tok::Sym('}'),
                            Tok::Sym('('),
                        ])
                        && matches!(self.peek_at(6), Some(Tok::Ident(_)))
                        && self.peek_at(7) == Some(&Tok::Sym(')'))
                    {
                        self.pos += 5;
                        let arg = self.primary()?;
                        return Ok(Expr::Apply(format!("{name}^-1"), vec![arg]));
                    }
                    if self.is_sym('(')
                        && name.chars().all(|c| c.is_ascii_lowercase())
                        && name != "x"
                    {
                        // f(x): an applied unknown function.
                        if let Some(Tok::Ident(_) | Tok::Num(..)) = self.peek_at(1) {
                            if self.peek_at(2) == Some(&Tok::Sym(')'))
                                && matches!(name.as_str(), "f" | "g" | "h" | "p" | "q")
                            {
                                self.pos += 1;
                                let arg = self.item()?;
                                self.pos += 1;
                                return Ok(Expr::Apply(name, vec![arg]));
                            }
                        }
                    }
                    Expr::Var(name)
                }
            }),
            Tok::Word(w) => Ok(Expr::Text(w.to_lowercase())),
            Tok::Sym('{') => {
                if self.group_has_over() {
                    // `{a \over b}`: plain TeX's fraction.
                    let n = self.item()?;
                    if !self.is_cmd("over") {
                        return self.err("expected \\over");
                    }
                    self.pos += 1;
                    let d = self.item()?;
                    if !self.eat_sym('}') {
                        return self.err("unclosed group");
                    }
                    return Ok(Expr::Frac(bx(n), bx(d)));
                }
                let (items, _) = self.group_until(&[Tok::Sym('}')])?;
                match items.len() {
                    0 => self.err("empty group"),
                    1 => Ok(items.into_iter().next().unwrap_or(Expr::List(vec![]))),
                    _ => Ok(Expr::Set(items)),
                }
            }
            Tok::SetOpen => {
                let (items, _) = self.group_until(&[Tok::SetClose])?;
                Ok(Expr::Set(items))
            }
            Tok::Sym(open @ ('(' | '[')) => {
                let (mut items, close) = self.group_until(&[Tok::Sym(')'), Tok::Sym(']')])?;
                let close = if close == Tok::Sym(')') { ')' } else { ']' };
                match (items.len(), open, close) {
                    (0, _, _) => self.err("empty brackets"),
                    (1, '(', ')') | (1, '[', ']') => Ok(items.pop().unwrap_or(Expr::List(vec![]))),
                    (2, '(', ')') => {
                        let hi = items.pop().unwrap_or(Expr::List(vec![]));
                        let lo = items.pop().unwrap_or(Expr::List(vec![]));
                        if is_inf(&lo) || is_inf(&hi) {
                            Ok(interval(lo, hi, false, false))
                        } else {
                            Ok(Expr::Pair(bx(lo), bx(hi)))
                        }
                    }
                    (2, _, _) => {
                        let hi = items.pop().unwrap_or(Expr::List(vec![]));
                        let lo = items.pop().unwrap_or(Expr::List(vec![]));
                        Ok(interval(lo, hi, open == '[', close == ']'))
                    }
                    (_, '(', ')') | (_, '[', ']') => Ok(Expr::Tuple(items)),
                    _ => self.err("mismatched brackets"),
                }
            }
            Tok::Sym('|') => {
                let inner = self.additive()?;
                if !self.eat_sym('|') {
                    return self.err("unclosed |");
                }
                Ok(Expr::Func(Func::Abs, bx(inner)))
            }
            Tok::Begin(env) => self.matrix(&env),
            Tok::Cmd(name) => self.command(&name),
            Tok::Percent => self.err("stray %"),
            _ => self.err("unexpected token"),
        }
    }

    /// Whether the group just opened holds a `\over` at its own level.
    fn group_has_over(&self) -> bool {
        let mut depth = 0usize;
        for t in &self.toks[self.pos..] {
            match t {
                Tok::Sym('{') => depth += 1,
                Tok::Sym('}') if depth == 0 => return false,
                Tok::Sym('}') => depth -= 1,
                Tok::Cmd(c) if depth == 0 && c == "over" => return true,
                _ => {}
            }
        }
        false
    }

    fn number(&mut self, int: &str, frac: Option<&str>, exp: i64) -> PResult<Expr> {
        let f = frac.unwrap_or("");
        let value = q_from_decimal(int, f, exp, &mut self.budget).map_err(|e| match e {
            crate::num::EvalError::TooComplex(m) => ParseError::TooComplex(m),
            _ => ParseError::Syntax("bad number".into()),
        })?;
        let all = format!("{int}{f}");
        let sig = all.trim_start_matches('0').len().max(1) as u32;
        let places = frac.map(|f| f.len() as u32).or((exp != 0).then_some(0));
        let places = match (places, exp) {
            (Some(p), e) if e != 0 => Some((i64::from(p) - e).max(0) as u32),
            (p, _) => p,
        };
        Ok(Expr::Num(Lit { value, places, sig }))
    }

    fn command(&mut self, name: &str) -> PResult<Expr> {
        match name {
            "frac" | "dfrac" | "tfrac" | "cfrac" => {
                let n = self.latex_arg()?;
                let d = self.latex_arg()?;
                Ok(Expr::Frac(bx(n), bx(d)))
            }
            "sqrt" => {
                let idx = if self.eat_sym('[') {
                    let (mut items, _) = self.group_until(&[Tok::Sym(']')])?;
                    if items.len() != 1 {
                        return self.err("bad root index");
                    }
                    items.pop().unwrap_or(Expr::List(vec![]))
                } else {
                    int_lit("2")
                };
                let arg = self.latex_arg()?;
                Ok(Expr::Root(bx(arg), bx(idx)))
            }
            "binom" | "dbinom" | "tbinom" => {
                let n = self.latex_arg()?;
                let k = self.latex_arg()?;
                Ok(Expr::Binom(bx(n), bx(k)))
            }
            "pi" => Ok(Expr::Const(Const::Pi)),
            "infty" | "infinity" => Ok(Expr::Const(Const::Infinity)),
            "emptyset" | "varnothing" => Ok(Expr::Set(vec![])),
            "angle" => {
                // `\angle ABC`: the name of an angle.
                let mut name = String::from("∠");
                while let Some(Tok::Ident(l)) = self.peek() {
                    name.push_str(l);
                    self.pos += 1;
                }
                Ok(Expr::Var(name))
            }
            "overline" | "bar" => {
                let arg = self.latex_arg()?;
                Ok(Expr::Func(Func::Conj, bx(arg)))
            }
            "mathbbR" => Ok(interval(
                Expr::Neg(bx(Expr::Const(Const::Infinity))),
                Expr::Const(Const::Infinity),
                false,
                false,
            )),
            _ if name.starts_with("mathbb") => Ok(Expr::Text(name.to_lowercase())),
            "langle" => {
                let (items, _) = self.group_until(&[Tok::Cmd("rangle".into())])?;
                Ok(Expr::Tuple(items))
            }
            "lfloor" | "lceil" => {
                let inner = self.additive()?;
                let close = if name == "lfloor" { "rfloor" } else { "rceil" };
                if !self.is_cmd(close) {
                    return self.err("unclosed floor/ceil");
                }
                self.pos += 1;
                Ok(Expr::Func(
                    if name == "lfloor" {
                        Func::Floor
                    } else {
                        Func::Ceil
                    },
                    bx(inner),
                ))
            }
            "pm" | "mp" => {
                let b = self.unary()?;
                Ok(Expr::PlusMinus(None, bx(b)))
            }
            _ => {
                if let Some((_, f)) = FUNCS.iter().find(|(n, _)| *n == name) {
                    return self.function(*f);
                }
                if GREEK.contains(&name) {
                    return Ok(Expr::Var(name.to_string()));
                }
                self.err(&format!("unknown command \\{name}"))
            }
        }
    }

    fn function(&mut self, f: Func) -> PResult<Expr> {
        // \log_2 x, \sin^2 x.
        let mut base = None;
        let mut power = None;
        if f == Func::Log && self.eat_sym('_') {
            base = Some(self.script_arg()?);
        }
        if self.eat_sym('^') {
            power = Some(self.script_arg()?);
        }
        let arg = if self.is_sym('(') || self.is_sym('{') {
            self.primary()?
        } else {
            // `\sin 2x`, `\cos 2\theta`, `\ln 3x`: the argument runs over the implicit
            // product of numbers and letters that follows, up to an operator or a function.
            let mut factors = vec![self.power()?];
            while matches!(self.peek(), Some(Tok::Ident(_)))
                || matches!(self.peek(), Some(Tok::Cmd(c)) if c == "pi" || GREEK.contains(&c.as_str()))
            {
                factors.push(self.power()?);
            }
            if factors.len() == 1 {
                factors.pop().unwrap_or(Expr::List(vec![]))
            } else {
                Expr::Mul(factors)
            }
        };
        let mut e = match base {
            Some(b) => Expr::LogBase(bx(b), bx(arg)),
            None => Expr::Func(f, bx(arg)),
        };
        if let Some(p) = power {
            // \sin^{-1} is arcsin.
            if matches!(&p, Expr::Neg(n) if matches!(&**n, Expr::Num(l) if l.value == crate::num::q_int(1)))
            {
                if let Expr::Func(g, a) = e {
                    let inv = match g {
                        Func::Sin => Func::Asin,
                        Func::Cos => Func::Acos,
                        Func::Tan => Func::Atan,
                        _ => return self.err("inverse of this function"),
                    };
                    return Ok(Expr::Func(inv, a));
                }
            }
            e = Expr::Pow(bx(e), bx(p));
        }
        Ok(e)
    }

    fn matrix(&mut self, env: &str) -> PResult<Expr> {
        if !matches!(
            env,
            "pmatrix" | "bmatrix" | "Bmatrix" | "matrix" | "smallmatrix" | "array"
        ) {
            return self.err(&format!("environment {env}"));
        }
        let mut rows: Vec<Vec<Expr>> = vec![vec![]];
        loop {
            match self.peek() {
                None => return self.err("unclosed matrix"),
                Some(Tok::End(e)) if e == env => {
                    self.pos += 1;
                    break;
                }
                Some(Tok::RowSep) => {
                    self.pos += 1;
                    rows.push(vec![]);
                }
                Some(Tok::Amp) => {
                    self.pos += 1;
                }
                _ => {
                    let cell = self.item()?;
                    if let Some(r) = rows.last_mut() {
                        r.push(cell);
                    }
                }
            }
        }
        if rows.last().is_some_and(Vec::is_empty) {
            rows.pop();
        }
        let cols = rows.first().map_or(0, Vec::len);
        if cols == 0 || rows.iter().any(|r| r.len() != cols) {
            return self.err("ragged matrix");
        }
        Ok(Expr::Matrix {
            rows: rows.len(),
            cols,
            cells: rows.into_iter().flatten().collect(),
        })
    }
}

fn int_lit(d: &str) -> Expr {
    Expr::Num(Lit {
        value: crate::num::Q::from_integer(d.parse().unwrap_or_default()),
        places: None,
        sig: d.len() as u32,
    })
}

/// `five` → 5: number words a model may write instead of digits.
fn number_word(w: &str) -> Option<u32> {
    const SMALL: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    const TENS: [(&str, u32); 7] = [
        ("thirty", 30),
        ("forty", 40),
        ("fifty", 50),
        ("sixty", 60),
        ("seventy", 70),
        ("eighty", 80),
        ("ninety", 90),
    ];
    let l = w.to_ascii_lowercase();
    if let Some(k) = SMALL.iter().position(|s| *s == l) {
        return Some(k as u32);
    }
    TENS.iter().find(|(s, _)| *s == l).map(|(_, v)| *v)
}

fn is_inf(e: &Expr) -> bool {
    match e {
        Expr::Const(Const::Infinity) => true,
        Expr::Neg(a) => is_inf(a),
        _ => false,
    }
}

fn interval(lo: Expr, hi: Expr, lo_closed: bool, hi_closed: bool) -> Expr {
    Expr::Interval {
        lo: bx(lo),
        hi: bx(hi),
        lo_closed,
        hi_closed,
    }
}
