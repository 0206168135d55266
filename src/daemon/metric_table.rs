//! Every metric the daemon writes, declared once: name, type, `# HELP` text, labels with their
//! allowed values, the documentation's row, and where its samples come from.
//!
//! Pure. [`METRICS`] drives the exposition ([`Counters::render`](super::counters::Counters)),
//! the labels present at 0 from the start ([`Counters::new`](super::counters::Counters::new)),
//! and the table of `docs/monitoring.md` ([`markdown`]; `tests/docs.rs` fails when the page
//! differs). Guarantees: a metric's samples carry exactly its labels, in its order; a label
//! with closed values has every value listed here, each documented.

use std::collections::BTreeMap;

use super::counters::{Counters, DeviceLabels};
use super::metric_labels::{
    Value, BLOCKED_CLASSES, DEVICE_CLASSES, FAILURE_CLASSES, IRQ_STATES, NAPI_RESULTS, QUEUE_SOURCES, RELOAD_RESULTS,
    THREAD_RESULTS, THREAD_STATES, TRIGGERS, WRITE_RESULTS, XPS_RESULTS,
};

/// A Prometheus metric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

impl Kind {
    /// The word of the `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// A label of a metric.
#[derive(Debug, Clone, Copy)]
pub struct Label {
    pub name: &'static str,
    /// Every value it takes; empty when its values are not known in advance (names, numbers).
    pub values: &'static [Value],
    /// One of the device labels (`device`, `driver`, `class`), described once below the table.
    pub device: bool,
}

/// The samples of a metric: label values (in the metric's label order) and value; `None` when
/// the metric is not written at all (the last pass's before there is one).
pub type Samples = Option<Vec<(Vec<String>, f64)>>;

/// One metric.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    /// The `# HELP` text.
    pub help: &'static str,
    pub labels: &'static [Label],
    /// The meaning column of `docs/monitoring.md`; `{label}` stands for the list of that label's
    /// values with their meanings.
    pub doc: &'static str,
    /// Its samples in `counters`, `version` being the running version.
    pub samples: fn(&Counters, &str) -> Samples,
}

const fn closed(name: &'static str, values: &'static [Value]) -> Label {
    Label { name, values, device: false }
}

const fn open(name: &'static str) -> Label {
    Label { name, values: &[], device: false }
}

/// The labels of a per-device series, in order.
const DEVICE: [Label; 3] = [
    Label { name: "device", values: &[], device: true },
    Label { name: "driver", values: &[], device: true },
    Label { name: "class", values: DEVICE_CLASSES, device: true },
];
/// What the device labels mean, in `docs/monitoring.md` below the table.
const DEVICE_DOC: &str = "`device` is the interface or NVMe controller name (the PCI address when there is none), \
`driver` the device's driver, `class` one of {class}.";
const IRQ_WRITE_LABELS: [Label; 5] = [open("irq"), open("name"), DEVICE[0], DEVICE[1], DEVICE[2]];
const IRQ_STATE_LABELS: [Label; 4] = [DEVICE[0], DEVICE[1], DEVICE[2], closed("state", IRQ_STATES)];

/// One unlabelled sample.
fn one(v: f64) -> Samples {
    Some(vec![(Vec::new(), v)])
}

/// One sample per entry of `by`, its key the one label.
fn by(by: &BTreeMap<String, u64>) -> Samples {
    Some(by.iter().map(|(k, n)| (vec![k.clone()], *n as f64)).collect())
}

/// The device labels' values, then `more`.
fn device(l: &DeviceLabels, more: &[&str]) -> Vec<String> {
    let mut out = vec![l.device.clone(), l.driver.clone(), l.class.clone()];
    out.extend(more.iter().map(|s| (*s).to_string()));
    out
}

/// A value of the last pass, when there was one.
fn last(c: &Counters, f: fn(&super::counters::LastPass) -> f64) -> Samples {
    c.last_pass.as_ref().and_then(|l| one(f(l)))
}

