//! The context of reading one configuration file: where each value was written (for
//! `file:line:column` in every message), the machine's CPUs, and the errors and warnings found so
//! far; with the readers of the value kinds every table shares (typed values, durations, CPU
//! lists). `validate.rs` reads the tables with it, `keys.rs` the `[global]` keys.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use serde::de::{Deserialize, IntoDeserializer};
use toml::de::{DeString, DeValue};
use toml::Spanned;

use super::duration::parse_duration;
use super::error::{ConfigError, ConfigWarning, LineIndex, Location};
use super::key_spec::DurationRange;
use super::schema::{unknown_message, RULE};
use super::MachineShape;
use crate::cpuset::{CpuSet, CpuSetError};

/// Validation context of one file: its path and text (for locations) and the machine's CPUs.
pub(super) struct FileCtx<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
    lines: LineIndex,
    pub(super) machine: &'a MachineShape,
    pub(super) errors: Vec<ConfigError>,
    pub(super) warnings: Vec<ConfigWarning>,
}

/// The TOML parser's message on one line, in the config's words: Rust integer type names become
/// what they mean, and a setting found inside a match table gets a hint about TOML's table rules.
fn schema_message(message: &str) -> String {
    let mut text = message.trim_end().lines().map(str::trim).collect::<Vec<_>>().join("; ");
    text = text.replace("expected u32", "expected a non-negative integer (at most 4294967295)");
    // A rule's settings: every key of a [[device]] table but its match.
    let settings = RULE.iter().filter(|k| **k != "match");
    let misplaced = settings.into_iter().any(|k| text.starts_with(&format!("unknown field `{k}`")));
    if misplaced && text.contains("expected one of `pci`") {
        text.push_str(" (keys after a [device.match] header belong to the match table: put the rule's settings before that header, or write match = { ... } inline)");
    }
    text
}

impl<'a> FileCtx<'a> {
    /// A context for `text`, read from `path`, on a machine of `machine`'s shape: no errors yet.
    pub(super) fn new(path: &'a Path, text: &'a str, machine: &'a MachineShape) -> Self {
        FileCtx { path, text, lines: LineIndex::new(text), machine, errors: Vec::new(), warnings: Vec::new() }
    }

    /// Records an error of the TOML reader (a schema error) at byte `offset`.
    pub(super) fn schema_error(&mut self, offset: usize, message: &str) {
        let at = self.loc(offset);
        self.errors.push(ConfigError::Schema { at, message: schema_message(message) });
    }

    /// The value as a `T`, else the TOML reader's error at its position (as `schema.rs` says
    /// it of the other tables).
    pub(super) fn typed<T: for<'de> Deserialize<'de>>(&mut self, value: Spanned<DeValue<'_>>) -> Option<T> {
        let span = value.span();
        match T::deserialize(value.into_deserializer()) {
            Ok(v) => Some(v),
            Err(e) => {
                let at = self.loc(e.span().unwrap_or(span).start);
                self.errors.push(ConfigError::Schema { at, message: schema_message(e.message()) });
                None
            }
        }
    }

    /// An unknown key's error: what keys there are.
    pub(super) fn unknown_key(&mut self, key: &Spanned<DeString<'_>>, expected: &[&str]) {
        let at = self.loc(key.span().start);
        let message = schema_message(&unknown_message(key.get_ref(), expected));
        self.errors.push(ConfigError::Schema { at, message });
    }

    /// Records an error.
    pub(super) fn push(&mut self, error: ConfigError) {
        self.errors.push(error);
    }

    pub(super) fn loc(&self, offset: usize) -> Location {
        self.lines.locate(self.path, self.text, offset)
    }

    /// Location of character `inner` inside the string value spanning `span`, when the value is
    /// written as a plain quoted string (no escapes), else of the value's start.
    pub(super) fn loc_inside(&self, span: &Range<usize>, value: &str, inner: usize) -> Location {
        let written = self.text.get(span.clone()).unwrap_or("");
        let plain = written.len() == value.len() + 2 && written.get(1..written.len() - 1) == Some(value);
        self.loc(if plain { span.start + 1 + inner } else { span.start })
    }
    /// A duration value within `range`, whose words say what it is.
    pub(super) fn duration(
        &mut self,
        key: &'static str,
        v: &Spanned<String>,
        range: &DurationRange,
    ) -> Option<Duration> {
        match parse_duration(v.get_ref()) {
            Some(d) if d >= range.min && d <= range.max => Some(d),
            _ => {
                let expected = range.expected();
                let at = self.loc(v.span().start);
                self.errors.push(ConfigError::Duration { at, key, value: v.get_ref().clone(), expected });
                None
            }
        }
    }

    /// The part of a CPU list value this machine has, with a warning naming the CPUs it lacks
    /// and `instead`: what is left, or (when nothing is) what happens then.
    pub(super) fn fit(&mut self, key: &'static str, v: &Spanned<String>, set: &CpuSet, if_none: &str) -> CpuSet {
        let within = set.intersection(&self.machine.possible);
        let beyond = set.difference(&self.machine.possible);
        if !beyond.is_empty() {
            let instead =
                if within.is_empty() { if_none.to_string() } else { format!("{key} is {within} on this machine") };
            self.warnings.push(ConfigWarning::CpusBeyondMachine {
                at: self.loc(v.span().start),
                key,
                value: v.get_ref().clone(),
                beyond,
                possible: self.machine.possible.clone(),
                instead,
            });
        }
        within
    }

    /// A CPU list value as written (any CPU below the CpuSet limit): see [`FileCtx::fit`] for
    /// the part this machine has.
    pub(super) fn cpu_list(&mut self, key: &'static str, v: &Spanned<String>) -> Option<CpuSet> {
        let span = v.span();
        match CpuSet::parse_list(v.get_ref()) {
            Ok(set) => Some(set),
            Err(source) => {
                let pos = match &source {
                    CpuSetError::BadListToken { pos, .. }
                    | CpuSetError::ReversedRange { pos, .. }
                    | CpuSetError::CpuTooLarge { pos, .. }
                    | CpuSetError::BadMaskGroup { pos, .. } => *pos,
                    CpuSetError::MaskTooWide { .. } => 0,
                };
                let at = self.loc_inside(&span, v.get_ref(), pos);
                self.errors.push(ConfigError::CpuList { at, key, source });
                None
            }
        }
    }
}
