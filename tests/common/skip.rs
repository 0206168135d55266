//! Tests that cannot run here say so, and CI can forbid it.
//!
//! A test that needs root or a tool this machine lacks calls [`skip`] and returns: the reason is
//! printed as `SKIP <test>: <why>` (nextest shows it with `--no-capture`, and `cargo test` always
//! prints it). With `IRQWISE_TEST_NO_SKIP=1` (set by `.ci/run`) a skip is a failure instead, so a
//! green CI proves that every such test ran.
#![allow(dead_code)]

/// The variable that turns every skip into a failure.
pub const NO_SKIP: &str = "IRQWISE_TEST_NO_SKIP";

/// Reports that `test` cannot run here because of `why`; panics when skips are forbidden. The
/// caller returns right after.
pub fn skip(test: &str, why: &str) {
    if std::env::var(NO_SKIP).is_ok_and(|v| v == "1") {
        panic!("{test} cannot run here ({why}), and {NO_SKIP}=1 forbids skipping it");
    }
    eprintln!("SKIP {test}: {why}");
}