/// Every metric, in the order of the exposition.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "irqwise_build_info",
        kind: Kind::Gauge,
        help: "The irqwise version that wrote this file (always 1).",
        labels: &[open("version")],
        doc: "always 1; the version that wrote the file",
        samples: |_, version| Some(vec![(vec![version.to_string()], 1.0)]),
    },
    Metric {
        name: "irqwise_start_time_seconds",
        kind: Kind::Gauge,
        help: "When the daemon started, in seconds since the Unix epoch.",
        labels: &[],
        doc: "when the daemon started (Unix time)",
        samples: |c, _| one(c.started as f64),
    },
    Metric {
        name: "irqwise_passes_total",
        kind: Kind::Counter,
        help: "Passes (discover, plan, apply) since the daemon started, by trigger; a pass with several triggers counts under each.",
        labels: &[closed("trigger", TRIGGERS)],
        doc: "passes by trigger: {trigger} (a pass with several triggers counts under each)",
        samples: |c, _| by(&c.passes),
    },
    Metric {
        name: "irqwise_pass_failures_total",
        kind: Kind::Counter,
        help: "Passes that failed (the placement was left as it was).",
        labels: &[],
        doc: "passes that could not discover or plan (the placement stayed)",
        samples: |c, _| one(c.pass_failures as f64),
    },
    Metric {
        name: "irqwise_writes_total",
        kind: Kind::Counter,
        help: "Attempted IRQ affinity writes, by result.",
        labels: &[closed("result", WRITE_RESULTS)],
        doc: "attempted writes: {result}",
        samples: |c, _| by(&c.writes),
    },
    Metric {
        name: "irqwise_write_failures_total",
        kind: Kind::Counter,
        help: "Failed IRQ affinity writes, by failure class.",
        labels: &[closed("class", FAILURE_CLASSES)],
        doc: "failed writes by class: {class}",
        samples: |c, _| by(&c.write_failures),
    },
    Metric {
        name: "irqwise_xps_writes_total",
        kind: Kind::Counter,
        help: "Transmit queue steering (xps_cpus) writes, by result.",
        labels: &[closed("result", XPS_RESULTS)],
        doc: "transmit queues' `xps_cpus` writes: {result}",
        samples: |c, _| by(&c.xps_writes),
    },
    Metric {
        name: "irqwise_napi_thread_writes_total",
        kind: Kind::Counter,
        help: "NAPI thread moves (sched_setaffinity to their queue IRQ's CPUs), by result.",
        labels: &[closed("result", THREAD_RESULTS)],
        doc: "NAPI thread moves: {result}",
        samples: |c, _| by(&c.thread_writes),
    },
    Metric {
        name: "irqwise_napi_settings_writes_total",
        kind: Kind::Counter,
        help: "NAPI instances' interrupt mitigation ([napi]) written with napi-set, by result: written (read back as written), gone (the instance was recreated or removed first), unverified (read back otherwise), failed.",
        labels: &[closed("result", NAPI_RESULTS)],
        doc: "NAPI instances' `[napi]` settings written with `napi-set`: {result}",
        samples: |c, _| by(&c.napi_settings_writes),
    },
    Metric {
        name: "irqwise_left_irqs",
        kind: Kind::Gauge,
        help: "IRQs left to another writer (on_drift = respect), by who most likely set them: a known IRQ writer (crio, nri-resource-policy, intel_lpmd, tuned, irqbalance, a set_irq_affinity script) or unknown.",
        labels: &[open("owner")],
        doc: "IRQs left to another writer (`on_drift = \"respect\"`), by who most likely set them: a known IRQ writer that ran (`crio`, `nri-resource-policy`, `intel_lpmd`, `google_set_multiqueue`, `tuned`, `irqbalance`, a `set_irq_affinity` script, `one of ...`) or `unknown`",
        samples: |c, _| by(&c.left_by_owner),
    },
    Metric {
        name: "irqwise_napi_threads",
        kind: Kind::Gauge,
        help: "NAPI threads of NICs running threaded NAPI after the last pass, by state: placed (on their queue IRQ's CPUs), left (left alone), failed (their move failed).",
        labels: &[closed("state", THREAD_STATES)],
        doc: "NAPI threads after the last pass: {state}",
        samples: |c, _| by(&c.napi_threads),
    },
    Metric {
        name: "irqwise_queue_identity",
        kind: Kind::Gauge,
        help: "Queue IRQs of the last plan by where their queue index comes from: netlink (the kernel's netdev family) or name (the IRQ's name).",
        labels: &[closed("source", QUEUE_SOURCES)],
        doc: "queue IRQs of the last plan by where their queue index came from: {source}",
        samples: |c, _| by(&c.queue_identity),
    },
    Metric {
        name: "irqwise_queue_identity_disagreements",
        kind: Kind::Gauge,
        help: "Queue IRQs of the last plan whose name says another queue than the kernel (the kernel's is used).",
        labels: &[],
        doc: "queue IRQs whose name says another queue than the kernel",
        samples: |c, _| one(c.queue_disagreements as f64),
    },
    Metric {
        name: "irqwise_fought_irqs",
        kind: Kind::Gauge,
        help: "IRQs someone else keeps rewriting that irqwise stopped restoring (until SIGHUP, or the writer it named stops).",
        labels: &[],
        doc: "IRQs someone else keeps rewriting that irqwise stopped restoring (see [placement.md](placement.md#fights))",
        samples: |c, _| one(c.fought_irqs as f64),
    },
    Metric {
        name: "irqwise_load_moves_total",
        kind: Kind::Counter,
        help: "Queue IRQs moved off a hot CPU by load refinement (balance = \"load\").",
        labels: &[],
        doc: "queue IRQs moved off a hot CPU by load refinement (see [placement.md](placement.md#load-refinement-balance--load))",
        samples: |c, _| one(c.load_moves as f64),
    },
    Metric {
        name: "irqwise_load_returns_total",
        kind: Kind::Counter,
        help: "Queue IRQs load refinement moved back home.",
        labels: &[],
        doc: "queue IRQs load refinement moved back home",
        samples: |c, _| one(c.load_returns as f64),
    },
    Metric {
        name: "irqwise_queues_away_from_home",
        kind: Kind::Gauge,
        help: "Queue IRQs load refinement keeps off their planned CPU now.",
        labels: &[],
        doc: "queue IRQs load refinement keeps off their planned CPU now",
        samples: |c, _| one(c.away_from_home as f64),
    },
    Metric {
        name: "irqwise_claims",
        kind: Kind::Gauge,
        help: "Runtime claims (irqwise claim) the last pass held.",
        labels: &[],
        doc: "runtime claims the last pass held (see [kubernetes.md](kubernetes.md#runtime-claims-irqwise-claim))",
        samples: |c, _| one(c.claims as f64),
    },
    Metric {
        name: "irqwise_claimed_cpus",
        kind: Kind::Gauge,
        help: "CPUs the runtime claims of the last pass keep free of device IRQs.",
        labels: &[],
        doc: "the CPUs the runtime claims of the last pass keep free together",
        samples: |c, _| one(c.claimed_cpus as f64),
    },
    Metric {
        name: "irqwise_claims_refused",
        kind: Kind::Gauge,
        help: "Live runtime claims the last pass refused (with them no CPU would be left for device IRQs).",
        labels: &[],
        doc: "the live runtime claims the last pass refused (with them no CPU would be left for device IRQs)",
        samples: |c, _| one(c.claims_refused as f64),
    },
    Metric {
        name: "irqwise_writes_blocked",
        kind: Kind::Gauge,
        help: "1 when not one IRQ write of the last pass succeeded, all for this cause of the machine or sandbox: readonly (/proc/irq mounted read-only), permission (not root, an LSM).",
        labels: &[closed("class", BLOCKED_CLASSES)],
        doc: "1 when not one IRQ write of the last pass succeeded, all for this cause: {class}",
        samples: |c, _| by(&c.writes_blocked),
    },
    Metric {
        name: "irqwise_drift_corrections_total",
        kind: Kind::Counter,
        help: "IRQs whose mask someone else changed and irqwise restored, by device.",
        labels: &DEVICE,
        doc: "IRQs someone else moved and irqwise put back",
        samples: |c, _| Some(c.drift_corrections.iter().map(|d| (device(&d.labels, &[]), d.value as f64)).collect()),
    },
    Metric {
        name: "irqwise_irq_writes_total",
        kind: Kind::Counter,
        help: "Mask writes of each IRQ irqwise wrote since it started (IRQs of the last plan); a mask found already in place is not written.",
        labels: &IRQ_WRITE_LABELS,
        doc: "mask writes of each IRQ irqwise wrote since it started (IRQs of the last plan): what irqwise costs a driver whose every write restarts a queue (bnxt_en with TPH); `irqwise status` shows the IRQs written most",
        samples: |c, _| {
            let sample = |w: &super::counters::IrqWrites| {
                let mut labels = vec![w.irq.to_string(), w.name.clone().unwrap_or_default()];
                labels.extend(device(&w.labels, &[]));
                (labels, w.writes as f64)
            };
            Some(c.irq_writes.iter().map(sample).collect())
        },
    },
    Metric {
        name: "irqwise_config_reloads_total",
        kind: Kind::Counter,
        help: "Configuration reloads (SIGHUP), by result.",
        labels: &[closed("result", RELOAD_RESULTS)],
        doc: "reloads: {result}",
        samples: |c, _| by(&c.reloads),
    },
    Metric {
        name: "irqwise_last_pass_timestamp_seconds",
        kind: Kind::Gauge,
        help: "When the last pass ended, in seconds since the Unix epoch.",
        labels: &[],
        doc: "when the last pass ended (Unix time; none before the first pass)",
        samples: |c, _| last(c, |l| l.timestamp),
    },
    Metric {
        name: "irqwise_last_pass_duration_seconds",
        kind: Kind::Gauge,
        help: "How long the last pass took.",
        labels: &[],
        doc: "how long the last pass took",
        samples: |c, _| last(c, |l| l.duration_seconds),
    },
    Metric {
        name: "irqwise_last_pass_files_opened",
        kind: Kind::Gauge,
        help: "Files and directories the last pass opened (a reconcile reads what can drift).",
        labels: &[],
        doc: "how many files and directories the last pass opened",
        samples: |c, _| last(c, |l| l.files_opened as f64),
    },
    Metric {
        name: "irqwise_last_pass_success",
        kind: Kind::Gauge,
        help: "1 when the last pass succeeded, 0 when it failed.",
        labels: &[],
        doc: "1 if the last pass worked, 0 if it failed",
        samples: |c, _| last(c, |l| if l.ok { 1.0 } else { 0.0 }),
    },
    Metric {
        name: "irqwise_irqs",
        kind: Kind::Gauge,
        help: "IRQs per device after the last pass, by state: placed (moved by irqwise and still there), kept (already right), managed (kernel-managed), skipped (left alone), failed (write failed).",
        labels: &IRQ_STATE_LABELS,
        doc: "IRQs per device after the last pass: {state}",
        samples: |c, _| {
            let states = c.devices.iter().flat_map(|d| d.irqs.iter().map(move |(s, n)| (device(&d.labels, &[s.as_str()]), *n as f64)));
            Some(states.collect())
        },
    },
    Metric {
        name: "irqwise_managed_mismatched_irqs",
        kind: Kind::Gauge,
        help: "Kernel-managed IRQs per device that are not where the kernel's spreading predicts, after the last pass.",
        labels: &DEVICE,
        doc: "kernel-managed IRQs not where the kernel's spreading predicts",
        samples: |c, _| Some(c.devices.iter().map(|d| (device(&d.labels, &[]), d.mismatched as f64)).collect()),
    },
    Metric {
        name: "irqwise_managed_uncertain_irqs",
        kind: Kind::Gauge,
        help: "Kernel-managed IRQs per device whose predicted placement depends on a CPU's NUMA node irqwise cannot know (a possible CPU sysfs does not place), and agrees where it can be checked; not counted as mismatched.",
        labels: &DEVICE,
        doc: "kernel-managed IRQs whose prediction depends on CPUs whose node irqwise cannot know, and agrees where it can be checked (not counted as mismatched)",
        samples: |c, _| Some(c.devices.iter().map(|d| (device(&d.labels, &[]), d.uncertain as f64)).collect()),
    },
];

