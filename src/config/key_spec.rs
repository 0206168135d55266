//! What a `[global]` key is: its kind of value (and range), its default, when a change takes
//! effect, its documentation and its JSON Schema. The keys themselves are listed in `keys.rs`;
//! how each kind of value is read is in `key_types.rs`.

use std::time::Duration;

use serde_json::{json, Map, Value};

use DefaultValue::{Flag, Number, Text, Unset};

/// When a changed value takes effect in a running daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// At the pass a reload runs (and every pass after).
    NextPass,
    /// At once on reload (a timer or sink is reset), or read when it is needed (at stop).
    Reload,
    /// Read at start only: a change needs a restart.
    Start,
}

impl Effect {
    /// The words of the configuration reference's "takes effect" column.
    pub fn words(self) -> &'static str {
        match self {
            Effect::NextPass => "next pass",
            Effect::Reload => "reload",
            Effect::Start => "restart",
        }
    }
}

/// A key's default as written in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    Flag(bool),
    Number(i64),
    Text(&'static str),
    /// No value states it; the words say what happens when the key is not set.
    Unset(&'static str),
}

impl DefaultValue {
    /// The default as a TOML value, `None` for [`DefaultValue::Unset`].
    pub fn toml(self) -> Option<String> {
        match self {
            Flag(b) => Some(b.to_string()),
            Number(n) => Some(n.to_string()),
            Text(t) => Some(toml::Value::String(t.to_owned()).to_string()),
            Unset(_) => None,
        }
    }

    /// The default as the configuration reference shows it: the TOML value in backticks, or the
    /// words of an unset default.
    pub fn words(self) -> String {
        match (self.toml(), self) {
            (Some(v), _) => format!("`{v}`"),
            (None, Unset(words)) => words.to_owned(),
            (None, _) => String::new(),
        }
    }

    fn json(self) -> Option<Value> {
        match self {
            Flag(b) => Some(json!(b)),
            Number(n) => Some(json!(n)),
            Text(t) => Some(json!(t)),
            Unset(_) => None,
        }
    }
}

/// The durations a key accepts: from `from` to `to`, written the way errors and the reference
/// say them (`tests` check they parse to `min` and `max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationRange {
    pub min: Duration,
    pub max: Duration,
    pub from: &'static str,
    pub to: &'static str,
}

impl DurationRange {
    /// What a config error says was expected.
    pub fn expected(&self) -> String {
        format!("a duration from {:?} to {:?} (a whole number followed by ms, s, m or h)", self.from, self.to)
    }
}

/// A path key: the JSON Schema's pattern for it and the reference's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathRule {
    pub pattern: &'static str,
    pub words: &'static str,
}

/// What values a key takes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    /// One of the spellings of a choice, from its `clap::ValueEnum` (the spellings serde reads).
    Enum(fn() -> Vec<String>),
    Duration(DurationRange),
    /// An integer from `min` to `max`.
    Integer {
        min: i64,
        max: i64,
    },
    /// The kernel's CPU list format.
    CpuList,
    Path(PathRule),
}

impl Kind {
    /// The reference's "type and range" words.
    pub fn words(&self) -> String {
        match self {
            Kind::Bool => "boolean".into(),
            Kind::Enum(spellings) => spellings().iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
            Kind::Duration(r) => format!("duration, `{}` to `{}`", r.from, r.to),
            Kind::Integer { min, max } => format!("integer, {min} to {max}"),
            Kind::CpuList => "CPU list".into(),
            Kind::Path(p) => p.words.into(),
        }
    }

    /// The JSON Schema of the value, without default and description.
    fn schema(&self) -> Map<String, Value> {
        let v = match self {
            Kind::Bool => json!({ "type": "boolean" }),
            Kind::Enum(spellings) => json!({ "type": "string", "enum": spellings() }),
            Kind::Duration(_) => json!({ "type": "string", "pattern": "^[0-9]+(ms|s|m|h)$" }),
            Kind::Integer { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
            Kind::CpuList => json!({ "type": "string", "pattern": CPU_LIST_PATTERN }),
            Kind::Path(p) => json!({ "type": "string", "pattern": p.pattern }),
        };
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// One `[global]` key.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    pub name: &'static str,
    pub kind: Kind,
    pub default: DefaultValue,
    pub effect: Effect,
    /// What it does (the JSON Schema's description).
    pub doc: &'static str,
}

impl KeySpec {
    /// The key's JSON Schema.
    pub(super) fn schema(&self) -> Value {
        let mut m = self.kind.schema();
        if let Some(d) = self.default.json() {
            m.insert("default".into(), d);
        }
        m.insert("description".into(), json!(self.doc));
        Value::Object(m)
    }
}

/// The spellings of a choice, in declaration order.
pub(super) fn spellings<T: clap::ValueEnum>() -> Vec<String> {
    T::value_variants().iter().filter_map(clap::ValueEnum::to_possible_value).map(|p| p.get_name().to_owned()).collect()
}

/// The JSON Schema's pattern of a CPU list (what `CpuSet::parse_list` reads).
pub(super) const CPU_LIST_PATTERN: &str = r"^\s*([0-9]+\s*(-\s*[0-9]+\s*)?(,\s*[0-9]+\s*(-\s*[0-9]+\s*)?)*)?$";
