//! The `[global]` keys, declared once in the `global_keys!` list below. Each row is a key: its
//! name (the field of [`Global`]), the type it has there and the type its reader yields, its
//! kind (values and range), its default, when a change takes effect in a running daemon, and
//! its documentation. From that one list come [`Global`] (with its `Default`), the layer one
//! file contributes and its key-by-key merge, the reader of a `[global]` table (every error with
//! its `file:line:column`), the "unknown field" list, [`GLOBAL_KEYS`] (what `tests/docs.rs`
//! checks the configuration reference against) and [`global_schema`] (what
//! `tests/config_schema.rs` checks `schemas/config.schema.json` against).
//!
//! Why a macro beside a table: a static table alone cannot give each key its own Rust type, so
//! the struct, its merge and its reader would still name every key again; the macro writes
//! those from the rows, and the rows stay a plain list a reader can scan. What a kind of value
//! means (how a duration or a path is checked) is in `key_types.rs`, once per type, not per key.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Map, Value};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::file_ctx::FileCtx;
use super::key_spec::{spellings, DefaultValue, DurationRange, Effect, KeySpec, Kind, PathRule};
use super::key_types::{Ban, KeyType, OptionalPath, SocketPath};
use super::schema::{read, DEVICE_NAPI, MATCH, NAPI, RULE, TOP};
use super::{GuardScope, LogFormat, MachineShape, MetricsFile, OnDrift, DEFAULT_NRI_SOCKET};
use crate::choices::{Balance, NapiProfile, NapiThreads, Spill};
use crate::cpuset::CpuSet;

use DefaultValue::{Flag, Number, Text, Unset};

/// `reconcile_interval`: a full pass more often than once a second would only burn CPU (a
/// millisecond interval measured 41% of a CPU); one a day is the longest that still deserves the
/// name.
const RECONCILE: DurationRange =
    DurationRange { min: Duration::from_secs(1), max: Duration::from_secs(86_400), from: "1s", to: "24h" };

/// `debounce`: the longest a burst of events may delay its pass; beyond 10 s the daemon would
/// react slower than the irqbalance it replaces.
const DEBOUNCE: DurationRange =
    DurationRange { min: Duration::ZERO, max: Duration::from_secs(10), from: "0ms", to: "10s" };

/// `balance_interval`: a sample is a rate over this window; below a second the counts of a
/// moderately busy queue are noise, beyond ten minutes the load it measures is gone.
const BALANCE_INTERVAL: DurationRange =
    DurationRange { min: Duration::from_secs(1), max: Duration::from_secs(600), from: "1s", to: "10m" };

/// `balance_hold`: how long a moved queue stays; up to a day.
const BALANCE_HOLD: DurationRange =
    DurationRange { min: Duration::ZERO, max: Duration::from_secs(86_400), from: "0s", to: "24h" };

/// `metrics_file`: node_exporter's textfile collector reads only `*.prom`.
const METRICS_PATH: PathRule =
    PathRule { pattern: r"^$|^/(.*/)?[^/]+\.prom$", words: "absolute path of a `*.prom` file, or `\"\"` (none)" };

/// `kubelet_cpu_manager_state`: a file below the root, or none.
const KUBELET_PATH: PathRule = PathRule { pattern: r"^$|^/(.*/)?[^/]+/?$", words: "absolute path, or `\"\"` (none)" };

/// `nri_socket`: a socket below the root.
const SOCKET_PATH: PathRule = PathRule { pattern: r"^/(.*/)?[^/]+$", words: "absolute path" };

/// The JSON Schema's words for the `[global]` table.
const GLOBAL_DOC: &str = "Settings for the whole machine. Between files, the last file that sets a key wins.";