/// `values` as the docs list them: `` `a`, `b` (what b means), `c` ``.
fn value_list(values: &[Value]) -> String {
    let one = |(v, note): &Value| if note.is_empty() { format!("`{v}`") } else { format!("`{v}` ({note})") };
    values.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// `doc` with each `{label}` of `labels` replaced by that label's value list.
fn with_values(doc: &str, labels: &[Label]) -> String {
    labels.iter().fold(doc.to_string(), |text, l| text.replace(&format!("{{{}}}", l.name), &value_list(l.values)))
}

/// The line that starts the table in `docs/monitoring.md`, and the one after its end.
pub const MARKDOWN_START: &str =
    "<!-- generated from src/daemon/metric_table.rs; IRQWISE_BLESS=1 cargo nextest run --test docs writes it -->";
pub const MARKDOWN_END: &str = "<!-- end of the generated metrics table -->";

/// The table of `docs/monitoring.md`, markers included: one row per metric (name with its
/// labels, type, meaning with every closed label's values), then what the device labels mean.
pub fn markdown() -> String {
    let mut out = format!("{MARKDOWN_START}\n| series | type | meaning |\n|---|---|---|\n");
    for m in METRICS {
        let labels: Vec<&str> = m.labels.iter().map(|l| l.name).collect();
        let series = if labels.is_empty() { m.name.to_string() } else { format!("{}{{{}}}", m.name, labels.join(",")) };
        let own: Vec<Label> = m.labels.iter().filter(|l| !l.device).copied().collect();
        out.push_str(&format!("| `{series}` | {} | {} |\n", m.kind.as_str(), with_values(m.doc, &own)));
    }
    out.push_str(&format!("\n{}\n{MARKDOWN_END}\n", with_values(DEVICE_DOC, &DEVICE)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::metric_labels::names;
    use crate::devices::DeviceClass;

    #[test]
    fn every_closed_label_is_documented_in_its_row_and_every_row_is_filled() {
        for m in METRICS {
            let own: Vec<Label> = m.labels.iter().filter(|l| !l.device).copied().collect();
            for l in own.iter().filter(|l| !l.values.is_empty()) {
                assert!(m.doc.contains(&format!("{{{}}}", l.name)), "{}: the doc lists no {{{}}}", m.name, l.name);
            }
            let row = with_values(m.doc, &own);
            assert!(!row.contains('{') && !row.contains('|'), "{}: {row}", m.name);
            assert_eq!(m.kind == Kind::Counter, m.name.ends_with("_total"), "{}", m.name);
        }
        let names: std::collections::BTreeSet<&str> = METRICS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), METRICS.len(), "a metric is declared twice");
    }

    #[test]
    fn every_device_class_is_a_value_of_the_class_label() {
        let classes = [DeviceClass::Nvme, DeviceClass::Nic, DeviceClass::Storage, DeviceClass::Other];
        for c in classes {
            // A new class makes this match fail to compile: add it to DEVICE_CLASSES too.
            match c {
                DeviceClass::Nvme | DeviceClass::Nic | DeviceClass::Storage | DeviceClass::Other => {}
            }
            assert!(names(DEVICE_CLASSES).any(|v| v == c.as_str()), "{}", c.as_str());
        }
        assert_eq!(DEVICE_CLASSES.len(), classes.len());
    }

    #[test]
    fn every_failure_class_of_a_failed_write_is_a_value_of_the_class_label() {
        use crate::apply::FailureClass;
        let failures = [
            FailureClass::Invalid,
            FailureClass::NoVectors,
            FailureClass::Permission,
            FailureClass::ReadOnly,
            FailureClass::Other,
        ];
        for c in failures {
            let word = serde_json::to_value(c).unwrap();
            assert!(names(FAILURE_CLASSES).any(|v| word == v), "{word}");
        }
        assert_eq!(FAILURE_CLASSES.len(), failures.len());
    }
}
