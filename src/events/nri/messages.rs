//! NRI's messages (`nri.pkg.api.v1alpha1`, containerd/nri `pkg/api/api.proto`, v0.8 and later):
//! the runtime's calls read into what [`super::view`] keeps, and the plugin's few messages
//! written. Field numbers are the proto file's. Pure.
//!
//! Guarantees: a pod's or container's id or name longer than [`MAX_NAME`] bytes makes its
//! message an error (Kubernetes names are at most 253); of the annotations only the IRQ ones
//! are read, each value at most [`super::view::MAX_WORD`] bytes; a Synchronize keeps at most the
//! room it is given and counts the rest.

use super::proto::{fields, put_bytes, put_uint, Value, WireError};
use super::view::{Change, Container, ContainerState, Cpuset, Pod, PodQos, IRQ_ANNOTATION, MAX_IRQ_WORDS, MAX_WORD};
use crate::cpuset::CpuSet;

/// The runtime's service (the plugin calls it on conn 2).
pub(crate) const RUNTIME_SERVICE: &str = "nri.pkg.api.v1alpha1.Runtime";
/// The plugin's service (the runtime calls it on conn 1).
pub(crate) const PLUGIN_SERVICE: &str = "nri.pkg.api.v1alpha1.Plugin";
/// The longest id, name or namespace read.
pub(crate) const MAX_NAME: usize = 512;

/// NRI's event numbers (`enum Event`).
pub(crate) mod event {
    pub const STOP_POD_SANDBOX: u32 = 2;
    pub const REMOVE_POD_SANDBOX: u32 = 3;
    pub const START_CONTAINER: u32 = 6;
    pub const POST_UPDATE_CONTAINER: u32 = 9;
    pub const STOP_CONTAINER: u32 = 10;
    pub const REMOVE_CONTAINER: u32 = 11;
}

/// The events irqwise subscribes to: a container's start, its resources' update, its stop and
/// removal, its pod's stop and removal (bit `e - 1` for event `e`).
pub(crate) const SUBSCRIBED: u32 = 1 << (event::STOP_POD_SANDBOX - 1)
    | 1 << (event::REMOVE_POD_SANDBOX - 1)
    | 1 << (event::START_CONTAINER - 1)
    | 1 << (event::POST_UPDATE_CONTAINER - 1)
    | 1 << (event::STOP_CONTAINER - 1)
    | 1 << (event::REMOVE_CONTAINER - 1);

/// Why a call's payload was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MessageError {
    #[error("{method}: not protobuf: {source}")]
    Wire { method: String, source: WireError },
    #[error("{method}: a {what} of {len} bytes (at most {MAX_NAME})")]
    Long { method: String, what: &'static str, len: usize },
}

/// One call of the runtime, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call {
    Configure {
        runtime: String,
        version: String,
    },
    /// One message of a Synchronize (`more`: others follow).
    Synchronize {
        pods: Vec<Pod>,
        containers: Vec<Container>,
        left_out: usize,
        more: bool,
    },
    Shutdown,
    /// An event the view takes (`None`: one it does not follow).
    Event(Option<Change>),
    /// A call answered with an empty reply and no adjustment (CreateContainer, UpdateContainer).
    NoChange,
    /// Not a method of the plugin: answered Unimplemented.
    Unknown,
}

/// A decoding error of `method` from a protobuf error.
type Fail<'m> = &'m dyn Fn(WireError) -> MessageError;

/// A string field, at most [`MAX_NAME`] bytes.
fn name(v: Value<'_>, what: &'static str, method: &str) -> Result<String, MessageError> {
    let b = v.bytes();
    if b.len() > MAX_NAME {
        return Err(MessageError::Long { method: method.to_string(), what, len: b.len() });
    }
    Ok(String::from_utf8_lossy(b).into_owned())
}

/// A map entry `{1 key, 2 value}`.
fn entry<'a>(bytes: &'a [u8], fail: Fail<'_>) -> Result<(&'a [u8], &'a [u8]), MessageError> {
    let (mut k, mut v): (&[u8], &[u8]) = (&[], &[]);
    for f in fields(bytes) {
        match f.map_err(fail)? {
            (1, x) => k = x.bytes(),
            (2, x) => v = x.bytes(),
            _ => {}
        }
    }
    Ok((k, v))
}