/// Declares the `[global]` keys: see the module's documentation.
macro_rules! global_keys {
    ($(
        $name:ident: $field:ty, read as $layer:ty, $kind:expr, default $default:expr, $effect:ident,
            $doc:literal;
    )*) => {
        /// `[global]`, with defaults filled in: one field per key of [`GLOBAL_KEYS`], and `[napi]`.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Global {
            $( #[doc = $doc] pub $name: $field, )*
            /// `[napi]`: what every placed NIC's NAPI instances get (default: nothing is set).
            pub napi: NapiProfile,
        }

        /// The `[global]` keys one file sets (`None`: not set there), and its `[napi]`.
        #[derive(Debug, Default, Clone)]
        pub(super) struct GlobalLayer {
            $( pub $name: Option<$layer>, )*
            pub napi: NapiProfile,
        }

        impl GlobalLayer {
            /// Overlays `later` on `self` key by key: every key `later` sets wins (`[napi]` too).
            pub(super) fn overlay(&mut self, later: GlobalLayer) {
                $( if later.$name.is_some() { self.$name = later.$name; } )*
                self.napi = self.napi.overlay(&later.napi);
            }

            /// [`Global`]: what `self` sets, the defaults for the rest.
            pub(super) fn finish(self) -> Global {
                let d = defaults();
                Global {
                    $( $name: <$layer as KeyType>::field(self.$name.or_else(|| d.$name.clone())), )*
                    napi: self.napi,
                }
            }

            /// Sets the key of `spec` from `value` (left unset when the value is refused: the
            /// error is in `ctx`).
            fn read_key(&mut self, ctx: &mut FileCtx<'_>, spec: &'static KeySpec, value: Spanned<DeValue<'_>>) {
                $( if spec.name == stringify!($name) {
                    self.$name = <$layer as KeyType>::read(ctx, spec, value);
                    return;
                } )*
            }
        }

        /// Every `[global]` key, in the order "unknown field" errors list them.
        pub static GLOBAL_KEYS: &[KeySpec] = &[ $(
            KeySpec { name: stringify!($name), kind: $kind, default: $default, effect: Effect::$effect, doc: $doc },
        )* ];

        /// The names of [`GLOBAL_KEYS`].
        pub(super) const GLOBAL_NAMES: &[&str] = &[ $( stringify!($name), )* ];
    };
}

