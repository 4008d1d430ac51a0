//! The languages the sandbox runs. Python runs in the warm zygote itself. A compiled language is
//! compiled once per job, inside the sandbox (compilers read hostile input too), and its binary
//! runs once per test. Adding a compiled language is one entry in [`COMPILED`].

use std::path::PathBuf;

pub struct Compiled {
    /// The `language` name specs use.
    pub name: &'static str,
    /// The compiler, looked up on PATH unless `env_var` names one.
    pub compiler: &'static str,
    pub env_var: &'static str,
    /// The source file name the compiler is given.
    pub file: &'static str,
    /// Flags before `-o a.out source`, and after (libraries).
    pub flags: &'static [&'static str],
    pub libs: &'static [&'static str],
}

pub const COMPILED: &[Compiled] = &[
    Compiled {
        name: "cpp",
        compiler: "g++",
        env_var: "REFEREE_CXX",
        file: "sol.cpp",
        flags: &["-std=c++17", "-O2", "-pipe"],
        libs: &[],
    },
    Compiled {
        name: "c",
        compiler: "gcc",
        env_var: "REFEREE_CC",
        file: "sol.c",
        flags: &["-std=c11", "-O2", "-pipe"],
        libs: &["-lm"],
    },
];

impl Compiled {
    /// The compiler on this machine, if there is one.
    pub fn resolve(&self) -> Option<PathBuf> {
        match std::env::var_os(self.env_var).filter(|v| !v.is_empty()) {
            Some(p) => Some(PathBuf::from(p)).filter(|p| p.exists()),
            None => crate::which(self.compiler),
        }
    }

    /// The compiler's command line inside the sandbox.
    pub fn argv(&self, compiler: &std::path::Path) -> Vec<String> {
        let mut v = vec![compiler.display().to_string()];
        v.extend(self.flags.iter().map(|s| (*s).to_string()));
        v.extend([
            "-o".into(),
            "/tmp/a.out".into(),
            format!("/tmp/{}", self.file),
        ]);
        v.extend(self.libs.iter().map(|s| (*s).to_string()));
        v
    }
}

/// Every language this machine can run: Python, and each compiled language whose compiler exists.
pub fn available() -> Vec<(&'static Compiled, PathBuf)> {
    COMPILED
        .iter()
        .filter_map(|c| c.resolve().map(|p| (c, p)))
        .collect()
}
