//! The file format: every key optional, unknown keys rejected, values kept with their byte spans
//! so validation can point at them. Nothing here is checked beyond TOML types.
//!
//! A file is read key by key ([`read`]) rather than in one serde pass, so that every syntax,
//! type and unknown-key error of the file is reported, in file order, not only the first.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::de::{Deserialize, IntoDeserializer};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::choices::{Balance, NapiMode, NapiThreads, Spill, SpreadOrder, StrategyName};
use crate::devices::DeviceClass;

/// One config file (main file or drop-in).
#[derive(Debug, Default)]
pub(crate) struct RawFile<'i> {
    /// `[global]`, read key by key by `keys.rs`.
    pub global: Option<DeTable<'i>>,
    /// The top-level `[napi]` table: every placed NIC's instances.
    pub napi: Option<Spanned<RawNapi>>,
    pub device: Vec<Spanned<RawRule>>,
}

/// One `[[device]]` table.
#[derive(Debug, Default)]
pub(crate) struct RawRule {
    pub matcher: Option<Spanned<RawMatch>>,
    pub strategy: Option<Spanned<StrategyName>>,
    pub cpus: Option<Spanned<String>>,
    pub exclude_cpus: Option<Spanned<String>>,
    pub admin_cpus: Option<Spanned<String>>,
    pub node: Option<Spanned<u32>>,
    pub order: Option<SpreadOrder>,
    pub queues_per_cpu: Option<Spanned<u32>>,
    pub queue_pattern: Option<Spanned<String>>,
    pub xps: Option<Spanned<bool>>,
    pub spill: Option<Spill>,
    pub guard: Option<bool>,
    pub allow_isolated: Option<bool>,
    pub napi_threads: Option<NapiThreads>,
    pub balance: Option<Balance>,
    /// `[device.napi]` (one table) or `[[device.napi]]` (one per queue range).
    pub napi: Vec<Spanned<RawNapi>>,
    /// Some key of this rule had the wrong type or name (already an error).
    pub refused_key: bool,
}

/// A `[napi]` or `[device.napi]` table.
#[derive(Debug, Default)]
pub(crate) struct RawNapi {
    /// The queue indexes it covers (a device's tables only).
    pub queues: Option<Spanned<String>>,
    pub defer_hard_irqs: Option<Spanned<i64>>,
    pub gro_flush_timeout: Option<Spanned<String>>,
    pub irq_suspend_timeout: Option<Spanned<String>>,
    pub threaded: Option<Spanned<NapiMode>>,
}

/// `[device.match]`.
#[derive(Debug, Default)]
pub(crate) struct RawMatch {
    pub pci: Option<Spanned<String>>,
    pub driver: Option<Spanned<String>>,
    pub interface: Option<Spanned<String>>,
    pub class: Option<DeviceClass>,
    pub nvme_model: Option<Spanned<String>>,
    pub nvme_serial: Option<Spanned<String>>,
    pub property: Option<BTreeMap<String, Spanned<String>>>,
}

/// A syntax, type or unknown-key error: where, and the TOML parser's or our words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaError {
    pub span: Range<usize>,
    pub message: String,
}

/// The keys of each table, for "unknown field" messages.
pub(super) const TOP: &[&str] = &["global", "napi", "device"];
pub(crate) const RULE: &[&str] = &[
    "match",
    "strategy",
    "cpus",
    "exclude_cpus",
    "admin_cpus",
    "node",
    "order",
    "queues_per_cpu",
    "queue_pattern",
    "xps",
    "spill",
    "guard",
    "allow_isolated",
    "napi_threads",
    "balance",
    "napi",
];
/// The keys of a `[napi]` table (`queues` only in a device's).
pub(crate) const NAPI: &[&str] = &["defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout", "threaded"];
pub(super) const DEVICE_NAPI: &[&str] =
    &["queues", "defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout", "threaded"];
pub(super) const MATCH: &[&str] = &["pci", "driver", "interface", "class", "nvme_model", "nvme_serial", "property"];

/// Reads `text` into the raw structure, keeping every key that has the right type, and returns
/// every error found, ordered by position in the file.
pub fn read(text: &str) -> (RawFile<'_>, Vec<SchemaError>) {
    let (table, syntax) = DeTable::parse_recoverable(text);
    let mut r = Reader {
        errors: syntax
            .iter()
            .map(|e| SchemaError { span: e.span().unwrap_or(0..0), message: e.message().to_string() })
            .collect(),
    };
    let mut file = RawFile::default();
    for (key, value) in table.into_inner() {
        match key.get_ref().as_ref() {
            "global" => file.global = r.table(value).map(Spanned::into_inner),
            "napi" => {
                let span = value.span();
                file.napi = r.table(value).map(|t| Spanned::new(span, r.napi(t, NAPI)));
            }
            "device" => match value.get_ref() {
                DeValue::Array(items) => {
                    for item in items.iter().cloned() {
                        let span = item.span();
                        if let Some(t) = r.table(item) {
                            file.device.push(Spanned::new(span, r.rule(t)));
                        }
                    }
                }
                _ => r.error(value.span(), "invalid type: expected an array of [[device]] tables"),
            },
            other => r.unknown(&key, other, TOP),
        }
    }
    r.errors.sort_by_key(|e| (e.span.start, e.span.end));
    (file, r.errors)
}

