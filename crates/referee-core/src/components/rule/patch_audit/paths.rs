//! The checks on which files a patch writes: `test_edit`, `test_config_edit`, `ci_edit` and
//! `outside_allowed`.

use super::diff::Kind;
use super::{Check, Findings, View};
use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use std::sync::LazyLock;

/// Test files by the conventions of pytest, unittest, Django, Go, Jest/Vitest/Mocha, RSpec,
/// JUnit and Swift (`tests/`, `test_*.py`, `*_test.go`, `*.spec.ts`, `conftest.py`, ...).
pub const TEST_GLOBS: &[&str] = &[
    "**/tests/**",
    "**/test/**",
    "**/Tests/**",
    "**/__tests__/**",
    "testing/**",
    "spec/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/tests.py",
    "**/conftest.py",
    "**/*_test.go",
    "**/*.{test,spec}.{js,jsx,ts,tsx,mjs,cjs}",
    "**/*_spec.rb",
    "**/*{Test,Tests}.{java,kt}",
];

/// Test runners' own configuration: any edit to these is a finding.
const CONFIG_GLOBS: &[&str] = &[
    "**/{,.}pytest.{ini,toml}",
    "**/tox.ini",
    "**/noxfile.py",
    "**/.coveragerc",
    "**/{jest,vitest}.{config,setup,workspace}.*",
    "**/.mocharc*",
    "**/karma.conf.*",
    "**/{playwright,cypress}.config.*",
    "**/phpunit.xml*",
];

/// Continuous integration: any edit to these is a finding.
const CI_GLOBS: &[&str] = &[
    ".github/**",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".circleci/**",
    ".travis.yml",
    "azure-pipelines.yml",
    ".azure-pipelines/**",
    "Jenkinsfile",
    ".buildkite/**",
    "{,.}appveyor.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    "**/tox.ini",
];

const MAKEFILES: &[&str] = &["**/{Makefile,makefile,GNUmakefile}", "**/*.mk"];

/// Builds a glob set; `None` with the first bad pattern and why.
pub fn glob_set(patterns: &[&str]) -> Result<GlobSet, (usize, String)> {
    let mut b = GlobSetBuilder::new();
    for (i, p) in patterns.iter().enumerate() {
        b.add(glob(p).map_err(|e| (i, e.kind().to_string()))?);
    }
    b.build().map_err(|e| (0, e.to_string()))
}

/// One glob: `*` stays within a path segment, as in `.gitignore`.
pub fn glob(p: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(p).literal_separator(true).build()
}

fn built_in(patterns: &[&str]) -> GlobSet {
    glob_set(patterns).expect("the built-in globs are valid")
}

static CONFIG: LazyLock<GlobSet> = LazyLock::new(|| built_in(CONFIG_GLOBS));
static CI: LazyLock<GlobSet> = LazyLock::new(|| built_in(CI_GLOBS));
static MAKE: LazyLock<GlobSet> = LazyLock::new(|| built_in(MAKEFILES));

/// A path as globs see it: `\` read as `/`, `./` and repeated `/` dropped.
pub fn normalize(p: &str) -> String {
    let p = p.replace('\\', "/");
    let mut out: Vec<&str> = Vec::new();
    for (i, seg) in p.split('/').enumerate() {
        if seg == "." || (seg.is_empty() && i > 0) {
            continue;
        }
        out.push(seg);
    }
    out.join("/")
}

/// Why a path is never acceptable, whatever `allowed` says.
fn refused(raw: &str, norm: &str) -> Option<&'static str> {
    if raw.chars().any(char::is_control) {
        return Some("a control character in the path");
    }
    if norm.is_empty() {
        return Some("an empty path");
    }
    if norm.starts_with('/') {
        return Some("an absolute path");
    }
    if norm.starts_with('~') {
        return Some("a path in a home directory");
    }
    let b = norm.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Some("a drive path");
    }
    if norm.split('/').any(|s| s == "..") {
        return Some("a path that climbs out of the repository (`..`)");
    }
    if norm
        .split('/')
        .any(|s| s.eq_ignore_ascii_case(".git") || s.eq_ignore_ascii_case(".git~"))
    {
        return Some("a path inside `.git` (hooks, config)");
    }
    None
}