/// The embedded message of field `path[0]`, then of `path[1]` in it, ...: the last one's bytes.
fn nested<'a>(bytes: &'a [u8], path: &[u32], fail: Fail<'_>) -> Result<Option<&'a [u8]>, MessageError> {
    let Some((&first, rest)) = path.split_first() else { return Ok(Some(bytes)) };
    let mut found = None;
    for f in fields(bytes) {
        let (n, v) = f.map_err(fail)?;
        if n == first {
            found = Some(v.bytes());
        }
    }
    match found {
        Some(b) => nested(b, rest, fail),
        None => Ok(None),
    }
}

/// `PodSandbox {1 id, 2 name, 4 namespace, 6 annotations, 8 linux {3 cgroup_parent}}`.
pub(crate) fn pod(bytes: &[u8], method: &str) -> Result<Pod, MessageError> {
    let fail = |source| MessageError::Wire { method: method.to_string(), source };
    let mut p = Pod {
        id: String::new(),
        name: String::new(),
        namespace: String::new(),
        qos: PodQos::Guaranteed,
        irq: Vec::new(),
    };
    for f in fields(bytes) {
        match f.map_err(fail)? {
            (1, v) => p.id = name(v, "pod id", method)?,
            (2, v) => p.name = name(v, "pod name", method)?,
            (4, v) => p.namespace = name(v, "namespace", method)?,
            (6, v) => {
                let (key, value) = entry(v.bytes(), &fail)?;
                let Some(rest) = key.strip_prefix(IRQ_ANNOTATION.as_bytes()) else { continue };
                let target = match rest.strip_prefix(b"/") {
                    Some(container) => name(Value::Bytes(container), "container name", method)?,
                    None if rest.is_empty() => String::new(),
                    None => continue,
                };
                if p.irq.len() < MAX_IRQ_WORDS {
                    let word = if value.len() <= MAX_WORD {
                        String::from_utf8_lossy(value).into_owned()
                    } else {
                        String::new()
                    };
                    p.irq.push((target, word));
                }
            }
            (8, v) => {
                if let Some(parent) = nested(v.bytes(), &[3], &fail)? {
                    p.qos = PodQos::of_cgroup_parent(&String::from_utf8_lossy(parent));
                }
            }
            _ => {}
        }
    }
    Ok(p)
}

/// `Container {1 id, 2 pod_sandbox_id, 3 name, 4 state, 11 linux {3 resources {2 cpu {1 shares
/// {1 value}, 6 cpus}}}, 12 pid}`.
pub(crate) fn container(bytes: &[u8], method: &str) -> Result<Container, MessageError> {
    let fail = |source| MessageError::Wire { method: method.to_string(), source };
    let mut c = Container {
        id: String::new(),
        pod_id: String::new(),
        name: String::new(),
        state: ContainerState::Unknown,
        cpus: Cpuset::Unset,
        shares: None,
        pid: None,
    };
    for f in fields(bytes) {
        match f.map_err(fail)? {
            (1, v) => c.id = name(v, "container id", method)?,
            (2, v) => c.pod_id = name(v, "pod id", method)?,
            (3, v) => c.name = name(v, "container name", method)?,
            (4, v) => c.state = ContainerState::of(v.varint()),
            (11, v) => {
                let Some(cpu) = nested(v.bytes(), &[3, 2], &fail)? else { continue };
                for g in fields(cpu) {
                    match g.map_err(fail)? {
                        (1, shares) => c.shares = Some(first_varint(shares.bytes())),
                        (6, cpus) => c.cpus = cpuset(cpus.bytes()),
                        _ => {}
                    }
                }
            }
            (12, v) => c.pid = u32::try_from(v.varint()).ok().filter(|p| *p > 0),
            _ => {}
        }
    }
    Ok(c)
}

/// Field 1 of an `OptionalUInt64` as a varint (0 when absent).
fn first_varint(bytes: &[u8]) -> u64 {
    fields(bytes).flatten().find(|(n, _)| *n == 1).map_or(0, |(_, v)| v.varint())
}

/// A cpuset string: unset when empty.
fn cpuset(bytes: &[u8]) -> Cpuset {
    let text = String::from_utf8_lossy(bytes);
    if text.trim().is_empty() {
        return Cpuset::Unset;
    }
    CpuSet::parse_list(text.trim()).map_or(Cpuset::Unreadable, Cpuset::Cpus)
}

