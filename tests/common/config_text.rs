//! What the configuration tests share: the machine they validate against, writing a config tree,
//! and checking one file's errors.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use irqwise::config::{check, parse_files, ConfigPaths, MachineShape, SourceFile};
use irqwise::cpuset::CpuSet;

pub fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// The machine every test validates against: CPUs 0-63.
pub fn possible() -> MachineShape {
    MachineShape::with_cpus(cpus("0-63"))
}

/// Writes `text` at `root/rel`, creating directories.
pub fn put(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

pub const MAIN: &str = "etc/irqwise/irqwise.toml";
pub const USR: &str = "usr/lib/irqwise/conf.d";
pub const RUN: &str = "run/irqwise/conf.d";
pub const ETC: &str = "etc/irqwise/conf.d";

/// Checks a config tree holding only `etc/irqwise/conf.d/50-test.toml` = `text`; returns the
/// file's path and the error messages.
pub fn errors_of(text: &str) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = put(dir.path(), &format!("{ETC}/50-test.toml"), text);
    let report = check(&ConfigPaths::under(dir.path()), &possible());
    assert!(report.config.is_none() || report.errors.is_empty());
    (path.display().to_string(), report.errors.iter().map(std::string::ToString::to_string).collect())
}

/// Asserts that `text` gives exactly one error, at `line:col`, whose message contains every
/// piece of `wanted`; returns the error message.
pub fn assert_one_error(text: &str, line: usize, col: usize, wanted: &[&str]) -> String {
    let (path, errors) = errors_of(text);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let msg = &errors[0];
    assert!(msg.starts_with(&format!("{path}:{line}:{col}: ")), "want {path}:{line}:{col}, got {msg}");
    for w in wanted {
        assert!(msg.contains(w), "{msg:?} lacks {w:?}");
    }
    msg.clone()
}

/// Parses one in-memory file that must validate.
pub fn parse_ok(text: &str) -> irqwise::config::Config {
    let r = parse_files(&[SourceFile { path: "t.toml".into(), text: text.into() }], &possible());
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    r.config.unwrap()
}
