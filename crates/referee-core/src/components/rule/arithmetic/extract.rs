//! Finding the equalities a text states, for `arithmetic`. Hand-written: no crate finds
//! arithmetic claims in mixed prose and LaTeX; the sides found here are read by referee-math's
//! parser, so this only decides *where* a claim is, not what its terms mean.
//!
//! One pass over the text cuts it into runs of arithmetic characters (digits, operators,
//! parentheses and braces, spaces, the LaTeX commands of arithmetic, `$` and math delimiters,
//! look-alikes folded), split at `=` and `≈`. Anything else ends a run: a word, a newline, `:`,
//! a `.` or `,` that is not inside a number. What stands next to a run decides whether its outer
//! sides are arithmetic: a letter glued to it or an operator at its edge means a variable
//! (`2x + 3 = 7`, `x = 5`, `Q1 = 25`), a word before a bare number means a label (`Day 1 = 5`).
//! GSM8K calculator annotations (`<<48/6=8>>`) are read on their own and are transparent in
//! the prose around them, so `48/6 = <<48/6=8>>8` states `48/6 = 8` twice (the caller merges
//! repeats) and `48/6 = <<48/6=8>>9` states a wrong claim next to a right one.

use referee_math::Relation;
use unicode_normalization::char::decompose_compatible;

/// Why a found equality is not checked, decided from the text alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A side holds a variable or a unit glued to a number (`x = 5`, `2x + 3 = 7`, `= 12m`).
    Variable,
    /// A side is empty (`= 5`, `2 + 3 =`).
    Empty,
    /// A bare number after a word (`Day 1 = 5 miles`, `Step 2 = ...`): a name, not a claim.
    Label,
    /// A side glued to a character that is not read (`3:4 = 0.75`, `1,2,3 = 6`, `8,5`): only
    /// part of it would be checked.
    Cut,
}

impl Skip {
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::Variable => "a side has a variable",
            Skip::Empty => "a side is empty",
            Skip::Label => "a labelled number, not a computation",
            Skip::Cut => "a side is glued to a character that is not read",
        }
    }
}

/// Where an equality was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Text,
    /// Inside a GSM8K `<<...>>` calculator annotation.
    Annotation,
}

/// One adjacent pair of a chain `a = b = c`: its byte span in the text and its two sides, as
/// text the math parser reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Equality {
    pub start: usize,
    pub end: usize,
    pub lhs: String,
    pub rel: Relation,
    pub rhs: String,
    pub source: Source,
    pub skip: Option<Skip>,
}

impl Equality {
    /// The claim without spaces, so repeats written differently (`2+2=4`, `2 + 2 = 4`) are one.
    pub fn key(&self) -> String {
        let mut k = String::with_capacity(self.lhs.len() + self.rhs.len() + 3);
        k.extend(self.lhs.chars().filter(|c| !c.is_whitespace()));
        k.push_str(self.rel.symbol());
        k.extend(self.rhs.chars().filter(|c| !c.is_whitespace()));
        k
    }
}

/// Every equality in `text`, in text order.
pub fn equalities(text: &str) -> Vec<Equality> {
    let notes = annotations(text);
    let mut out = Vec::new();
    let mut hidden = notes.iter().map(|n| (n.0, n.2)).peekable();
    scan(text, 0, text.len(), &mut hidden, Source::Text, &mut out);
    for (_, (s, e), _) in &notes {
        scan(
            text,
            *s,
            *e,
            &mut std::iter::empty::<(usize, usize)>().peekable(),
            Source::Annotation,
            &mut out,
        );
    }
    out.sort_by_key(|q| (q.start, q.end));
    out
}

