//! A unified-diff reader for auditing a patch, not for applying it.
//!
//! Written here rather than taken from a crate: `patch` 0.7 panics on `\ No newline at end of
//! file` and drops rename-only and binary sections; `diffy` 0.4 reads one file per patch,
//! rejects CRLF and refuses a hunk whose counts are off; `unidiff` 0.3 drops rename-only and
//! binary sections and stops a hunk at its declared count, so lines past it (which
//! `git apply --recount` applies) are never seen. An audit must see everything some applier
//! might write, so this reader is deliberately more permissive than any of them:
//!
//! - A hunk's body runs as far as its lines look like diff lines (` `, `+`, `-`, `\`, or empty),
//!   as `git apply --recount` reads it: the declared counts only decide whether a line that is
//!   no diff line is garbage inside the hunk (a [`Problem`]) or commentary after it.
//! - A hunk ends at `@@`, at `diff --git`, and at a `---`/`+++` pair followed by `@@` (or any
//!   `---`/`+++` pair once its counts are used up), which starts a new file: every path a
//!   header names is audited, so a header hidden in a hunk cannot hide a file.
//! - Every path a section names (the `diff --git` line, `rename`/`copy` lines, `---`/`+++`)
//!   is kept; `a/` and `b/` prefixes are dropped and git's C-quoted names are unquoted.
//! - CRLF line ends are read as LF. Text before the first header and between sections is
//!   commentary, as for `git apply`; a context-format or normal diff in it (which GNU `patch`
//!   would apply) is a [`Problem`], since this reader does not audit those formats.

use std::borrow::Cow;

/// A parsed diff: its file sections and what could not be read.
#[derive(Debug, Default)]
pub struct Diff<'a> {
    pub files: Vec<FilePatch<'a>>,
    pub problems: Vec<Problem>,
    /// Hunks whose lines disagree with their header's counts (read as the lines say).
    pub recounted: usize,
}

/// Something in the text that cannot be audited, at a line of the diff (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub line: usize,
    pub text: String,
}

/// One file's section. Its flags are git's header lines, which combine freely.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Default)]
pub struct FilePatch<'a> {
    /// Every path the section names, as written (prefix dropped), in order, without repeats.
    pub paths: Vec<Cow<'a, str>>,
    /// The old and new path; `None` for `/dev/null` or when not given.
    pub old: Option<Cow<'a, str>>,
    pub new: Option<Cow<'a, str>>,
    pub created: bool,
    pub deleted: bool,
    pub renamed: bool,
    pub copied: bool,
    /// A copy's source, which the patch reads but does not write.
    pub copy_from: Option<Cow<'a, str>>,
    /// File modes the section sets (`new file mode`, `new mode`), e.g. `120000` for a symlink.
    pub modes: Vec<&'a str>,
    pub binary: bool,
    pub hunks: Vec<Hunk<'a>>,
    /// Whether the section started at `diff --git` (so its first `---`/`+++` belong to it).
    git: bool,
    /// Whether it has had its `---`/`+++` lines.
    marked: bool,
}

#[derive(Debug)]
pub struct Hunk<'a> {
    /// The text after the header's second `@@` (git's function context).
    pub context: &'a str,
    pub lines: Vec<Line<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Context,
    Added,
    Removed,
}

#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    pub kind: Kind,
    /// The line without its first character and without a trailing `\r`.
    pub text: &'a str,
    /// Its line number in the file: the new file's for added and context lines, the old
    /// file's for removed ones (from the hunk header, counted on).
    pub number: usize,
}

impl<'a> FilePatch<'a> {
    /// A section that only names a file (a diff given under its path that names no file).
    pub fn named(p: &'a str) -> Self {
        let mut f = FilePatch {
            old: Some(Cow::Borrowed(p)),
            new: Some(Cow::Borrowed(p)),
            ..FilePatch::default()
        };
        f.name(Cow::Borrowed(p));
        f
    }

    /// The paths the section writes: every path it names but a copy's source.
    pub fn written(&self) -> impl Iterator<Item = &str> {
        self.paths
            .iter()
            .map(|p| &**p)
            .filter(move |p| self.copy_from.as_deref() != Some(*p))
    }

    fn name(&mut self, p: Cow<'a, str>) {
        if !p.is_empty() && !self.paths.contains(&p) {
            self.paths.push(p);
        }
    }