/// `{pod_field pod, container_field container}` of an event's message.
fn pod_and_container(
    bytes: &[u8],
    method: &str,
    pod_field: u32,
) -> Result<(Option<Pod>, Option<Container>), MessageError> {
    let fail = |source| MessageError::Wire { method: method.to_string(), source };
    let (mut p, mut c) = (None, None);
    for f in fields(bytes) {
        match f.map_err(fail)? {
            (n, v) if n == pod_field => p = Some(pod(v.bytes(), method)?),
            (n, v) if n == pod_field + 1 => c = Some(container(v.bytes(), method)?),
            _ => {}
        }
    }
    Ok((p, c))
}

/// What event `number` with its pod and container changes in the view.
fn change(number: u32, pod: Option<Pod>, container: Option<Container>) -> Option<Change> {
    let pod_of = |c: &Container| Pod {
        id: c.pod_id.clone(),
        name: String::new(),
        namespace: String::new(),
        qos: PodQos::Guaranteed,
        irq: Vec::new(),
    };
    match number {
        event::START_CONTAINER | event::POST_UPDATE_CONTAINER => {
            let c = container?;
            let p = pod.unwrap_or_else(|| pod_of(&c));
            Some(if number == event::START_CONTAINER { Change::Started(p, c) } else { Change::Updated(p, c) })
        }
        event::STOP_CONTAINER | event::REMOVE_CONTAINER => container.map(|c| Change::Gone(c.id)),
        event::STOP_POD_SANDBOX | event::REMOVE_POD_SANDBOX => pod.map(|p| Change::PodGone(p.id)),
        _ => None,
    }
}

/// Reads a call of the plugin's service. `room` is how many pods and containers a
/// Synchronize may still bring (the rest are counted, not kept).
pub(crate) fn call(method: &str, payload: &[u8], room: (usize, usize)) -> Result<Call, MessageError> {
    let fail = |source| MessageError::Wire { method: method.to_string(), source };
    let dedicated = |number| -> Result<Call, MessageError> {
        let (p, c) = pod_and_container(payload, method, 1)?;
        Ok(Call::Event(change(number, p, c)))
    };
    match method {
        "Configure" => {
            let (mut runtime, mut version) = (String::new(), String::new());
            for f in fields(payload) {
                match f.map_err(fail)? {
                    (2, v) => runtime = name(v, "runtime name", method)?,
                    (3, v) => version = name(v, "runtime version", method)?,
                    _ => {}
                }
            }
            Ok(Call::Configure { runtime, version })
        }
        "Synchronize" => {
            let (mut pods, mut containers, mut left_out, mut more) = (Vec::new(), Vec::new(), 0, false);
            for f in fields(payload) {
                match f.map_err(fail)? {
                    (1, v) if pods.len() < room.0 => pods.push(pod(v.bytes(), method)?),
                    (2, v) if containers.len() < room.1 => containers.push(container(v.bytes(), method)?),
                    (1 | 2, _) => left_out += 1,
                    (3, v) => more = v.varint() != 0,
                    _ => {}
                }
            }
            Ok(Call::Synchronize { pods, containers, left_out, more })
        }
        "Shutdown" => Ok(Call::Shutdown),
        "StateChange" => {
            let mut number = 0;
            for f in fields(payload) {
                if let (1, v) = f.map_err(fail)? {
                    number = u32::try_from(v.varint()).unwrap_or(0);
                }
            }
            let (p, c) = pod_and_container(payload, method, 2)?;
            Ok(Call::Event(change(number, p, c)))
        }
        "StartContainer" => dedicated(event::START_CONTAINER),
        "PostUpdateContainer" => dedicated(event::POST_UPDATE_CONTAINER),
        "StopContainer" => dedicated(event::STOP_CONTAINER),
        "RemoveContainer" => dedicated(event::REMOVE_CONTAINER),
        "StopPodSandbox" => dedicated(event::STOP_POD_SANDBOX),
        "RemovePodSandbox" => dedicated(event::REMOVE_POD_SANDBOX),
        "CreateContainer" | "UpdateContainer" => Ok(Call::NoChange),
        _ => Ok(Call::Unknown),
    }
}

/// `RegisterPluginRequest {1 plugin_name, 2 plugin_idx}`.
pub(crate) fn register_plugin(name: &str, index: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, name.as_bytes());
    put_bytes(&mut out, 2, index.as_bytes());
    out
}

/// `ConfigureResponse {2 events}`.
pub(crate) fn configure_response(events: u32) -> Vec<u8> {
    let mut out = Vec::new();
    put_uint(&mut out, 2, u64::from(events));
    out
}

/// `SynchronizeResponse {1 update (none), 2 more}`.
pub(crate) fn synchronize_response(more: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if more {
        put_uint(&mut out, 2, 1);
    }
    out
}
