//! The Prometheus text exposition (format 0.0.4) of the daemon's [`Counters`]: what the
//! metrics file holds.
//!
//! Pure: counters in, text out. Guarantees: each metric has one `# HELP` and one `# TYPE` line
//! before its samples; label values are escaped; output is sorted and so stable.

use std::fmt::Write as _;

use super::counters::Counters;
use super::metric_table::METRICS;

impl Counters {
    /// The Prometheus text exposition (format 0.0.4) of every metric of [`METRICS`], in its
    /// order, `version` as `irqwise_build_info`'s label. Guarantees: each metric written has one
    /// `# HELP` and one `# TYPE` line before its samples; label values are escaped; output is
    /// sorted and so stable.
    pub fn render(&self, version: &str) -> String {
        let mut out = Exposition::default();
        for m in METRICS {
            let Some(samples) = (m.samples)(self, version) else { continue };
            out.metric(m.name, m.kind.as_str(), m.help);
            for (values, v) in &samples {
                let labels: Vec<(&str, &str)> =
                    m.labels.iter().map(|l| l.name).zip(values.iter().map(String::as_str)).collect();
                out.sample(m.name, &labels, *v);
            }
        }
        out.text
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
}
