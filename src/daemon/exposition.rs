//! The Prometheus text exposition (format 0.0.4) of the daemon's [`Counters`]: what the
//! metrics file holds.
//!
//! Pure: counters in, text out. Guarantees: each metric has one `# HELP` and one `# TYPE` line
//! before its samples; label values are escaped; output is sorted and so stable.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::counters::{Counters, DeviceLabels};

impl Counters {
    /// The Prometheus text exposition (format 0.0.4) of every series, `version` as
    /// `irqwise_build_info`'s label. Guarantees: each metric has one `# HELP` and one `# TYPE`
    /// line before its samples; label values are escaped; output is sorted and so stable.
    pub fn render(&self, version: &str) -> String {
        let mut out = Exposition::default();
        out.metric("irqwise_build_info", "gauge", "The irqwise version that wrote this file (always 1).");
        out.sample("irqwise_build_info", &[("version", version)], 1.0);
        out.metric("irqwise_start_time_seconds", "gauge", "When the daemon started, in seconds since the Unix epoch.");
        out.sample("irqwise_start_time_seconds", &[], self.started as f64);
        out.counter_by("irqwise_passes_total", "Passes (discover, plan, apply) since the daemon started, by trigger; a pass with several triggers counts under each.", "trigger", &self.passes);
        out.metric("irqwise_pass_failures_total", "counter", "Passes that failed (the placement was left as it was).");
        out.sample("irqwise_pass_failures_total", &[], self.pass_failures as f64);
        out.counter_by("irqwise_writes_total", "Attempted IRQ affinity writes, by result.", "result", &self.writes);
        out.counter_by(
            "irqwise_write_failures_total",
            "Failed IRQ affinity writes, by failure class.",
            "class",
            &self.write_failures,
        );
        out.counter_by(
            "irqwise_xps_writes_total",
            "Transmit queue steering (xps_cpus) writes, by result.",
            "result",
            &self.xps_writes,
        );
        out.counter_by(
            "irqwise_napi_thread_writes_total",
            "NAPI thread moves (sched_setaffinity to their queue IRQ's CPUs), by result.",
            "result",
            &self.thread_writes,
        );
        out.counter_by(
            "irqwise_napi_settings_writes_total",
            "NAPI instances' interrupt mitigation ([napi]) written with napi-set, by result: written (read back as written), gone (the instance was recreated or removed first), unverified (read back otherwise), failed.",
            "result",
            &self.napi_settings_writes,
        );
        out.metric(
            "irqwise_left_irqs",
            "gauge",
            "IRQs left to another writer (on_drift = respect), by who most likely set them: a known IRQ writer (crio, nri-resource-policy, intel_lpmd, tuned, irqbalance, a set_irq_affinity script) or unknown.",
        );
        for (owner, n) in &self.left_by_owner {
            out.sample("irqwise_left_irqs", &[("owner", owner)], *n as f64);
        }
        out.metric(
            "irqwise_napi_threads",
            "gauge",
            "NAPI threads of NICs running threaded NAPI after the last pass, by state: placed (on their queue IRQ's CPUs), left (left alone), failed (their move failed).",
        );
        for (state, n) in &self.napi_threads {
            out.sample("irqwise_napi_threads", &[("state", state)], *n as f64);
        }
        out.metric(
            "irqwise_queue_identity",
            "gauge",
            "Queue IRQs of the last plan by where their queue index comes from: netlink (the kernel's netdev family) or name (the IRQ's name).",
        );
        for (source, n) in &self.queue_identity {
            out.sample("irqwise_queue_identity", &[("source", source)], *n as f64);
        }
        out.metric(
            "irqwise_queue_identity_disagreements",
            "gauge",
            "Queue IRQs of the last plan whose name says another queue than the kernel (the kernel's is used).",
        );
        out.sample("irqwise_queue_identity_disagreements", &[], self.queue_disagreements as f64);
        out.metric(
            "irqwise_fought_irqs",
            "gauge",
            "IRQs someone else keeps rewriting that irqwise stopped restoring (until SIGHUP, or the writer it named stops).",
        );
        out.sample("irqwise_fought_irqs", &[], self.fought_irqs as f64);
        out.metric(
            "irqwise_load_moves_total",
            "counter",
            "Queue IRQs moved off a hot CPU by load refinement (balance = \"load\").",
        );
        out.sample("irqwise_load_moves_total", &[], self.load_moves as f64);
        out.metric("irqwise_load_returns_total", "counter", "Queue IRQs load refinement moved back home.");
        out.sample("irqwise_load_returns_total", &[], self.load_returns as f64);
        out.metric(
            "irqwise_queues_away_from_home",
            "gauge",
            "Queue IRQs load refinement keeps off their planned CPU now.",
        );
        out.sample("irqwise_queues_away_from_home", &[], self.away_from_home as f64);
        out.metric("irqwise_claims", "gauge", "Runtime claims (irqwise claim) the last pass held.");
        out.sample("irqwise_claims", &[], self.claims as f64);
        out.metric(
            "irqwise_claimed_cpus",
            "gauge",
            "CPUs the runtime claims of the last pass keep free of device IRQs.",
        );
        out.sample("irqwise_claimed_cpus", &[], self.claimed_cpus as f64);
        out.metric(
            "irqwise_claims_refused",
            "gauge",
            "Live runtime claims the last pass refused (with them no CPU would be left for device IRQs).",
        );
        out.sample("irqwise_claims_refused", &[], self.claims_refused as f64);
        out.metric(
            "irqwise_writes_blocked",
            "gauge",
            "1 when not one IRQ write of the last pass succeeded, all for this cause of the machine or sandbox: readonly (/proc/irq mounted read-only), permission (not root, an LSM).",
        );
        for (class, n) in &self.writes_blocked {
            out.sample("irqwise_writes_blocked", &[("class", class)], *n as f64);
        }
        out.metric(
            "irqwise_drift_corrections_total",
            "counter",
            "IRQs whose mask someone else changed and irqwise restored, by device.",
        );
        for c in &self.drift_corrections {
            out.sample("irqwise_drift_corrections_total", &c.labels.pairs(), c.value as f64);
        }
        out.metric(
            "irqwise_irq_writes_total",
            "counter",
            "Mask writes of each IRQ irqwise wrote since it started (IRQs of the last plan); a mask found already in place is not written.",
        );
        for w in &self.irq_writes {
            let irq = w.irq.to_string();
            let mut labels = vec![("irq", irq.as_str()), ("name", w.name.as_deref().unwrap_or(""))];
            labels.extend(w.labels.pairs());
            out.sample("irqwise_irq_writes_total", &labels, w.writes as f64);
        }
        out.counter_by(
            "irqwise_config_reloads_total",
            "Configuration reloads (SIGHUP), by result.",
            "result",
            &self.reloads,
        );
        if let Some(last) = &self.last_pass {
            out.metric(
                "irqwise_last_pass_timestamp_seconds",
                "gauge",
                "When the last pass ended, in seconds since the Unix epoch.",
            );
            out.sample("irqwise_last_pass_timestamp_seconds", &[], last.timestamp);
            out.metric("irqwise_last_pass_duration_seconds", "gauge", "How long the last pass took.");
            out.sample("irqwise_last_pass_duration_seconds", &[], last.duration_seconds);
            out.metric(
                "irqwise_last_pass_files_opened",
                "gauge",
                "Files and directories the last pass opened (a reconcile reads what can drift).",
            );
            out.sample("irqwise_last_pass_files_opened", &[], last.files_opened as f64);
            out.metric("irqwise_last_pass_success", "gauge", "1 when the last pass succeeded, 0 when it failed.");
            out.sample("irqwise_last_pass_success", &[], if last.ok { 1.0 } else { 0.0 });
        }
        out.metric(
            "irqwise_irqs",
            "gauge",
            "IRQs per device after the last pass, by state: placed (moved by irqwise and still there), kept (already right), managed (kernel-managed), skipped (left alone), failed (write failed).",
        );
        for d in &self.devices {
            for (state, n) in &d.irqs {
                let mut labels = d.labels.pairs();
                labels.push(("state", state));
                out.sample("irqwise_irqs", &labels, *n as f64);
            }
        }
        out.metric(
            "irqwise_managed_mismatched_irqs",
            "gauge",
            "Kernel-managed IRQs per device that are not where the kernel's spreading predicts, after the last pass.",
        );
        for d in &self.devices {
            out.sample("irqwise_managed_mismatched_irqs", &d.labels.pairs(), d.mismatched as f64);
        }
        out.metric(
            "irqwise_managed_uncertain_irqs",
            "gauge",
            "Kernel-managed IRQs per device whose predicted placement depends on a CPU's NUMA node irqwise cannot know (a possible CPU sysfs does not place), and agrees where it can be checked; not counted as mismatched.",
        );
        for d in &self.devices {
            out.sample("irqwise_managed_uncertain_irqs", &d.labels.pairs(), d.uncertain as f64);
        }
        out.text
    }
}

impl DeviceLabels {
    fn pairs(&self) -> Vec<(&'static str, &str)> {
        vec![("device", &self.device), ("driver", &self.driver), ("class", &self.class)]
    }
}

/// A label value as the text format wants it: backslash, double quote and newline escaped.
pub(crate) fn escape_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A `# HELP` text: backslash and newline escaped.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers without a fraction, others as Rust prints them (never exponents).
fn value_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The text being written.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn metric(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label_value(v))).collect();
            let _ = write!(self.text, "{{{}}}", inner.join(","));
        }
        let _ = writeln!(self.text, " {}", value_text(value));
    }

    /// A counter with one label: its header, then one sample per entry of `by`.
    fn counter_by(&mut self, name: &str, help: &str, label: &str, by: &BTreeMap<String, u64>) {
        self.metric(name, "counter", help);
        for (value, n) in by {
            self.sample(name, &[(label, value)], *n as f64);
        }
    }
}
