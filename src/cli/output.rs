//! The one way every command's output reaches the terminal or a pipe: control characters from
//! the system escaped (JSON already is, see [`super::to_json_text`]), then written in full.
//!
//! Guarantees: a reader that went away (`irqwise plan --json | head -c1`, EPIPE) ends the
//! command quietly with [`EXIT_BROKEN_PIPE`], as a program killed by `SIGPIPE` would; any other
//! failure to write (a full disk, ENOSPC) is one line on stderr naming it, exit 1. Nothing
//! panics on a closed or full stdout.

use std::io::{self, Write};
use std::process::ExitCode;

use super::{CliError, Outcome};
use crate::text::printable_lines;

/// The exit code after stdout's reader went away: 128 + `SIGPIPE`, what a shell reports for a
/// program `SIGPIPE` ended (`ls | head` under `set -o pipefail`).
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// Why the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The reader of stdout went away (EPIPE).
    #[error("standard output was closed by its reader")]
    Closed,
    #[error("cannot write to standard output: {0}")]
    Write(io::Error),
}

/// Writes `text` to stdout and flushes it.
pub fn write_stdout(text: &str) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| match e.kind() {
        io::ErrorKind::BrokenPipe => OutputError::Closed,
        _ => OutputError::Write(e),
    })
}

/// Writes `text` to stderr; a stderr that cannot be written has nobody to tell.
fn write_stderr(text: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Prints a command's result and gives its exit code: the outcome's stderr then its text, or
/// the error as `irqwise: ...` with the error's code.
pub fn emit(result: Result<Outcome, CliError>) -> ExitCode {
    match result {
        Ok(Outcome { text, stderr, exit }) => {
            write_stderr(&printable_lines(&stderr));
            match write_stdout(&printable_lines(&text)) {
                Ok(()) => ExitCode::from(exit),
                Err(OutputError::Closed) => ExitCode::from(EXIT_BROKEN_PIPE),
                Err(e) => {
                    write_stderr(&format!("irqwise: {e}\n"));
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            write_stderr(&format!("irqwise: {}\n", printable_lines(&e.to_string())));
            ExitCode::from(e.exit_code())
        }
    }
}
