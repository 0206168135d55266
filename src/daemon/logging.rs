//! Where the daemon's log goes (journal, text or JSON lines on stderr) and the structured
//! entries it writes.
//!
//! Journal fields: tracing-journald upper-cases field names, so the tracing field `irq_name`
//! becomes the journal field `IRQ_NAME`; with `with_field_prefix(None)` no `F_` is prepended.
//! Guarantee: one INFO entry per applied change carrying `MESSAGE_ID`, `IRQ`, `IRQ_NAME`,
//! `DEVICE`, `DRIVER`, `QUEUE` (only for an IRQ that serves a queue), `CPUS_OLD`, `CPUS_NEW`,
//! `STRATEGY`, `REASON`; every other entry about an IRQ carries `MESSAGE_ID`, `IRQ`, `DEVICE` and
//! `DRIVER` too; one per transmit-steering change carrying `MESSAGE_ID`, `DEVICE`, `INTERFACE`,
//! `DRIVER`, `TXQ`, `XPS_OLD`, `XPS_NEW`.

use std::io::Write;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use super::catalog;
use super::ledger::{Drift, ManagedNews};
use crate::apply::{Change, WriteOutcome, XpsChange, XpsOutcome};
use crate::config::LogFormat;
use crate::plan::{DevicePlan, Plan};
use crate::text::{printable, printable_lines};

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

fn list(set: Option<&crate::cpuset::CpuSet>) -> String {
    set.map_or_else(|| "?".to_string(), super::super::cpuset::CpuSet::to_list_string)
}

/// A change that ended as it did last pass: at debug level only (it was logged when it started;
/// the state file counts the repeats). The same fields as [`log_change`]'s failure entry.
pub(crate) fn log_change_quietly(c: &Change) {
    let error = c.result.error().unwrap_or("widened again");
    tracing::debug!(
        irq = c.irq,
        irq_name = c.irq_name.as_deref().unwrap_or(""),
        device = c.device.as_str(),
        driver = c.driver.as_deref().unwrap_or(""),
        queue = c.queue,
        "irq {} again: {}",
        c.irq,
        printable(error)
    );
}

/// Logs one change of a pass, each kind with its `MESSAGE_ID` (see [`super::catalog`]): INFO
/// with every journal field for a write, WARN with the error class for a failure, INFO for an
/// IRQ learned to be kernel-managed or gone. Every entry carries `IRQ`, `IRQ_NAME`, `DEVICE`,
/// `DRIVER`; `QUEUE` only when the IRQ serves a queue (absent, not empty, otherwise).
pub(crate) fn log_change(c: &Change) {
    let who = printable(c.device_name.as_deref().unwrap_or(&c.device));
    let irq_name = c.irq_name.as_deref().unwrap_or("");
    let shown_name = printable(irq_name);
    let driver = c.driver.as_deref().unwrap_or("");
    let old = list(c.old.as_ref());
    match &c.result {
        WriteOutcome::Written { cpus, .. } | WriteOutcome::WrittenFallback { cpus, .. } => {
            let new = cpus.to_list_string();
            let fallback = match &c.result {
                WriteOutcome::WrittenFallback { step, .. } => format!(" (no vectors left there: widened to {step})"),
                _ => String::new(),
            };
            tracing::info!(
                message_id = catalog::MAPPING_APPLIED,
                irq = c.irq,
                irq_name,
                device = c.device.as_str(),
                driver,
                queue = c.queue,
                cpus_old = old.as_str(),
                cpus_new = new.as_str(),
                strategy = c.strategy.as_str(),
                reason = c.reason.as_str(),
                "irq {} ({shown_name}) of {who}: {old} -> {new}{fallback}",
                c.irq
            );
        }
        WriteOutcome::Managed { .. } => tracing::info!(
            message_id = catalog::IRQ_MANAGED,
            irq = c.irq,
            irq_name,
            device = c.device.as_str(),
            driver,
            queue = c.queue,
            "irq {} of {who}: the kernel refused the write (kernel-managed); left alone from now on",
            c.irq
        ),
        WriteOutcome::Gone { .. } => tracing::info!(
            message_id = catalog::IRQ_GONE,
            irq = c.irq,
            irq_name,
            device = c.device.as_str(),
            driver,
            queue = c.queue,
            "irq {} of {who}: gone before it was written",
            c.irq
        ),
        // Nothing changed: nothing to tell anyone (the counters have it).
        WriteOutcome::Held { .. } => tracing::debug!(
            irq = c.irq,
            device = c.device.as_str(),
            "irq {} of {who}: already where it belongs when it was to be written; not written",
            c.irq
        ),
        // A CPU event's pass follows: nothing to tell anyone.
        WriteOutcome::Overtaken { .. } => tracing::debug!(
            irq = c.irq,
            device = c.device.as_str(),
            "irq {} of {who}: its CPUs went offline before it was written; the CPU event's pass places it",
            c.irq
        ),
        WriteOutcome::Failed { class, error } => {
            let class_name = serde_json::to_value(class).ok().and_then(|v| v.as_str().map(String::from));
            let wanted = list(c.wanted.as_ref());
            tracing::warn!(
                message_id = catalog::WRITE_FAILED,
                irq = c.irq,
                irq_name,
                device = c.device.as_str(),
                driver,
                queue = c.queue,
                cpus_old = old.as_str(),
                cpus_wanted = wanted.as_str(),
                class = class_name.as_deref().unwrap_or("other"),
                error = error.as_str(),
                "irq {} of {who}: write failed ({class:?}): {}",
                c.irq,
                printable(error)
            );
        }
    }
}