/// The message of an unknown key `name` where the keys are `expected`.
pub(super) fn unknown_message(name: &str, expected: &[&str]) -> String {
    let list = expected.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    format!("unknown field `{name}`, expected one of {list}")
}

/// Collects the errors of one file while reading it.
struct Reader {
    errors: Vec<SchemaError>,
}

impl Reader {
    fn error(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.errors.push(SchemaError { span, message: message.into() });
    }

    fn unknown(&mut self, key: &Spanned<toml::de::DeString>, name: &str, expected: &[&str]) {
        self.error(key.span(), unknown_message(name, expected));
    }

    /// The value as a table, else an error at it.
    fn table<'i>(&mut self, value: Spanned<DeValue<'i>>) -> Option<Spanned<DeTable<'i>>> {
        let span = value.span();
        if let DeValue::Table(t) = value.into_inner() {
            Some(Spanned::new(span, t))
        } else {
            self.error(span, "invalid type: expected a table");
            None
        }
    }

    /// The value as a `T`, else the deserializer's error at its position.
    fn value<T: for<'de> Deserialize<'de>>(&mut self, value: Spanned<DeValue<'_>>) -> Option<T> {
        let span = value.span();
        match T::deserialize(value.into_deserializer()) {
            Ok(v) => Some(v),
            Err(e) => {
                self.error(e.span().unwrap_or(span), e.message().to_string());
                None
            }
        }
    }

    fn rule(&mut self, t: Spanned<DeTable<'_>>) -> RawRule {
        let errors_before = self.errors.len();
        let mut r = RawRule::default();
        for (key, v) in t.into_inner() {
            match key.get_ref().as_ref() {
                "match" => {
                    let span = v.span();
                    r.matcher = self.table(v).map(|m| Spanned::new(span, self.matcher(m)));
                }
                "strategy" => r.strategy = self.value(v),
                "cpus" => r.cpus = self.value(v),
                "exclude_cpus" => r.exclude_cpus = self.value(v),
                "admin_cpus" => r.admin_cpus = self.value(v),
                "node" => r.node = self.value(v),
                "order" => r.order = self.value(v),
                "queues_per_cpu" => r.queues_per_cpu = self.value(v),
                "queue_pattern" => r.queue_pattern = self.value(v),
                "xps" => r.xps = self.value(v),
                "spill" => r.spill = self.value(v),
                "guard" => r.guard = self.value(v),
                "allow_isolated" => r.allow_isolated = self.value(v),
                "napi_threads" => r.napi_threads = self.value(v),
                "balance" => r.balance = self.value(v),
                "napi" => r.napi = self.napi_tables(v),
                other => self.unknown(&key, other, RULE),
            }
        }
        r.refused_key = self.errors.len() > errors_before;
        r
    }

    /// `[device.napi]` as one table or `[[device.napi]]` as several.
    fn napi_tables(&mut self, v: Spanned<DeValue<'_>>) -> Vec<Spanned<RawNapi>> {
        let items = match v.get_ref() {
            DeValue::Array(items) => items.iter().cloned().collect(),
            _ => vec![v],
        };
        let mut out = Vec::new();
        for item in items {
            let span = item.span();
            if let Some(t) = self.table(item) {
                out.push(Spanned::new(span, self.napi(t, DEVICE_NAPI)));
            }
        }
        out
    }

    /// One `[napi]` table; `keys` are the ones its place allows.
    fn napi(&mut self, t: Spanned<DeTable<'_>>, keys: &[&str]) -> RawNapi {
        let mut n = RawNapi::default();
        for (key, v) in t.into_inner() {
            match key.get_ref().as_ref() {
                "queues" if keys.contains(&"queues") => n.queues = self.value(v),
                "defer_hard_irqs" => n.defer_hard_irqs = self.value(v),
                "gro_flush_timeout" => n.gro_flush_timeout = self.value(v),
                "irq_suspend_timeout" => n.irq_suspend_timeout = self.value(v),
                "threaded" => n.threaded = self.value(v),
                other => self.unknown(&key, other, keys),
            }
        }
        n
    }

    fn matcher(&mut self, t: Spanned<DeTable<'_>>) -> RawMatch {
        let mut m = RawMatch::default();
        for (key, v) in t.into_inner() {
            match key.get_ref().as_ref() {
                "pci" => m.pci = self.value(v),
                "driver" => m.driver = self.value(v),
                "interface" => m.interface = self.value(v),
                "class" => m.class = self.value(v),
                "nvme_model" => m.nvme_model = self.value(v),
                "nvme_serial" => m.nvme_serial = self.value(v),
                "property" => m.property = self.value(v),
                other => self.unknown(&key, other, MATCH),
            }
        }
        m
    }
}