global_keys! {
    banned_cpus: CpuSet, read as Ban, Kind::CpuList, default Text(""), NextPass,
        "CPUs that never get device IRQs from irqwise (e.g. CPUs reserved for an application), in the kernel's CPU list format (\"0-3,8,10-11\"). CPUs this machine lacks are a warning and left out (one file can serve machines of any size).";
    respect_isolation: bool, read as bool, Kind::Bool, default Flag(true), NextPass,
        "Keep device IRQs off CPUs isolated by any source: isolcpus= (cpu/isolated and the kernel command line), nohz_full, cgroup v2 isolated partitions (cpuset.cpus.isolated), the CPUs outside irqaffinity=. A rule's own `cpus` may still use them with allow_isolated = true.";
    reconcile_interval: Duration, read as Duration, Kind::Duration(RECONCILE), default Text("60s"), Reload,
        "How often to re-check every IRQ even without events (a safety net): a whole number followed by ms, s, m or h, from \"1s\" to \"24h\".";
    reconcile_full_every: u32, read as u32, Kind::Integer { min: 1, max: 1000 }, default Number(10), Reload,
        "Every this many reconciles, one reads the whole machine again (a device's attributes, an IRQ renamed under the same number: what no drift check covers); the others read only what can drift. 1: every reconcile reads everything (1 to 1000).";
    debounce: Duration, read as Duration, Kind::Duration(DEBOUNCE), default Text("100ms"), Reload,
        "The first event (CPU hotplug, device add, link up) after this much quiet is handled at once; events arriving during a pass or within this of its end are handled together by one more pass, this long after it (from \"0ms\" to \"10s\").";
    restore_on_exit: bool, read as bool, Kind::Bool, default Flag(false), Reload,
        "On a clean stop, put back the affinities IRQs had before irqwise first changed them (recorded in /run/irqwise/originals.json, so a restart in between loses nothing).";
    log_format: LogFormat, read as LogFormat, Kind::Enum(spellings::<LogFormat>), default Text("auto"), Reload,
        "Log format: \"journal\" (structured fields to journald), \"text\", \"json\" (one object per line on stderr), or \"auto\" (journal when started by systemd, text otherwise). --log-format overrides it.";
    xps: bool, read as bool, Kind::Bool, default Flag(true), NextPass,
        "Transmit steering: set each NIC's queues/tx-N/xps_cpus so that every CPU sends on the tx queue whose IRQ is nearest to it, and again whenever the IRQs move (NICs placed by numa-hop; a rule's `xps` overrides this per device). Needs CAP_NET_ADMIN.";
    import_irqbalance_banned: bool, read as bool, Kind::Bool, default Flag(true), NextPass,
        "Keep device IRQs off the CPUs irqbalance's banned list names (IRQBALANCE_BANNED_CPULIST and IRQBALANCE_BANNED_CPUS in /etc/sysconfig/irqbalance and /etc/default/irqbalance, as tuned and CRI-O write them), like banned_cpus. The files are watched: a change re-places at once.";
    on_drift: OnDrift, read as OnDrift, Kind::Enum(spellings::<OnDrift>), default Text("restore"), NextPass,
        "An IRQ whose mask someone else changed since irqwise placed it: \"restore\" puts it back at the next pass; \"respect\" leaves it as they set it (said once) until its device goes away or the configuration is reloaded. The kernel's CPU-offline fallback and a driver's reset to the default mask are placed again either way.";
    spill: Spill, read as Spill, Kind::Enum(spellings::<Spill>), default Text("kernel"), NextPass,
        "Where a NIC's queues go once it has used its node's CPUs: \"kernel\" (the next NUMA hop, as the kernel's cpumask_local_spread() order does) or \"local\" (stay on the node: every local CPU takes a second queue before any remote CPU takes one). A rule's `spill` overrides it per device.";
    guard: GuardScope, read as GuardScope, Kind::Enum(spellings::<GuardScope>), default Text("all"), NextPass,
        "Which IRQs the banned and isolated CPUs are kept off: \"all\" (like irqbalance: every movable IRQ, including devices left alone, unbound devices and IRQs of no device; never kernel-managed IRQs, passthrough devices or rules with guard = false) or \"placed\" (only the devices irqwise places).";
    metrics_file: MetricsFile, read as MetricsFile, Kind::Path(METRICS_PATH), default Unset("`/var/lib/prometheus/node-exporter/irqwise.prom` when that directory exists, else none"), NextPass,
        "Prometheus metrics for node_exporter's textfile collector, rewritten atomically after every pass (at most once per second): an absolute path ending in .prom (without . or .. components), or \"\" for none. When not set: /var/lib/prometheus/node-exporter/irqwise.prom when that directory exists (Debian's prometheus-node-exporter), else none.";
    napi_threads: NapiThreads, read as NapiThreads, Kind::Enum(spellings::<NapiThreads>), default Text("follow"), NextPass,
        "Threaded NAPI (/sys/class/net/IF/threaded = 1): each NAPI thread runs on the CPUs of its queue's IRQ (\"follow\"), or is left where the scheduler puts it (\"leave\"). A rule's `napi_threads` overrides it per device. Needs CAP_SYS_NICE.";
    balance: Balance, read as Balance, Kind::Enum(spellings::<Balance>), default Text("off"), NextPass,
        "Load refinement: \"off\" (the placement is the kernel's order, the same on every machine) or \"load\" (every balance_interval the daemon reads /proc/interrupts; a CPU measured hot sheds its second hottest queue to the coolest usable CPU of the same last-level cache or node, never farther; the queue stays balance_hold, then returns home once the load evens out). A rule's `balance` overrides it.";
    balance_interval: Duration, read as Duration, Kind::Duration(BALANCE_INTERVAL), default Text("10s"), Reload,
        "balance = \"load\": each sample is the interrupt rate over this window (from \"1s\" to \"10m\").";
    balance_hold: Duration, read as Duration, Kind::Duration(BALANCE_HOLD), default Text("5m"), Reload,
        "balance = \"load\": a moved queue stays at least this long before it returns or moves again (from \"0s\" to \"24h\").";
    balance_moves_per_minute: u32, read as u32, Kind::Integer { min: 1, max: 600 }, default Number(4), Reload,
        "balance = \"load\": moves and returns together, machine-wide, at most this many per minute (1 to 600).";
    irqbalance_socket: bool, read as bool, Kind::Bool, default Flag(false), Start,
        "Speak irqbalance's control socket (/run/irqbalance/irqbalance<PID>.sock) for irqbalance-ui and intel-lpmd: `settings cpus LIST` keeps those CPUs free of device IRQs, `settings ban irqs` leaves IRQs alone, `settings sleep` is accepted without effect. Root clients only; never opened while irqbalance runs; read at start (a change needs a restart).";
    kubelet_cpu_manager_state: Option<PathBuf>, read as OptionalPath, Kind::Path(KUBELET_PATH), default Text(""), NextPass,
        "The kubelet's CPU manager checkpoint (its static policy's record, /var/lib/kubelet/cpu_manager_state): device IRQs avoid every CPU it assigned exclusively to a container or pod (its entries, not its shared defaultCpuSet), as isolated CPUs (respect_isolation). Read every pass and watched (its directory, for the kubelet's atomic rename); a damaged or half-written file changes nothing (the last good reading stays) and is said once. For nodes whose container runtime has NRI off. An absolute path without . or .. components, or \"\" for none (the default).";
    nri: bool, read as bool, Kind::Bool, default Flag(false), Start,
        "Be an NRI plugin (90-irqwise) of the container runtime (containerd 1.7+, CRI-O 1.26+): a container whose pod is annotated irq-load-balancing.crio.io (or irq-load-balancing.crio.io/CONTAINER) = \"disable\" keeps device IRQs off its cpuset for its life, through a claim owned by nri:NAMESPACE_POD_CONTAINER. irqwise never adjusts a container. Read at start (a change needs a restart).";
    nri_socket: PathBuf, read as SocketPath, Kind::Path(SOCKET_PATH), default Text(DEFAULT_NRI_SOCKET), Start,
        "The runtime's NRI socket, below --root: an absolute path without . or .. components. Read at start.";
    nri_exclusive_cpus: bool, read as bool, Kind::Bool, default Flag(false), NextPass,
        "With nri: also claim the cpuset of every running container of a Guaranteed pod with whole CPUs whose CPUs no other running container shares (what the CPU manager's static policy and DRA give such a pod), annotated or not.";
}