/// `<<a=b>>` annotations: (outer start, inner byte range, outer end). A `<<` with another `<<`
/// before its `>>` is not one (`<<2<<1=1>>=5>>`: only the inner one is an annotation; the rest is
/// prose).
fn annotations(text: &str) -> Vec<(usize, (usize, usize), usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(k) = memchr::memmem::find(&b[i..], b"<<") {
        let open = i + k;
        let inner = open + 2;
        let close = memchr::memmem::find(&b[inner..], b">>").map(|c| inner + c);
        let again = memchr::memmem::find(&b[inner..], b"<<").map(|c| inner + c);
        match (close, again) {
            (Some(c), Some(a)) if a < c => i = a,
            (Some(c), _) => {
                out.push((open, (inner, c), c + 2));
                i = c + 2;
            }
            (None, _) => break,
        }
    }
    out
}

/// What one character is to a run.
#[derive(Clone, Copy)]
enum Piece {
    /// Text appended to the run's normalised form.
    Push(&'static str),
    Char(char),
    /// An equals sign or `≈`: splits the run into terms.
    Rel(Relation),
    /// Part of the run that reads as nothing (a `$`, `\left`, a math delimiter).
    Nothing,
    /// A letter or a word-like command: ends the run and is a variable next to it.
    Letter,
    /// A character that is not read but may be part of a side (`:` in `3:4`, `,` in `8,5`):
    /// ends the run, and a side glued to it is not checked.
    Cut,
    /// Anything else: ends the run.
    Stop,
}

struct Run {
    /// The normalised text, and for each of its bytes the byte of the text it came from.
    norm: String,
    orig: Vec<usize>,
    /// Where in the text each normalised byte's source character ends.
    orig_end: Vec<usize>,
    /// Where each relation splits `norm`.
    rels: Vec<(usize, Relation)>,
    letter_before: bool,
    /// A [`Piece::Cut`] character right before the run.
    cut_before: bool,
    /// Spaces between the previous letter and the first content.
    spaced_before: bool,
}

impl Run {
    fn new(letter_before: bool) -> Run {
        Run {
            norm: String::new(),
            orig: Vec::new(),
            orig_end: Vec::new(),
            rels: Vec::new(),
            letter_before,
            cut_before: false,
            spaced_before: false,
        }
    }

    fn push(&mut self, s: &str, at: usize, end: usize) {
        if self.norm.trim().is_empty() && s == " " && !self.norm.is_empty() {
            self.spaced_before = true;
        }
        if self.norm.is_empty() && s == " " {
            self.spaced_before = true;
        }
        self.norm.push_str(s);
        for _ in 0..s.len() {
            self.orig.push(at);
            self.orig_end.push(end);
        }
    }