    /// The path the section writes (new, else old), for findings.
    pub fn path(&self) -> &str {
        self.new
            .as_deref()
            .or(self.old.as_deref())
            .or(self.paths.first().map(|p| &**p))
            .unwrap_or("")
    }
}

/// Splits text into lines, dropping one trailing `\r` from each.
fn lines(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if text.ends_with('\n') {
        out.pop();
    }
    out
}

/// Parses `text`. Hunks before any header belong to a section for `default_path` (a diff
/// given under its file's name) or, without one, to a section with no path (and a problem).
pub fn parse<'a>(text: &'a str, default_path: Option<&'a str>) -> Diff<'a> {
    let ls = lines(text);
    let mut d = Diff::default();
    let mut cur: Option<FilePatch<'a>> = None;
    let mut i = 0;
    let starts_file = |i: usize| -> bool {
        ls[i].starts_with("--- ") && ls.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
    };
    while i < ls.len() {
        let l = ls[i];
        if let Some(rest) = l.strip_prefix("diff --git ") {
            d.files.extend(cur.take());
            let mut f = FilePatch {
                git: true,
                ..FilePatch::default()
            };
            let (a, b) = git_header_paths(rest);
            if let Some(a) = a {
                f.old = Some(a.clone());
                f.name(a);
            }
            if let Some(b) = b {
                f.new = Some(b.clone());
                f.name(b);
            }
            cur = Some(f);
            i += 1;
            continue;
        }
        if starts_file(i) {
            let old = header_path(&ls[i][4..]);
            let new = header_path(&ls[i + 1][4..]);
            // `---`/`+++` complete a `diff --git` header that has no hunks yet; otherwise they
            // start a section of their own (a plain diff).
            let join = cur
                .as_ref()
                .is_some_and(|f| f.git && !f.marked && f.hunks.is_empty());
            if !join {
                d.files.extend(cur.take());
                cur = Some(FilePatch::default());
            }
            let f = cur.as_mut().expect("a section");
            f.marked = true;
            match old {
                Some(p) => {
                    f.old = Some(p.clone());
                    f.name(p);
                }
                None => f.created = true,
            }
            match new {
                Some(p) => {
                    f.new = Some(p.clone());
                    f.name(p);
                }
                None => f.deleted = true,
            }
            i += 2;
            continue;
        }
        if l.starts_with("@@") {
            let f = cur.get_or_insert_with(|| {
                let mut f = FilePatch::default();
                match default_path {
                    Some(p) => {
                        f.old = Some(Cow::Borrowed(p));
                        f.new = Some(Cow::Borrowed(p));
                        f.name(Cow::Borrowed(p));
                    }
                    None => d.problems.push(Problem {
                        line: i + 1,
                        text: "a hunk before any file header: which file it changes is unknown"
                            .into(),
                    }),
                }
                f
            });
            i = hunk(&ls, i, f, &mut d.problems, &mut d.recounted);
            continue;
        }
        if let Some(f) = cur.as_mut().filter(|f| f.hunks.is_empty()) {
            if extended_header(l, f) {
                i += 1;
                if f.binary && l.starts_with("GIT binary patch") {
                    // The base85 payload runs to the next header.
                    while i < ls.len() && !ls[i].starts_with("diff --git ") && !starts_file(i) {
                        i += 1;
                    }
                }
                continue;
            }
        }
        if let Some(names) = l
            .strip_prefix("Binary files ")
            .and_then(|r| r.strip_suffix(" differ"))
        {
            let f = cur.get_or_insert_with(|| {
                let mut f = FilePatch::default();
                for p in names.split(" and ").filter_map(header_path) {
                    f.name(p);
                }
                f
            });
            f.binary = true;
            i += 1;
            continue;
        }
        if l.starts_with("GIT binary patch") {
            // Outside a header (after a file's hunks): no applier reads it there, but an audit
            // cannot tell what a tool that does would write.
            d.problems.push(Problem {
                line: i + 1,
                text: "a binary patch outside a file header".into(),
            });
        } else if let Some(what) = other_format(&ls, i) {
            d.problems.push(Problem {
                line: i + 1,
                text: format!("{what}, which this audit does not read (GNU patch applies it)"),
            });
        }
        i += 1;
    }
    d.files.extend(cur);
    if d.files.is_empty() && d.problems.is_empty() && !text.trim().is_empty() {
        d.problems.push(Problem {
            line: 1,
            text: "no unified diff in the text".into(),
        });
    }
    d
}

