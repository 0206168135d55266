//! What each type of `[global]` value means: how a value of that type is read and checked
//! ([`KeyType::read`], every refusal an error at its `file:line:column` naming the key, the
//! value and what was expected) and what [`super::Global`] holds for it. Written once per type;
//! the keys that use a type are rows of `keys.rs`.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use toml::de::DeValue;
use toml::Spanned;

use super::error::{ConfigError, Location};
use super::file_ctx::FileCtx;
use super::key_spec::{KeySpec, Kind};
use super::{GuardScope, LogFormat, MetricsFile, OnDrift};
use crate::choices::{Balance, NapiThreads, Spill};
use crate::cpuset::CpuSet;

/// A type a `[global]` key has.
pub(super) trait KeyType: Sized + Clone {
    /// What [`super::Global`] holds for it.
    type Field;

    /// `value` read as this type and checked against `spec`'s kind; `None` (and an error in
    /// `ctx`) when refused.
    fn read(ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self>;

    /// The field for a value, `None` only for a key without a default that no file sets.
    fn field(value: Option<Self>) -> Self::Field;
}

/// Types whose TOML spelling is all there is to check (booleans, the choices).
macro_rules! as_written {
    ($($t:ty),*) => {$(
        impl KeyType for $t {
            type Field = $t;
            fn read(ctx: &mut FileCtx<'_>, _: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self> {
                ctx.typed(value)
            }
            fn field(value: Option<Self>) -> Self {
                value.unwrap_or_default()
            }
        }
    )*};
}

as_written!(bool, LogFormat, OnDrift, Spill, GuardScope, NapiThreads, Balance);

impl KeyType for Duration {
    type Field = Duration;

    /// A duration within the key's range.
    fn read(ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self> {
        let v: Spanned<String> = ctx.typed(value)?;
        let Kind::Duration(range) = spec.kind else { return None };
        ctx.duration(spec.name, &v, &range)
    }

    fn field(value: Option<Self>) -> Self {
        value.unwrap_or_default()
    }
}

impl KeyType for u32 {
    type Field = u32;

    /// An integer within the key's range.
    fn read(ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self> {
        let v: Spanned<u32> = ctx.typed(value)?;
        let Kind::Integer { min, max } = spec.kind else { return None };
        let n = *v.get_ref();
        if (min..=max).contains(&i64::from(n)) {
            return Some(n);
        }
        let at = ctx.loc(v.span().start);
        let expected = format!("an integer from {min} to {max}");
        ctx.push(ConfigError::OutOfRange { at, key: spec.name, value: n.to_string(), expected });
        None
    }

    fn field(value: Option<Self>) -> Self {
        value.unwrap_or_default()
    }
}

/// `banned_cpus`: the CPUs this machine has of the list, and where the list was written (for
/// the "bans everything" check after merging).
#[derive(Debug, Clone)]
pub(super) struct Ban {
    pub set: CpuSet,
    pub at: Location,
    pub value: String,
}

impl KeyType for Ban {
    type Field = CpuSet;

    fn read(ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self> {
        let v: Spanned<String> = ctx.typed(value)?;
        let set = ctx.cpu_list(spec.name, &v)?;
        let set = ctx.fit(spec.name, &v, &set, "no CPU of this machine is banned");
        Some(Ban { set, at: ctx.loc(v.span().start), value: v.into_inner() })
    }

    fn field(value: Option<Self>) -> CpuSet {
        value.map(|b| b.set).unwrap_or_default()
    }
}

impl KeyType for MetricsFile {
    type Field = MetricsFile;

    /// Empty (off), or an absolute path of a `*.prom` file (node_exporter's textfile collector
    /// reads no other name) without `.` or `..` components (it is written below the root: a path
    /// that climbs out of it is refused here, not at the first write).
    fn read(ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self> {
        let v: Spanned<String> = ctx.typed(value)?;
        let text = v.get_ref();
        if text.is_empty() {
            return Some(MetricsFile::Off);
        }
        if let Some(path) = plain_absolute(text).filter(|p| is_prom_file(p)) {
            return Some(MetricsFile::At(path));
        }
        let at = ctx.loc(v.span().start);
        ctx.push(ConfigError::MetricsFile { at, key: spec.name, value: text.clone() });
        None
    }

    fn field(value: Option<Self>) -> Self {
        value.unwrap_or_default()
    }
}

/// A host file's path read below the root, empty for none.
#[derive(Debug, Clone, Default)]
pub(super) struct OptionalPath(PathBuf);

impl KeyType for OptionalPath {
    type Field = Option<PathBuf>;

    /// Empty (off), or an absolute path without `.` or `..` components (it is read below the
    /// root, as every host file).
    fn read(ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self> {
        let v: Spanned<String> = ctx.typed(value)?;
        let text = v.get_ref();
        if text.is_empty() {
            return Some(OptionalPath(PathBuf::new()));
        }
        if let Some(path) = plain_absolute(text) {
            return Some(OptionalPath(path));
        }
        let at = ctx.loc(v.span().start);
        ctx.push(ConfigError::KubeletState { at, key: spec.name, value: text.clone() });
        None
    }

    /// `""` (and the default) is none.
    fn field(value: Option<Self>) -> Option<PathBuf> {
        value.map(|k| k.0).filter(|p| !p.as_os_str().is_empty())
    }
}

/// A socket's path below the root.
#[derive(Debug, Clone, Default)]
pub(super) struct SocketPath(PathBuf);

impl KeyType for SocketPath {
    type Field = PathBuf;

    /// An absolute path without `.` or `..` components and no trailing `/` (it is opened below
    /// the root: a path that climbs out of it is refused here).
    fn read(ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) -> Option<Self> {
        let v: Spanned<String> = ctx.typed(value)?;
        let text = v.get_ref();
        if let Some(path) = plain_absolute(text).filter(|_| !text.ends_with('/')) {
            return Some(SocketPath(path));
        }
        let at = ctx.loc(v.span().start);
        ctx.push(ConfigError::NriSocket { at, key: spec.name, value: text.clone() });
        None
    }

    fn field(value: Option<Self>) -> PathBuf {
        value.map(|s| s.0).unwrap_or_default()
    }
}

/// `text` as a path when it is absolute, names a file and has no `.` or `..` component (nor a
/// NUL): what every host path read below the root must be.
fn plain_absolute(text: &str) -> Option<PathBuf> {
    let path = Path::new(text);
    let plain = path.components().skip(1).all(|c| matches!(c, Component::Normal(_)))
        && !text.split('/').any(|c| c == "." || c == "..");
    (path.is_absolute() && path.file_name().is_some() && plain && !text.contains('\0')).then(|| path.to_path_buf())
}

/// Whether `path` names a `*.prom` file with a name before the extension.
fn is_prom_file(path: &Path) -> bool {
    let named = path.file_name().is_some_and(|n| n.len() > ".prom".len());
    named && path.to_string_lossy().ends_with(".prom")
}