    fn last_content(&self) -> Option<char> {
        self.norm.trim_end().chars().last()
    }
}

/// Folds one character: look-alikes of digits and operators (full-width `＝`, `２`,
/// mathematical bold digits, the minus sign U+2212, `×`, `÷`) to what they look like.
fn fold(c: char) -> Option<Piece> {
    Some(match c {
        '0'..='9' | '+' | '-' | '*' | '/' | '^' | '(' | ')' | '{' | '}' | '%' | '√' | 'π' => {
            Piece::Char(c)
        }
        ' ' | '\t' | '\u{a0}' | '\u{2009}' | '\u{202f}' | '\u{2002}'..='\u{2008}' | '\u{3000}' => {
            Piece::Push(" ")
        }
        '=' => Piece::Rel(Relation::Equal),
        '≈' | '≅' => Piece::Rel(Relation::Approx),
        '$' => Piece::Nothing,
        '\u{2212}' | '\u{2013}' | '\u{2012}' | '\u{fe63}' => Piece::Char('-'),
        '×' | '✕' | '⨯' | '·' | '⋅' | '∙' => Piece::Char('*'),
        '÷' | '∕' => Piece::Char('/'),
        '²' => Piece::Push("^2"),
        '³' => Piece::Push("^3"),
        _ if c.is_ascii() => return None,
        _ => {
            // Compatibility forms that are one ASCII character (`＝`, `２`, `𝟐`, `（`).
            let mut one = None;
            let mut n = 0;
            decompose_compatible(c, |d| {
                n += 1;
                one = Some(d);
            });
            match one {
                Some(d) if n == 1 && d.is_ascii() && d != c => return fold(d),
                _ => return None,
            }
        }
    })
}

/// The LaTeX commands of arithmetic; any other command is word-like.
fn command(name: &str) -> Piece {
    match name {
        "times" | "cdot" | "ast" => Piece::Char('*'),
        "div" => Piece::Char('/'),
        "frac" | "dfrac" | "tfrac" => Piece::Push("\\frac"),
        "sqrt" => Piece::Push("\\sqrt"),
        "pi" => Piece::Push("\\pi"),
        "approx" => Piece::Rel(Relation::Approx),
        "left" | "right" | "displaystyle" | "textstyle" | "big" | "Big" | "bigl" | "bigr" => {
            Piece::Nothing
        }
        _ => Piece::Letter,
    }
}

/// Scans `text[from..to]` for runs, each cut into equalities. `hidden` are annotation ranges
/// (sorted) that read as spaces.
fn scan(
    text: &str,
    from: usize,
    to: usize,
    hidden: &mut std::iter::Peekable<impl Iterator<Item = (usize, usize)>>,
    source: Source,
    out: &mut Vec<Equality>,
) {
    let s = &text[from..to];
    let b = s.as_bytes();
    let mut run = Run::new(false);
    let mut i = 0;
    // Where the scan resumed after an annotation: the `>>` before it is not an operator.
    let mut resumed = usize::MAX;
    while i < b.len() {
        let at = from + i;
        while hidden.peek().is_some_and(|h| h.1 <= at) {
            hidden.next();
        }
        if let Some(&(hs, he)) = hidden.peek() {
            if hs <= at {
                // An annotation in prose: a space, so the prose around it stays one run.
                run.push(" ", at, he);
                i = he - from;
                resumed = i;
                continue;
            }
        }
        let c = s[i..].chars().next().unwrap_or(' ');
        let n = c.len_utf8();
        let next = |k: usize| b.get(i + k).copied().unwrap_or(0);
        let piece = match c {
            '\\' => {
                let st = i + 1;
                let mut j = st;
                while b.get(j).is_some_and(u8::is_ascii_alphabetic) {
                    j += 1;
                }
                if j == st {
                    // `\,` `\!` `\ ` are spacing (a thousands separator in `1\,000`), `\%` a
                    // percent sign, `\(` `\)` `\[` `\]` `\$` delimiters.
                    let p = match next(1) {
                        b',' | b'!' | b' ' | b';' | b':' => Piece::Push(match next(1) {
                            b',' => "\\,",
                            b'!' => "\\!",
                            _ => " ",
                        }),
                        b'%' => Piece::Char('%'),
                        b'(' | b')' | b'[' | b']' | b'$' => Piece::Nothing,
                        _ => Piece::Stop,
                    };
                    emit(&mut run, p, at, at + 2, out, source);
                    i += 2;
                    continue;
                }
                let p = command(&s[st..j]);
                emit(&mut run, p, at, from + j, out, source);
                i = j;
                continue;
            }
            '.' if next(1).is_ascii_digit() => Piece::Char('.'),
            ',' if run.last_content().is_some_and(|d| d.is_ascii_digit())
                && !run.norm.ends_with(' ')
                && (1..=3).all(|k| next(k).is_ascii_digit())
                && !next(4).is_ascii_digit() =>
            {
                Piece::Char(',')
            }
            '=' if next(1) == b'='
                || (i > 0 && i != resumed && b"=!<>:+-*/".contains(&b[i - 1])) =>
            {
                // `==`, `!=`, `+=`, `:=`: code, not a claim. Ends the run, and so does the
                // operator after it.
                let mut j = i + 1;
                while b.get(j) == Some(&b'=') {
                    j += 1;
                }
                flush(&mut run, None, out, source);
                run = Run::new(false);
                i = j;
                continue;
            }
            '!' if next(1) != b'='
                && run
                    .last_content()
                    .is_some_and(|d| d.is_ascii_digit() || d == ')') =>
            {
                Piece::Char('!')
            }
            'x' | 'X' | 'o' if word_times(s, i, &run).is_some() => {
                let len = word_times(s, i, &run).unwrap_or(1);
                emit(&mut run, Piece::Char('*'), at, at + len, out, source);
                i += len;
                continue;
            }
            _ if c.is_alphabetic() => Piece::Letter,
            // Only before a digit: `3:4`, `8,5`; `= 4, and` ends a sentence.
            ':' | '|' | '[' | ']' | '&' | '#' | '@' | '_' | ',' if next(1).is_ascii_digit() => {
                Piece::Cut
            }
            _ => fold(c).unwrap_or(Piece::Stop),
        };
        if matches!(piece, Piece::Char('0'..='9'))
            && run.norm.ends_with(' ')
            && run
                .last_content()
                .is_some_and(|d| d.is_ascii_digit() || matches!(d, ')' | '%' | '!'))
        {
            // `2+2=4 2+2=4`: two numbers side by side start a new run.
            flush(&mut run, None, out, source);
            run = Run::new(false);
        }
        emit(&mut run, piece, at, at + n, out, source);
        i += n;
    }
    flush(&mut run, None, out, source);
}

/// `3 x 4` (a lone `x` between numbers, spaced) and `20% of 50`: multiplication. The length
/// of the word when it is one.
fn word_times(s: &str, i: usize, run: &Run) -> Option<usize> {
    let b = s.as_bytes();
    let after = |k: usize| b.get(i + k).copied().unwrap_or(0);
    let before_space = i > 0 && b[i - 1] == b' ';
    let last = run.last_content()?;
    if matches!(b[i], b'x' | b'X') {
        let ok = before_space
            && (last.is_ascii_digit() || last == ')')
            && after(1) == b' '
            && (after(2).is_ascii_digit() || after(2) == b'(');
        return ok.then_some(1);
    }
    let of = b[i] == b'o' && after(1) == b'f' && !after(2).is_ascii_alphanumeric();
    (of && before_space && last == '%').then_some(2)
}

fn emit(run: &mut Run, p: Piece, at: usize, end: usize, out: &mut Vec<Equality>, source: Source) {
    match p {
        Piece::Char(c) => {
            let mut buf = [0u8; 4];
            run.push(c.encode_utf8(&mut buf), at, end);
        }
        Piece::Push(t) => run.push(t, at, end),
        Piece::Rel(r) => {
            run.rels.push((run.norm.len(), r));
            run.push(if r == Relation::Equal { "=" } else { "~" }, at, end);
        }
        Piece::Nothing => run.push(" ", at, end),
        Piece::Letter | Piece::Cut => {
            // A letter or cut right after the run's content is glued to its last side.
            let glued = !run.norm.ends_with(' ') && !run.norm.is_empty();
            let letter = matches!(p, Piece::Letter);
            let after = glued.then_some(if letter { Skip::Variable } else { Skip::Cut });
            flush(run, after, out, source);
            *run = Run::new(letter);
            run.cut_before = !letter;
        }
        Piece::Stop => {
            flush(run, None, out, source);
            *run = Run::new(false);
        }
    }
}

const BINARY: &[char] = &['+', '-', '*', '/', '^'];

/// Cuts a finished run into its adjacent pairs. `after`: what a letter or cut glued to its end
/// makes of its last pair.
fn flush(run: &mut Run, after: Option<Skip>, out: &mut Vec<Equality>, source: Source) {
    if run.rels.is_empty() {
        return;
    }
    if run.norm.trim_start().starts_with(')') {
        // `(a) 2 + 2 = 4`, `b) ...`: the letter was a label in parentheses.
        run.letter_before = false;
        run.cut_before = false;
    }
    // The terms between relations, as byte ranges of `norm`.
    let mut bounds = Vec::with_capacity(run.rels.len() + 1);
    let mut st = 0;
    for &(at, _) in &run.rels {
        bounds.push((st, at));
        st = at + 1;
    }
    bounds.push((st, run.norm.len()));
    let last = bounds.len() - 1;
    let terms: Vec<(usize, usize)> = bounds
        .iter()
        .enumerate()
        .map(|(k, &(a, z))| trim_term(&run.norm, a, z, k == 0, k == last))
        .collect();
    let text_of = |&(a, z): &(usize, usize)| run.norm[a..z].to_string();
    for (k, &(_, rel)) in run.rels.iter().enumerate() {
        let (l, r) = (terms[k], terms[k + 1]);
        let (lt, rt) = (text_of(&l), text_of(&r));
        let mut skip = None;
        if k == 0 && run.cut_before && !run.spaced_before {
            skip = Some(Skip::Cut);
        }
        if k == 0 && run.letter_before {
            let glued = !run.spaced_before;
            let op_edge = lt.starts_with(['+', '*', '/', '^'])
                || (lt.starts_with('-') && (glued || lt[1..].starts_with(' ')));
            if lt.is_empty() || glued || op_edge {
                skip = Some(Skip::Variable);
            } else if is_bare(&lt) {
                skip = Some(Skip::Label);
            }
        }
        if k + 1 == last {
            if rt.ends_with(BINARY) {
                skip = Some(Skip::Variable);
            } else if after.is_some() {
                skip = after;
            }
        }
        if skip.is_none() && (lt.is_empty() || rt.is_empty()) {
            skip = Some(Skip::Empty);
        }
        let start = if l.0 < l.1 {
            run.orig[l.0]
        } else {
            run.orig[bounds[k].1.min(run.orig.len() - 1)]
        };
        let end = if r.0 < r.1 {
            run.orig_end[r.1 - 1]
        } else {
            run.orig_end[bounds[k + 1]
                .0
                .saturating_sub(1)
                .min(run.orig_end.len() - 1)]
        };
        out.push(Equality {
            start,
            end: end.max(start),
            lhs: lt,
            rel,
            rhs: rt,
            source,
            skip,
        });
    }
}

/// A term without its outer spaces, markdown emphasis (`**2+2=4**`) and, at the ends of the
/// run, the parenthesis opened or closed outside it (`(so 2 + 2 = 4)`).
fn trim_term(norm: &str, mut a: usize, mut z: usize, first: bool, last: bool) -> (usize, usize) {
    let b = norm.as_bytes();
    loop {
        let before = (a, z);
        while a < z && matches!(b[a], b' ' | b'*') {
            a += 1;
        }
        while z > a && matches!(b[z - 1], b' ' | b'*') {
            z -= 1;
        }
        let depth = |a: usize, z: usize| {
            let mut d = 0i64;
            let mut min = 0i64;
            for &c in &b[a..z] {
                match c {
                    b'(' => d += 1,
                    b')' => d -= 1,
                    _ => {}
                }
                min = min.min(d);
            }
            (d, min)
        };
        let (d, min) = depth(a, z);
        // An opening parenthesis closed outside the run, or a label's closing one (`a) 2`).
        let open_outside = d > 0 && min >= 0 && b.get(a) == Some(&b'(');
        let label_close = min < 0 && b.get(a) == Some(&b')');
        if first && (open_outside || label_close) {
            a += 1;
        } else if last && d < 0 && z > a && b[z - 1] == b')' {
            z -= 1;
        }
        if (a, z) == before {
            return (a, z);
        }
    }
}

/// A number with nothing computed: digits, separators, a point, a sign.
fn is_bare(t: &str) -> bool {
    let t = t.strip_prefix('-').unwrap_or(t).trim_start();
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | ' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(lhs, rel, rhs, skip)` of each equality.
    fn found(t: &str) -> Vec<(String, &'static str, String, Option<Skip>)> {
        equalities(t)
            .into_iter()
            .map(|q| (q.lhs, q.rel.symbol(), q.rhs, q.skip))
            .collect()
    }

    fn one(l: &str, r: &str) -> Vec<(String, &'static str, String, Option<Skip>)> {
        vec![(l.into(), "=", r.into(), None)]
    }

    #[test]
    fn plain_equations_in_prose() {
        assert_eq!(found("She has 48 / 6 = 8 boxes."), one("48 / 6", "8"));
        assert_eq!(found("The total is 5 + 3 = 8 apples"), one("5 + 3", "8"));
        assert_eq!(found("-3 + 5 = 2"), one("-3 + 5", "2"));
        assert_eq!(found("(2 + 3) * 4 = 20."), one("(2 + 3) * 4", "20"));
        assert_eq!(
            found("1,000 + 2,500 = 3,500"),
            one("1,000 + 2,500", "3,500")
        );
        assert_eq!(found("0.5 * 3 = 1.5"), one("0.5 * 3", "1.5"));
        assert_eq!(found("5! = 120"), one("5!", "120"));
    }

    #[test]
    fn chains_give_adjacent_pairs() {
        let f = found("2 + 3 = 5 = 10/2");
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].0.as_str(), f[0].2.as_str()), ("2 + 3", "5"));
        assert_eq!((f[1].0.as_str(), f[1].2.as_str()), ("5", "10/2"));
    }

    #[test]
    fn latex() {
        assert_eq!(
            found(r"so $\frac{48}{6} = 8$ and \(3 \times 4 = 12\)"),
            vec![
                (r"\frac{48}{6}".into(), "=", "8".into(), None),
                ("3 * 4".into(), "=", "12".into(), None)
            ]
        );
        assert_eq!(found(r"$2^{10} = 1024$"), one("2^{10}", "1024"));
        assert_eq!(found(r"$12 \div 4 = 3$"), one("12 / 4", "3"));
        assert_eq!(
            found(r"$\left(1+2\right) \cdot 3 = 9$"),
            one("(1+2 ) * 3", "9")
        );
        assert_eq!(
            found(r"$1\,000 + 1 = 1\,001$"),
            one(r"1\,000 + 1", r"1\,001")
        );
        assert_eq!(found(r"$\sqrt{16} = 4$"), one(r"\sqrt{16}", "4"));
        let approx = found(r"$\frac{10}{3} \approx 3.33$");
        assert_eq!(approx[0].1, "≈");
        assert_eq!(approx[0].2, "3.33");
    }

    #[test]
    fn gsm8k_annotations() {
        let t = "Natalia sold 48/2 = <<48/2=24>>24 clips.";
        let f = equalities(t);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].key(), "48/2=24");
        assert_eq!(f[1].key(), "48/2=24");
        assert_eq!(f[1].source, Source::Annotation);
        assert_eq!(&t[f[1].start..f[1].end], "48/2=24");
        // A wrong prose result next to a right annotation is its own claim.
        let f = equalities("48/2 = <<48/2=24>>25");
        assert_eq!(
            f.iter().map(Equality::key).collect::<Vec<_>>(),
            ["48/2=25", "48/2=24"]
        );
        // Nested: only the inner one is an annotation.
        let f = equalities("<<2+2<<1+1=2>>=5>>");
        assert!(f
            .iter()
            .any(|q| q.key() == "1+1=2" && q.source == Source::Annotation));
        assert!(f
            .iter()
            .all(|q| q.key() != "2+2=5" || q.source == Source::Text));
    }

    #[test]
    fn variables_labels_and_empty_sides_are_skipped() {
        for t in [
            "x = 5",
            "Let x = 2 + 3",
            "2x + 3 = 7",
            "x - 3 = 2",
            "Q1 = 25",
            "the cost = 12m",
            "a = b in this sense",
        ] {
            let f = found(t);
            assert!(f.iter().all(|q| q.3 == Some(Skip::Variable)), "{t}: {f:?}");
        }
        assert_eq!(found("Day 1 = 5 miles")[0].3, Some(Skip::Label));
        assert_eq!(found("= 5")[0].3, Some(Skip::Empty));
        assert_eq!(found("2 + 3 =")[0].3, Some(Skip::Empty));
        // A chain after an assignment still checks its arithmetic.
        let f = found("x = 2 + 3 = 6");
        assert_eq!(f[0].3, Some(Skip::Variable));
        assert_eq!(
            (f[1].0.as_str(), f[1].2.as_str(), f[1].3),
            ("2 + 3", "6", None)
        );
        // A word before an unary minus is prose; before a binary one, a variable.
        assert_eq!(found("is -3 + 5 = 2")[0].3, None);
    }

    #[test]
    fn sides_cut_by_unread_characters_are_skipped() {
        assert_eq!(found("the ratio 3:4 = 0.75")[0].3, Some(Skip::Cut));
        assert_eq!(found("1,2,3 = 6")[0].3, Some(Skip::Cut));
        assert_eq!(found("10/4 = 2,5")[0].3, Some(Skip::Cut));
        assert_eq!(found("Answer: 12 * 4 = 48")[0].3, None);
        assert_eq!(found("(a) 2 + 2 = 4"), one("2 + 2", "4"));
        assert_eq!(found("1) 5 + 3 = 8"), one("5 + 3", "8"));
    }

    #[test]
    fn not_claims() {
        assert!(found("on 2024-01-02, pages 10-20").is_empty());
        assert!(found("if a == b and 2+2 == 4").is_empty());
        assert!(found("x += 1; y != 2; z := 3").is_empty());
        assert!(found("1, 2, 3 and 4.").is_empty());
    }

    #[test]
    fn look_alikes_are_folded() {
        assert_eq!(found("２＋２＝５"), one("2+2", "5"));
        assert_eq!(found("7 − 2 = 5"), one("7 - 2", "5"));
        assert_eq!(found("3 × 4 = 12"), one("3 * 4", "12"));
        assert_eq!(found("12 ÷ 4 = 3"), one("12 / 4", "3"));
        assert_eq!(found("3² = 9"), one("3^2", "9"));
        assert_eq!(found("𝟐 + 𝟐 = 𝟒"), one("2 + 2", "4"));
    }

    #[test]
    fn multiplication_words_and_emphasis() {
        assert_eq!(found("3 x 4 = 12"), one("3 * 4", "12"));
        assert_eq!(found("20% of 50 = 10"), one("20% * 50", "10"));
        assert_eq!(found("**2 + 2 = 4**"), one("2 + 2", "4"));
        assert_eq!(found("(so 2 + 2 = 4)"), one("2 + 2", "4"));
        // Code is read like prose: a wrong claim has nowhere to hide.
        assert_eq!(found("`48 / 6 = 8`"), one("48 / 6", "8"));
        assert_eq!(found("```\n2+2=5\n```"), one("2+2", "5"));
    }

    #[test]
    fn spans_are_byte_ranges_of_the_sides() {
        let t = "So 5 + 3 = 8 apples.";
        let q = &equalities(t)[0];
        assert_eq!(&t[q.start..q.end], "5 + 3 = 8");
        let t = "ok ２＋２＝５ done";
        let q = &equalities(t)[0];
        assert_eq!(&t[q.start..q.end], "２＋２＝５");
    }

    #[test]
    fn ten_thousand_equations_scan_in_linear_time() {
        let t = "2+2=4 ".repeat(10_000);
        let t0 = std::time::Instant::now();
        assert_eq!(equalities(&t).len(), 10_000);
        assert!(t0.elapsed().as_millis() < 2_000);
    }
}