/// Logs one transmit-steering change: INFO with the journal fields for a write, WARN for a
/// failure (DEBUG when `quiet`: the same failure as the pass before).
pub(crate) fn log_xps_change(x: &XpsChange, quiet: bool) {
    let interface = x.interface.as_deref().unwrap_or("");
    let who = printable(if interface.is_empty() { &x.device } else { interface });
    let driver = x.driver.as_deref().unwrap_or("");
    let old = x.old.to_list_string();
    match &x.result {
        XpsOutcome::Written { new, matches, readback } => {
            let new = new.to_list_string();
            let differs = match (matches, readback) {
                (true, _) => String::new(),
                (false, Some(r)) => format!(" (read back as {})", r.to_list_string()),
                (false, None) => " (unreadable after the write)".to_string(),
            };
            tracing::info!(
                message_id = catalog::XPS_APPLIED,
                device = x.device.as_str(),
                interface,
                driver,
                txq = x.txq,
                xps_old = old.as_str(),
                xps_new = new.as_str(),
                "xps of {who} tx-{}: {} -> {}{differs}",
                x.txq,
                if old.is_empty() { "-" } else { &old },
                if new.is_empty() { "-" } else { &new }
            );
        }
        XpsOutcome::Failed { class, error } if quiet => {
            tracing::debug!(
                device = x.device.as_str(),
                txq = x.txq,
                "xps of {who} tx-{} again ({class:?}): {}",
                x.txq,
                printable(error)
            );
        }
        XpsOutcome::Failed { class, error } => tracing::warn!(
            message_id = catalog::WRITE_FAILED,
            device = x.device.as_str(),
            interface,
            txq = x.txq,
            class = ?class,
            "xps of {who} tx-{}: write failed ({class:?}): {}",
            x.txq,
            printable(error)
        ),
    }
}

/// An IRQ found off the CPUs irqwise placed it on, about to be restored; returns its device in
/// `plan`, if it has one there.
pub(crate) fn log_drift<'p>(d: &Drift, plan: &'p Plan) -> Option<&'p DevicePlan> {
    let found = d.found.as_ref().map_or("unreadable".into(), super::super::cpuset::CpuSet::to_list_string);
    let placed = d.placed.to_list_string();
    let (dev, p) = plan.find_irq(d.irq).map_or((None, None), |(dev, p)| (Some(dev), Some(p)));
    tracing::warn!(
        message_id = catalog::DRIFT_RESTORED,
        irq = d.irq,
        irq_name = d.name.as_deref().unwrap_or(""),
        device = dev.map_or("", |dev| dev.bdf.as_str()),
        driver = dev.and_then(|dev| dev.driver.as_deref()).unwrap_or(""),
        queue = p.and_then(|p| p.queue),
        cpus_placed = placed.as_str(),
        cpus_found = found.as_str(),
        "irq {} drifted from {placed} to {found}, restoring",
        d.irq
    );
    dev
}

/// A write that worked again after `n` passes that ended the same way.
pub(crate) fn log_recovered(c: &Change, n: u64) {
    tracing::info!(
        irq = c.irq,
        irq_name = c.irq_name.as_deref().unwrap_or(""),
        device = c.device.as_str(),
        driver = c.driver.as_deref().unwrap_or(""),
        queue = c.queue,
        "irq {}: written again after {n} passes that ended the same way",
        c.irq
    );
}

/// What a pass learned about a device's kernel-managed IRQs (`bdf`, bound to `driver`): not
/// predicted (the driver's choice), as predicted, uncertain, or off the prediction.
pub(crate) fn log_managed_news(news: &ManagedNews, bdf: &str, driver: &str) {
    if news.predicted == 0 {
        tracing::info!(
            device = bdf,
            driver,
            managed_irqs = news.managed,
            "{}: {} IRQs are kernel-managed; placement chosen by the driver (not predicted)",
            news.device,
            news.managed
        );
    } else if news.mismatched.is_empty() && news.uncertain.is_empty() {
        let of = if news.predicted < news.managed { format!(" for {}", news.predicted) } else { String::new() };
        tracing::info!(
            message_id = catalog::MANAGED_VERIFIED,
            device = bdf,
            driver,
            managed_irqs = news.managed,
            "{}: {} IRQs are kernel-managed; predicted placement matches{of}",
            news.device,
            news.managed
        );
    } else if news.mismatched.is_empty() {
        let irqs: Vec<String> = news.uncertain.iter().map(u32::to_string).collect();
        let reason = news.uncertain_reason.as_deref().unwrap_or("unknown");
        tracing::info!(
            message_id = catalog::MANAGED_UNCERTAIN,
            device = bdf,
            driver,
            managed_irqs = news.managed,
            uncertain_irqs = irqs.join(" "),
            reason,
            "{}: {} IRQs are kernel-managed; predicted placement matches where it can be known; IRQ(s) {} uncertain: {}",
            news.device,
            news.managed,
            irqs.join(", "),
            reason
        );
    } else {
        let irqs: Vec<String> = news.mismatched.iter().map(u32::to_string).collect();
        tracing::warn!(
            message_id = catalog::MANAGED_MISMATCH,
            device = bdf,
            driver,
            managed_irqs = news.managed,
            mismatched_irqs = irqs.join(" "),
            "{}: {} IRQs are kernel-managed; IRQ(s) {} are not where the kernel's spreading predicts",
            news.device,
            news.managed,
            irqs.join(", ")
        );
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
