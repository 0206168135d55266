//! Where the daemon's log goes (journal, text or JSON lines on stderr); the entries a pass
//! writes are rendered in [`super::journal`].
//!
//! Journal fields: tracing-journald upper-cases field names, so the tracing field `irq_name`
//! becomes the journal field `IRQ_NAME`; with `with_field_prefix(None)` no `F_` is prepended.

use std::io::Write;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::LogFormat;
use crate::text::printable_lines;

/// journald's native socket; deliberately not under `--root`: the log goes to the real journal.
pub(crate) const JOURNAL_SOCKET: &str = "/run/systemd/journal/socket";

/// Default filter: INFO and up, except the apply module's own per-write events (the daemon logs
/// each change itself, with all the fields). `RUST_LOG` overrides it.
#[cfg(test)]
pub(crate) const DEFAULT_FILTER: &str = "info,irqwise::apply=off";

/// The level filter: `RUST_LOG` when it is set and is a list of `target=level` and bare levels
/// (`debug`, `info,irqwise::apply=off`), else the default filter (`info,irqwise::apply=off`). A plain target filter, not a
/// regular-expression one: the daemon carries no regex engine for its log.
pub fn filter() -> Targets {
    std::env::var("RUST_LOG").ok().and_then(|text| text.parse().ok()).unwrap_or_else(default_filter)
}

/// The default filter: INFO and up, except the apply module's own per-write events (the daemon
/// logs each change itself, with all the fields).
pub fn default_filter() -> Targets {
    Targets::new().with_default(LevelFilter::INFO).with_target("irqwise::apply", LevelFilter::OFF)
}

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("log format journal: cannot open the journal socket {JOURNAL_SOCKET}: {0}")]
    Journal(std::io::Error),
    #[error("cannot install the log subscriber: {0}")]
    Install(String),
}

/// The format actually used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    Journal,
    Text,
    Json,
}

/// Chooses the sink: an explicit format wins; `auto` means the journal when systemd started the
/// process (run by hand on a systemd host, the log belongs on the terminal).
pub(crate) fn choose_sink(format: LogFormat, started_by_systemd: bool) -> Sink {
    match format {
        LogFormat::Journal => Sink::Journal,
        LogFormat::Text => Sink::Text,
        LogFormat::Json => Sink::Json,
        LogFormat::Auto if started_by_systemd => Sink::Journal,
        LogFormat::Auto => Sink::Text,
    }
}

/// Whether systemd started this process: it sets `INVOCATION_ID` for every unit it runs and
/// `JOURNAL_STREAM` when stdout or stderr go to the journal.
pub(crate) fn started_by_systemd() -> bool {
    std::env::var_os("INVOCATION_ID").is_some() || std::env::var_os("JOURNAL_STREAM").is_some()
}

/// The subscriber below the sink: the registry and the level filter.
type Base = tracing_subscriber::layer::Layered<Targets, tracing_subscriber::Registry>;
/// One sink's layer, boxed so a reload can swap it for another.
type SinkLayer = Box<dyn tracing_subscriber::Layer<Base> + Send + Sync>;

/// The handle that swaps the sink of the installed subscriber.
static SWITCH: std::sync::OnceLock<tracing_subscriber::reload::Handle<SinkLayer, Base>> = std::sync::OnceLock::new();

/// The layer for `format` and the sink it writes to. With `auto`, a journal that cannot be
/// opened falls back to text; an explicit `journal` that cannot be opened is an error.
fn sink_layer(format: LogFormat) -> Result<(SinkLayer, Sink), LoggingError> {
    Ok(match choose_sink(format, started_by_systemd()) {
        Sink::Journal => match tracing_journald::layer() {
            Ok(layer) => (Box::new(layer.with_field_prefix(None)), Sink::Journal),
            Err(e) if format == LogFormat::Journal => return Err(LoggingError::Journal(e)),
            Err(_) => return sink_layer(LogFormat::Text),
        },
        // No colour codes: every control character in a line is escaped (names from sysfs may
        // hold terminal escapes), which would also escape the colours.
        Sink::Text => (
            Box::new(tracing_subscriber::fmt::layer().with_writer(|| Printable(std::io::stderr())).with_ansi(false)),
            Sink::Text,
        ),
        Sink::Json => (Box::new(tracing_subscriber::fmt::layer().json().with_writer(std::io::stderr)), Sink::Json),
    })
}

/// Installs the global subscriber for `format` (see [`sink_layer`] for `auto`); [`switch`]
/// changes its sink later.
pub fn init(format: LogFormat) -> Result<Sink, LoggingError> {
    let filter = filter();
    let (layer, sink) = sink_layer(format)?;
    let (layer, handle) = tracing_subscriber::reload::Layer::new(layer);
    tracing_subscriber::registry()
        .with(filter)
        .with(layer)
        .try_init()
        .map_err(|e| LoggingError::Install(e.to_string()))?;
    let _ = SWITCH.set(handle);
    Ok(sink)
}

/// Sends the log to `format`'s sink from now on (a reload that changed `log_format`). An error
/// leaves the current sink in place.
pub(crate) fn switch(format: LogFormat) -> Result<Sink, LoggingError> {
    let handle = SWITCH.get().ok_or_else(|| LoggingError::Install("no log subscriber installed".into()))?;
    let (layer, sink) = sink_layer(format)?;
    handle.reload(layer).map_err(|e| LoggingError::Install(e.to_string()))?;
    Ok(sink)
}

/// A writer that passes text on with its control characters escaped, newlines and tabs aside.
struct Printable<W>(W);

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(printable_lines(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_default_filter_is_the_documented_text() {
        let parsed: Targets = DEFAULT_FILTER.parse().expect("DEFAULT_FILTER parses");
        assert_eq!(format!("{parsed:?}"), format!("{:?}", default_filter()));
        assert!(default_filter().would_enable("irqwise::daemon", &tracing::Level::INFO));
        assert!(!default_filter().would_enable("irqwise::daemon", &tracing::Level::DEBUG));
        assert!(!default_filter().would_enable("irqwise::apply::report", &tracing::Level::ERROR));
    }

    use super::*;

    #[test]
    fn explicit_formats_win_and_auto_follows_the_socket() {
        assert_eq!(choose_sink(LogFormat::Text, true), Sink::Text);
        assert_eq!(choose_sink(LogFormat::Json, true), Sink::Json);
        assert_eq!(choose_sink(LogFormat::Journal, false), Sink::Journal);
        assert_eq!(choose_sink(LogFormat::Auto, true), Sink::Journal);
        assert_eq!(choose_sink(LogFormat::Auto, false), Sink::Text, "run by hand: the terminal");
    }
}