/// The checks on the files a section writes.
pub fn check_files(v: &View<'_, '_>, out: &mut Findings) {
    let f = v.f;
    let file = v.path.as_str();
    if v.on(Check::OutsideAllowed) {
        for raw in f.written() {
            let norm = normalize(raw);
            if let Some(why) = refused(raw, &norm) {
                out.file(Check::OutsideAllowed, file, raw, why);
            } else if v.allowed.is_some_and(|a| !a.is_match(&norm)) {
                out.file(
                    Check::OutsideAllowed,
                    file,
                    raw,
                    "outside the allowed paths",
                );
            }
        }
        if f.binary {
            out.file(
                Check::OutsideAllowed,
                file,
                "GIT binary patch",
                "a binary patch, which cannot be audited",
            );
        }
        for m in &f.modes {
            match *m {
                "120000" => out.file(
                    Check::OutsideAllowed,
                    file,
                    "mode 120000",
                    "a symlink: where it points cannot be audited",
                ),
                "160000" => out.file(
                    Check::OutsideAllowed,
                    file,
                    "mode 160000",
                    "a submodule link: what it points to cannot be audited",
                ),
                _ => {}
            }
        }
    }
    if v.on(Check::TestEdit) && v.test {
        let conftest = f.written().any(|p| {
            normalize(p)
                .rsplit('/')
                .next()
                .is_some_and(|n| n == "conftest.py")
        });
        let what = if f.renamed {
            format!(
                "renames a test file ({} to {})",
                f.old.as_deref().unwrap_or("?"),
                f.new.as_deref().unwrap_or("?")
            )
        } else if f.deleted {
            "deletes a test file".into()
        } else if f.created || f.copied {
            "adds a test file".into()
        } else {
            "modifies a test file".into()
        };
        let new_only = (f.created || f.copied) && !f.renamed && !f.deleted;
        if !(new_only && v.audit.allow_new_tests && !conftest) {
            out.file(Check::TestEdit, file, file, &what);
        }
    }
    let norms: Vec<String> = f.written().map(normalize).collect();
    let any = |g: &GlobSet| norms.iter().any(|p| g.is_match(p));
    if v.on(Check::TestConfigEdit) {
        if any(&CONFIG) {
            out.file(
                Check::TestConfigEdit,
                file,
                file,
                "edits the test runner's configuration",
            );
        } else if let Some(kind) = norms.iter().find_map(|p| sectioned(p)) {
            config_lines(v, kind, out);
        }
    }
    if v.on(Check::CiEdit) {
        if any(&CI) {
            out.file(Check::CiEdit, file, file, "edits CI configuration");
        }
        if any(&MAKE) {
            make_lines(v, out);
        }
    }
}

/// Files where only some edits touch the test setup.
#[derive(Clone, Copy, PartialEq)]
enum Sectioned {
    /// `setup.cfg`, `pyproject.toml`: the pytest, tox and coverage sections.
    Ini,
    /// `package.json`: the test scripts and the runners' keys.
    Package,
    /// `setup.py`: plugin entry points and test commands.
    SetupPy,
}

fn sectioned(p: &str) -> Option<Sectioned> {
    match p.rsplit('/').next()? {
        "setup.cfg" | "pyproject.toml" => Some(Sectioned::Ini),
        "package.json" => Some(Sectioned::Package),
        "setup.py" => Some(Sectioned::SetupPy),
        _ => None,
    }
}

static TEST_SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)pytest|tox|testenv|coverage|\bnox\b").expect("valid"));
static PYTEST_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(addopts|testpaths|python_files|python_classes|python_functions|norecursedirs|collect_ignore|confcutdir|filterwarnings|xfail_strict|required_plugins|usefixtures|fail_under)\s*=",
    )
    .expect("valid")
});
static PLUGIN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bpytest11\b").expect("valid"));
static PACKAGE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""((pre|post)?test(:[^"]*)?|jest|mocha|vitest|ava|c8|nyc)"\s*:"#).expect("valid")
});
static PACKAGE_BLOCK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""(jest|mocha|ava|c8|nyc)"\s*:\s*\{"#).expect("valid"));
static SETUP_PY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(pytest11|test_suite|tests_require)\b|\bcmdclass\b.*\btest").expect("valid")
});

/// The first line of the file that edits the test setup, if any (one finding per file).
fn config_lines(v: &View<'_, '_>, kind: Sectioned, out: &mut Findings) {
    for h in &v.f.hunks {
        let mut section = section_of(h.context);
        let block =
            kind == Sectioned::Package && h.lines.iter().any(|l| PACKAGE_BLOCK.is_match(l.text));
        for l in &h.lines {
            if kind == Sectioned::Ini {
                if let Some(s) = section_of(l.text) {
                    section = Some(s);
                }
            }
            if l.kind == Kind::Context {
                continue;
            }
            let hit = match kind {
                Sectioned::Ini => {
                    PLUGIN.is_match(l.text)
                        || match section {
                            Some(s) => TEST_SECTION.is_match(s),
                            None => PYTEST_KEY.is_match(l.text),
                        }
                }
                Sectioned::Package => block || PACKAGE_KEY.is_match(l.text),
                Sectioned::SetupPy => SETUP_PY.is_match(l.text),
            };
            if hit {
                out.line(
                    Check::TestConfigEdit,
                    v,
                    l,
                    "edits the test runner's settings",
                );
                return;
            }
        }
    }
}

/// `[section]` or `[[table]]` as its name.
fn section_of(t: &str) -> Option<&str> {
    let t = t.trim();
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.trim_matches(['[', ']']).trim())
}

static TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([A-Za-z0-9_.%/$(){}-]+(?:[ \t]+[A-Za-z0-9_.%/$(){}-]+)*)[ \t]*::?(?:[^=]|$)")
        .expect("valid")
});
static TEST_WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)test|check").expect("valid"));
static RUNNER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(pytest|py\.test|tox|nox|unittest|go test|cargo test|npm test|npm run test|yarn test|jest|mocha|vitest)\b")
        .expect("valid")
});

/// The first Makefile edit inside a test target (or that runs a test runner), if any.
fn make_lines(v: &View<'_, '_>, out: &mut Findings) {
    for h in &v.f.hunks {
        let mut target = TARGET
            .captures(h.context)
            .map(|c| c.get(1).map_or("", |m| m.as_str()));
        for l in &h.lines {
            if let Some(c) = TARGET.captures(l.text) {
                target = c.get(1).map(|m| m.as_str());
            }
            if l.kind == Kind::Context {
                continue;
            }
            if target.is_some_and(|t| TEST_WORD.is_match(t)) || RUNNER.is_match(l.text) {
                out.line(Check::CiEdit, v, l, "edits a test target of the Makefile");
                return;
            }
        }
    }
}