/// Reads the hunk whose header is line `i`; returns the index of the first line after it.
fn hunk<'a>(
    ls: &[&'a str],
    i: usize,
    f: &mut FilePatch<'a>,
    problems: &mut Vec<Problem>,
    recounted: &mut usize,
) -> usize {
    let (old_start, mut old_left, new_start, mut new_left, context) = hunk_header(ls[i])
        .unwrap_or_else(|| {
            problems.push(Problem {
                line: i + 1,
                text: format!("unreadable hunk header `{}`", crate::node::shorten(ls[i])),
            });
            // Its lines are still audited, with no counts to trust.
            (1, 0, 1, 0, "")
        });
    let (mut old_no, mut new_no) = (old_start.max(1), new_start.max(1));
    let mut h = Hunk {
        context,
        lines: Vec::new(),
    };
    // Whether some line lies past the counts; empty lines past them are held back, since the
    // text's own trailing line ends look like them.
    let mut off = false;
    let mut blank_tail = 0;
    let mut j = i + 1;
    while j < ls.len() {
        let l = ls[j];
        let counts_left = old_left > 0 || new_left > 0;
        let pair = l.starts_with("--- ") && ls.get(j + 1).is_some_and(|n| n.starts_with("+++ "));
        if l.starts_with("diff --git ")
            || l.starts_with("@@")
            || (pair && (!counts_left || ls.get(j + 2).is_some_and(|n| n.starts_with("@@"))))
        {
            break;
        }
        let (kind, text) = match l.as_bytes().first() {
            None => (Kind::Context, ""),
            Some(b' ') => (Kind::Context, &l[1..]),
            Some(b'+') => (Kind::Added, &l[1..]),
            Some(b'-') => (Kind::Removed, &l[1..]),
            Some(b'\\') => {
                j += 1;
                continue;
            }
            Some(_) => {
                if counts_left {
                    problems.push(Problem {
                        line: j + 1,
                        text: format!(
                            "`{}` inside a hunk is not a diff line",
                            crate::node::shorten(l)
                        ),
                    });
                }
                break;
            }
        };
        let held = l.is_empty() && !counts_left;
        if held {
            blank_tail += 1;
        } else if blank_tail > 0 {
            off = true;
            blank_tail = 0;
        }
        let number = match kind {
            Kind::Removed => old_no,
            _ => new_no,
        };
        match kind {
            Kind::Context => {
                off |= !held && (old_left == 0 || new_left == 0);
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
                old_no += 1;
                new_no += 1;
            }
            Kind::Removed => {
                off |= old_left == 0;
                old_left = old_left.saturating_sub(1);
                old_no += 1;
            }
            Kind::Added => {
                off |= new_left == 0;
                new_left = new_left.saturating_sub(1);
                new_no += 1;
            }
        }
        h.lines.push(Line { kind, text, number });
        j += 1;
    }
    h.lines.truncate(h.lines.len() - blank_tail);
    if off || old_left > 0 || new_left > 0 {
        *recounted += 1;
    }
    f.hunks.push(h);
    j
}

/// `@@ -a,b +c,d @@ context` as `(a, b, c, d, context)`; a count left out is 1.
fn hunk_header(l: &str) -> Option<(usize, usize, usize, usize, &str)> {
    let rest = l.strip_prefix("@@ -")?;
    let (ranges, context) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        let (s, n) = r.split_once(',').unwrap_or((r, "1"));
        Some((s.parse().ok()?, n.parse().ok()?))
    };
    let (a, b) = range(old)?;
    let (c, d) = range(new)?;
    Some((a, b, c, d, context.strip_prefix(' ').unwrap_or(context)))
}

