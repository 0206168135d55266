//! Errors of the command line name the file, the offending value and what was expected, and
//! carry the right exit code: 1 for what the system showed, 2 for what the user typed.

#[path = "common/acceptance.rs"]
mod acceptance;

use acceptance::*;

#[test]
fn a_malformed_osrelease_is_a_system_error_naming_the_file_and_its_content() {
    let root = cpu_root(1, 2, 1, "garbage");
    let cfg = empty_config();
    let out = irqwise(root.path(), cfg.path()).args(["spread", "groups", "--groups", "2"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("proc/sys/kernel/osrelease") && err.contains("garbage"), "{err}");
    assert!(err.contains("--kernel"), "says how to get past it: {err}");
}

#[test]
fn a_malformed_kernel_option_is_a_usage_error() {
    let root = cpu_root(1, 2, 1, "6.1.0");
    let cfg = empty_config();
    let out = irqwise(root.path(), cfg.path())
        .args(["spread", "groups", "--groups", "2", "--kernel", "six"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--kernel") && err.contains("\"six\""), "{err}");
}

#[test]
fn plan_warns_when_the_kernel_release_is_unreadable_and_says_which_rules_it_used() {
    let root = cpu_root(1, 2, 1, "garbage");
    std::fs::create_dir_all(root.path().join("sys/bus/pci/devices")).unwrap();
    let cfg = empty_config();
    let plan = plan_json(root.path(), cfg.path());
    let warnings = plan["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("osrelease") && w.contains("garbage") && w.contains("6.11"))),
        "{warnings:?}"
    );
}
