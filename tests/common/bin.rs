//! The real `irqwise` binary, run the one way the tests share: [`irqwise_with`] is the command
//! with `--root` and `--config` ([`irqwise`] without `--config`, for `status` and `claims`,
//! which read none), to which a test adds its arguments; [`ran`] runs it to its end and keeps what it printed as
//! text. A test that runs the binary under another program (`timeout`, `unshare`, a shell
//! with `ulimit`) passes that program [`BIN`].
#![allow(dead_code)] // each test binary uses its own part

use std::path::Path;
use std::process::Command;

/// The built binary (cargo builds it for the integration tests; an example that includes these
/// helpers, where cargo names no binary, gets the one on `PATH`).
pub const BIN: &str = match option_env!("CARGO_BIN_EXE_irqwise") {
    Some(path) => path,
    None => "irqwise",
};

/// `irqwise --root ROOT`.
pub fn irqwise(root: impl AsRef<Path>) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--root").arg(root.as_ref());
    cmd
}

/// `irqwise --root ROOT --config CONFIG`.
pub fn irqwise_with(root: impl AsRef<Path>, config: impl AsRef<Path>) -> Command {
    let mut cmd = irqwise(root);
    cmd.arg("--config").arg(config.as_ref());
    cmd
}

/// How a run ended: its exit code (`None`: killed by a signal) and what it printed.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// stdout, then stderr.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `cmd` to its end (panics only when it cannot be started).
pub fn ran(cmd: &mut Command) -> Ran {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