/// Reads a git extended header line into `f`; false when `l` is none.
fn extended_header<'a>(l: &'a str, f: &mut FilePatch<'a>) -> bool {
    let word = |p: &str| l.strip_prefix(p).map(str::trim);
    if let Some(m) = word("new file mode ") {
        f.created = true;
        f.modes.push(m);
    } else if let Some(m) = word("new mode ") {
        f.modes.push(m);
    } else if word("deleted file mode ").is_some() {
        f.deleted = true;
    } else if word("old mode ").is_some()
        || word("index ").is_some()
        || word("similarity index ").is_some()
        || word("dissimilarity index ").is_some()
    {
    } else if let Some(p) = l.strip_prefix("rename from ") {
        f.renamed = true;
        f.name(unquote(p));
    } else if let Some(p) = l.strip_prefix("rename to ") {
        f.renamed = true;
        f.name(unquote(p));
    } else if let Some(p) = l.strip_prefix("copy from ") {
        f.copied = true;
        f.copy_from = Some(unquote(p));
        f.name(unquote(p));
    } else if let Some(p) = l.strip_prefix("copy to ") {
        f.copied = true;
        f.name(unquote(p));
    } else if l.starts_with("GIT binary patch") {
        f.binary = true;
    } else {
        return false;
    }
    true
}

/// A diff in another format starting at line `i` (the kind, for the problem), if any.
fn other_format(ls: &[&str], i: usize) -> Option<&'static str> {
    let l = ls[i];
    if l.starts_with("***************")
        || (l.starts_with("*** ") && ls.get(i + 1).is_some_and(|n| n.starts_with("--- ")))
    {
        return Some("a context-format diff");
    }
    let next_is_body = ls
        .get(i + 1)
        .is_some_and(|n| n.starts_with("< ") || n.starts_with("> "));
    if next_is_body && is_normal_command(l) {
        return Some("a normal-format diff");
    }
    None
}

/// `12a13`, `3,5c3,4`, `7d6`: a normal diff's command line.
fn is_normal_command(l: &str) -> bool {
    let Some(pos) = l.find(['a', 'c', 'd']) else {
        return false;
    };
    let range = |r: &str| {
        !r.is_empty()
            && r.split(',').count() <= 2
            && r.split(',')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    range(&l[..pos]) && range(&l[pos + 1..])
}

/// The path of a `---`/`+++` line (after the marker): unquoted, timestamp and `a/`/`b/`
/// dropped; `None` for `/dev/null`.
fn header_path(s: &str) -> Option<Cow<'_, str>> {
    let p = if s.starts_with('"') {
        unquote(s)
    } else {
        Cow::Borrowed(s.split('\t').next().unwrap_or(s).trim_end())
    };
    if p == "/dev/null" {
        return None;
    }
    Some(strip_prefix(p))
}

fn strip_prefix(p: Cow<'_, str>) -> Cow<'_, str> {
    match p {
        Cow::Borrowed(s) => Cow::Borrowed(
            s.strip_prefix("a/")
                .or_else(|| s.strip_prefix("b/"))
                .unwrap_or(s),
        ),
        Cow::Owned(s) => match s.strip_prefix("a/").or_else(|| s.strip_prefix("b/")) {
            Some(rest) => Cow::Owned(rest.to_string()),
            None => Cow::Owned(s),
        },
    }
}

/// The two paths of `diff --git a/X b/Y` (after `diff --git `), prefixes dropped.
fn git_header_paths(rest: &str) -> (Option<Cow<'_, str>>, Option<Cow<'_, str>>) {
    let rest = rest.trim_end();
    if rest.starts_with('"') {
        // A quoted first name: its closing quote ends it.
        let end = closing_quote(rest).unwrap_or(rest.len());
        let a = unquote(&rest[..end]);
        let b = rest[end..].trim_start();
        let b = if b.starts_with('"') {
            unquote(b)
        } else {
            Cow::Borrowed(b)
        };
        return (Some(strip_prefix(a)), Some(strip_prefix(b)));
    }
    if rest.ends_with('"') {
        if let Some(k) = rest.rfind(" \"") {
            return (
                Some(strip_prefix(Cow::Borrowed(&rest[..k]))),
                Some(strip_prefix(unquote(&rest[k + 1..]))),
            );
        }
    }
    // Unquoted: the split where both names agree (`a/x y b/x y`), else the first ` b/`.
    let splits: Vec<usize> = rest.match_indices(" b/").map(|(k, _)| k).collect();
    let pick = splits
        .iter()
        .copied()
        .find(|&k| rest[..k].strip_prefix("a/") == Some(&rest[k + 3..]))
        .or_else(|| splits.first().copied());
    if let Some(k) = pick {
        return (
            Some(strip_prefix(Cow::Borrowed(&rest[..k]))),
            Some(strip_prefix(Cow::Borrowed(&rest[k + 1..]))),
        );
    }
    // No prefixes (`--no-prefix`): the middle when both halves agree, else the first space.
    let n = rest.len();
    if n % 2 == 1 && rest.is_char_boundary(n / 2) && rest.as_bytes()[n / 2] == b' ' {
        let (a, b) = (&rest[..n / 2], &rest[n / 2 + 1..]);
        if a == b {
            return (Some(Cow::Borrowed(a)), Some(Cow::Borrowed(b)));
        }
    }
    match rest.split_once(' ') {
        Some((a, b)) => (Some(Cow::Borrowed(a)), Some(Cow::Borrowed(b))),
        None => (Some(Cow::Borrowed(rest)), None),
    }
}

/// The index just past the closing quote of a C-quoted string starting at 0.
fn closing_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut k = 1;
    while k < b.len() {
        match b[k] {
            b'\\' => k += 2,
            b'"' => return Some(k + 1),
            _ => k += 1,
        }
    }
    None
}