impl Default for Global {
    fn default() -> Self {
        GlobalLayer::default().finish()
    }
}

/// The defaults of [`GLOBAL_KEYS`], read once by the same reader as a file's values.
fn defaults() -> &'static GlobalLayer {
    static DEFAULTS: OnceLock<GlobalLayer> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        let (text, machine) = (defaults_text(), MachineShape::default());
        read_defaults(&text, &machine).0
    })
}

/// [`defaults_text`] read by the `[global]` reader, with the context's errors and warnings.
fn read_defaults<'a>(text: &'a str, machine: &'a MachineShape) -> (GlobalLayer, FileCtx<'a>) {
    let mut ctx = FileCtx::new(Path::new("(defaults)"), text, machine);
    let (raw, _) = read(text);
    let layer = raw.global.map(|g| read_global(&mut ctx, g)).unwrap_or_default();
    (layer, ctx)
}

/// A `[global]` table setting every key that has a default to it.
pub(super) fn defaults_text() -> String {
    let lines = GLOBAL_KEYS.iter().filter_map(|k| Some(format!("{} = {}\n", k.name, k.default.toml()?)));
    std::iter::once("[global]\n".to_string()).chain(lines).collect()
}

/// Reads one `[global]` table: each known key through its type's reader, each unknown one an
/// error naming the keys there are.
pub(super) fn read_global(ctx: &mut FileCtx<'_>, table: DeTable<'_>) -> GlobalLayer {
    let mut layer = GlobalLayer::default();
    for (key, value) in table {
        match GLOBAL_KEYS.iter().find(|k| k.name == key.get_ref().as_ref()) {
            Some(spec) => layer.read_key(ctx, spec, value),
            None => ctx.unknown_key(&key, GLOBAL_NAMES),
        }
    }
    layer
}

/// The JSON Schema of the `[global]` table (`schemas/config.schema.json` holds it verbatim).
pub fn global_schema() -> Value {
    let properties: Map<String, Value> = GLOBAL_KEYS.iter().map(|k| (k.name.to_owned(), k.schema())).collect();
    json!({
        "type": "object",
        "description": GLOBAL_DOC,
        "properties": properties,
        "additionalProperties": false,
    })
}

/// Every table of a configuration file with the keys its reader accepts (`""` is the top level;
/// `device`, `device.match` and `device.napi` are a `[[device]]` rule's), for the tests that
/// keep `schemas/config.schema.json` and the documentation in step with this reader.
pub fn known_keys() -> [(&'static str, &'static [&'static str]); 6] {
    [
        ("", TOP),
        ("global", GLOBAL_NAMES),
        ("napi", NAPI),
        ("device", RULE),
        ("device.match", MATCH),
        ("device.napi", DEVICE_NAPI),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_duration;

    #[test]
    fn every_default_is_read_without_an_error_or_warning() {
        let (text, machine) = (defaults_text(), MachineShape::default());
        let (_, ctx) = read_defaults(&text, &machine);
        assert!(ctx.errors.is_empty() && ctx.warnings.is_empty(), "{:?} {:?}", ctx.errors, ctx.warnings);
        let unset: Vec<_> = GLOBAL_KEYS.iter().filter(|k| k.default.toml().is_none()).map(|k| k.name).collect();
        assert_eq!(unset, ["metrics_file"], "only metrics_file has a default no value states");
    }

    #[test]
    fn duration_ranges_say_their_bounds() {
        for k in GLOBAL_KEYS {
            if let Kind::Duration(r) = k.kind {
                assert_eq!(parse_duration(r.from), Some(r.min), "{}", k.name);
                assert_eq!(parse_duration(r.to), Some(r.max), "{}", k.name);
            }
        }
    }

    #[test]
    fn the_defaults_are_the_ones_the_code_relies_on() {
        let g = Global::default();
        assert_eq!(g.reconcile_interval, Duration::from_secs(60));
        assert_eq!(g.debounce, Duration::from_millis(100));
        assert_eq!(g.balance_knobs().hold, Duration::from_secs(300));
        assert_eq!(g.nri_socket, PathBuf::from(DEFAULT_NRI_SOCKET));
        assert_eq!((g.metrics_file, g.kubelet_cpu_manager_state), (MetricsFile::Auto, None));
        assert!(g.respect_isolation && g.xps && !g.nri && g.banned_cpus.is_empty());
    }
}