/// Git's C-quoted names (`"a/t\303\251st.py"`) as text; anything else as written.
fn unquote(s: &str) -> Cow<'_, str> {
    let s = s.trim_end();
    let Some(inner) = s.strip_prefix('"') else {
        return Cow::Borrowed(s);
    };
    let end = closing_quote(s).map_or(inner.len(), |e| e - 2);
    let inner = &inner[..end.min(inner.len())];
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut k = 0;
    while k < b.len() {
        if b[k] != b'\\' || k + 1 >= b.len() {
            out.push(b[k]);
            k += 1;
            continue;
        }
        let c = b[k + 1];
        k += 2;
        out.push(match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    if k < b.len() && (b'0'..=b'7').contains(&b[k]) {
                        v = v * 8 + u32::from(b[k] - b'0');
                        k += 1;
                    }
                }
                (v & 0xff) as u8
            }
            other => other,
        });
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added<'a>(f: &FilePatch<'a>) -> Vec<&'a str> {
        f.hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == Kind::Added)
            .map(|l| l.text)
            .collect()
    }

    #[test]
    fn reads_a_multi_file_git_diff_with_its_extended_headers() {
        let d = parse(
            "From 1 Mon\nSubject: fix\n\ndiff --git a/src/a.py b/src/a.py\nindex 1..2 100644\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1,2 +1,2 @@ def f():\n x = 1\n-y = 2\n+y = 3\ndiff --git a/tests/test_old.py b/keep/old.py\nsimilarity index 90%\nrename from tests/test_old.py\nrename to keep/old.py\ndiff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\ndiff --git a/src/link b/src/link\nnew file mode 120000\n--- /dev/null\n+++ b/src/link\n@@ -0,0 +1 @@\n+../tests\n\\ No newline at end of file\n",
            None,
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        assert_eq!(d.recounted, 0);
        let paths: Vec<Vec<&str>> = d
            .files
            .iter()
            .map(|f| f.paths.iter().map(|p| &**p).collect())
            .collect();
        assert_eq!(
            paths,
            [
                vec!["src/a.py"],
                vec!["tests/test_old.py", "keep/old.py"],
                vec!["run.sh"],
                vec!["src/link"]
            ]
        );
        assert!(d.files[1].renamed && d.files[1].hunks.is_empty());
        assert_eq!(d.files[2].modes, ["100755"]);
        assert!(d.files[3].created && d.files[3].modes == ["120000"]);
        assert_eq!(added(&d.files[3]), ["../tests"]);
        let h = &d.files[0].hunks[0];
        assert_eq!(h.context, "def f():");
        assert_eq!(
            h.lines
                .iter()
                .map(|l| (l.kind, l.number))
                .collect::<Vec<_>>(),
            [(Kind::Context, 1), (Kind::Removed, 2), (Kind::Added, 2)]
        );
    }

    #[test]
    fn lines_past_a_count_that_lies_are_read() {
        let d = parse(
            "--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n-a\n+b\n+import os; os._exit(0)\n\n",
            None,
        );
        assert_eq!(added(&d.files[0]), ["b", "import os; os._exit(0)"]);
        assert_eq!(d.recounted, 1);
        assert!(d.problems.is_empty());
        // The text's own trailing newlines are not lines past the count.
        let honest = parse("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n\n\n", None);
        assert_eq!(honest.recounted, 0);
        assert_eq!(honest.files[0].hunks[0].lines.len(), 2);
    }

    #[test]
    fn a_header_in_a_hunk_starts_a_file_only_when_a_hunk_follows() {
        // A count that lies long cannot swallow the next file's header.
        let d = parse(
            "--- a/src/c.py\n+++ b/src/c.py\n@@ -1,40 +1,40 @@\n-a\n+b\n--- a/tests/test_c.py\n+++ b/tests/test_c.py\n@@ -1 +1 @@\n-x\n+y\n",
            None,
        );
        assert_eq!(d.files.len(), 2);
        assert_eq!(d.files[1].path(), "tests/test_c.py");
        // Without a hunk after it, `---`/`+++` inside the counts are a removed and an added line.
        let d = parse(
            "--- a/src/c.py\n+++ b/src/c.py\n@@ -1,2 +1,3 @@\n--- x\n+++ y\n+import os; os._exit(0)\n ctx\n",
            None,
        );
        assert_eq!(d.files.len(), 1);
        assert_eq!(added(&d.files[0]), ["++ y", "import os; os._exit(0)"]);
        assert_eq!(d.recounted, 0);
    }

    #[test]
    fn garbage_inside_counts_is_a_problem_and_after_them_commentary() {
        let d = parse(
            "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\nnot a diff line\n-b\n+c\n",
            None,
        );
        assert_eq!(d.problems.len(), 1);
        assert_eq!(d.problems[0].line, 5);
        let d = parse(
            "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-b\n+c\n```\nThat is all.\n",
            None,
        );
        assert!(d.problems.is_empty());
    }

    #[test]
    fn crlf_quoted_names_and_missing_counts() {
        let d = parse(
            "diff --git \"a/t\\303\\251st dir/x.py\" \"b/t\\303\\251st dir/x.py\"\r\n--- \"a/t\\303\\251st dir/x.py\"\r\n+++ \"b/t\\303\\251st dir/x.py\"\r\n@@ -3 +3 @@\r\n-a\r\n+b\r\n",
            None,
        );
        assert_eq!(d.files[0].paths, ["tést dir/x.py"]);
        assert_eq!(added(&d.files[0]), ["b"]);
        assert_eq!(d.files[0].hunks[0].lines[0].number, 3);
        let d = parse("diff --git a/my file.py b/my file.py\n", None);
        assert_eq!(d.files[0].paths, ["my file.py"]);
        let d = parse(
            "--- x.py\t2024-01-01 10:00\n+++ x.py\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n",
            None,
        );
        assert_eq!(d.files[0].paths, ["x.py"]);
    }

    #[test]
    fn binary_payloads_are_skipped_and_other_formats_are_problems() {
        let d = parse(
            "diff --git a/m.bin b/m.bin\nGIT binary patch\nliteral 5\nMcmZ?b\n\nliteral 0\nHcmV?d00001\n\ndiff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n",
            None,
        );
        assert!(d.files[0].binary && d.files[0].hunks.is_empty());
        assert_eq!(added(&d.files[1]), ["b"]);
        assert!(d.problems.is_empty());
        let d = parse("Binary files a/x.png and b/x.png differ\n", None);
        assert!(d.files[0].binary);
        assert_eq!(d.files[0].paths, ["x.png"]);
        for text in [
            "*** a/t.py\n--- b/t.py\n***************\n*** 1 ****\n! a\n--- 1 ----\n! b\n",
            "3c3\n< assert a == 1\n---\n> assert True\n",
            "I fixed it.",
            "@@ -1 +1 @@\n-a\n+b\n",
            "--- a/x\n+++ b/x\n@@ -1 +1 junk\n+a\n",
        ] {
            assert!(!parse(text, None).problems.is_empty(), "{text}");
        }
        assert!(parse(" \n\n", None).problems.is_empty());
        let keyed = parse("@@ -1 +1 @@\n-a\n+b\n", Some("src/k.py"));
        assert!(keyed.problems.is_empty());
        assert_eq!(keyed.files[0].paths, ["src/k.py"]);
    }
}
