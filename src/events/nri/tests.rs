//! The plugin against recorded frames and a fake runtime on a real Unix socket.

use std::time::Duration;

use tokio::net::UnixListener;

use super::fake::{self, msg, FakeRuntime, F};
use super::frame::{Demux, PLUGIN_CONN};
use super::messages::{self, Call, SUBSCRIBED};
use super::ttrpc::{self, Reassembly};
use super::view::{Change, ContainerState, Cpuset, PodQos, MAX_CONTAINERS};
use super::{start, NriNote, NriProblem, NriSource};
use crate::cpuset::CpuSet;

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// The ttrpc messages of conn 1 in `bytes`, as the plugin reads them.
fn messages_of(bytes: &[u8], cut: usize) -> Vec<ttrpc::Message> {
    let (mut demux, mut conn, mut out) = (Demux::default(), Reassembly::default(), Vec::new());
    for piece in bytes.chunks(cut) {
        demux.push(piece);
        while let Some((c, payload)) = demux.next_frame().unwrap() {
            assert_eq!(c, PLUGIN_CONN);
            conn.push(&payload);
            while let Some(m) = conn.next_message().unwrap() {
                out.push(m);
            }
        }
    }
    out
}

/// containerd 2.1.9's first call, byte by byte from the proto definitions: mux frame on conn 1,
/// ttrpc request on stream 1 (unary: flag remote-closed), Request {service, method, payload
/// ConfigureRequest {runtime_name, runtime_version, registration_timeout 5000, request_timeout
/// 2000}, timeout_nano}.
const CONFIGURE: &[u8] = &[
    0, 0, 0, 1, 0, 0, 0, 0x54, // mux: conn 1, 84 bytes
    0, 0, 0, 0x4a, 0, 0, 0, 1, 1, 1, // ttrpc: 74 bytes, stream 1, request, remote closed
    0x0a, 0x1b, b'n', b'r', b'i', b'.', b'p', b'k', b'g', b'.', b'a', b'p', b'i', b'.', b'v', b'1', b'a', b'l', b'p',
    b'h', b'a', b'1', b'.', b'P', b'l', b'u', b'g', b'i', b'n', // 1 service
    0x12, 0x09, b'C', b'o', b'n', b'f', b'i', b'g', b'u', b'r', b'e', // 2 method
    0x1a, 0x1a, // 3 payload, 26 bytes:
    0x12, 0x0a, b'c', b'o', b'n', b't', b'a', b'i', b'n', b'e', b'r', b'd', // 2 runtime_name
    0x1a, 0x06, b'v', b'2', b'.', b'1', b'.', b'9', // 3 runtime_version
    0x20, 0x88, 0x27, // 4 registration_timeout 5000
    0x28, 0xd0, 0x0f, // 5 request_timeout 2000
    0x20, 0xf0, 0xf7, 0xcb, 0xb9, 0x07, // 4 timeout_nano 1999830000
];

/// The plugin's answer to it: Response {status {}, payload ConfigureResponse {events 0x726}}.
const CONFIGURED: &[u8] = &[
    0, 0, 0, 1, 0, 0, 0, 0x11, // mux: conn 1, 17 bytes
    0, 0, 0, 7, 0, 0, 0, 1, 2, 0, // ttrpc: 7 bytes, stream 1, response
    0x0a, 0x00, // 1 status: OK
    0x12, 0x03, 0x10, 0xa6,
    0x0e, // 2 payload: events = StopPodSandbox, RemovePodSandbox,
          // StartContainer, PostUpdateContainer, StopContainer, RemoveContainer
];

#[test]
fn a_recorded_configure_reads_as_containerds_and_the_subscription_is_the_six_events() {
    for cut in [1, 7, CONFIGURE.len()] {
        let m = messages_of(CONFIGURE, cut);
        assert_eq!((m.len(), m[0].stream, m[0].kind), (1, 1, ttrpc::REQUEST), "cut {cut}");
        let r = ttrpc::decode_request(&m[0].data).unwrap();
        assert_eq!((r.service.as_str(), r.method.as_str()), (messages::PLUGIN_SERVICE, "Configure"));
        let call = messages::call(&r.method, &r.payload, (1, 1)).unwrap();
        assert_eq!(call, Call::Configure { runtime: "containerd".into(), version: "v2.1.9".into() });
    }
    assert_eq!(SUBSCRIBED, 0x726);
    assert_eq!(SUBSCRIBED & !((1 << 11) - 1), 0, "within nri v0.8's valid events");
}

/// A Synchronize as containerd sends it: a guaranteed pod annotated for one container, a
/// burstable pod, their containers with every field containerd fills.
fn synchronize(more: bool) -> Vec<u8> {
    let p1 = fake::pod(
        "pod1",
        "rt",
        "dpdk-0",
        "kubepods-pod6f1c.slice",
        &[
            ("irq-load-balancing.crio.io/app", "disable"),
            ("irq-load-balancing.crio.io", "housekeeping"),
            ("irq-load-balancing.crio.io.other", "disable"),
            ("api-token", "s3cret"),
        ],
    );
    let p2 = fake::pod("pod2", "default", "web", "kubepods-burstable-pod9.slice", &[]);
    let c1 = fake::container("c1", "pod1", "app", 3, "2-3", 2048, 4242);
    let c2 = fake::container("c2", "pod2", "nginx", 3, "", 512, 0);
    let mut fields = vec![F::M(1, p1), F::M(1, p2), F::M(2, c1), F::M(2, c2)];
    if more {
        fields.push(F::V(3, 1));
    }
    msg(&fields)
}

#[test]
fn a_synchronize_keeps_what_the_policy_reads_and_nothing_of_the_secrets() {
    let Call::Synchronize { pods, containers, left_out, more } =
        messages::call("Synchronize", &synchronize(false), (10, 10)).unwrap()
    else {
        panic!("not a Synchronize")
    };
    assert_eq!((pods.len(), containers.len(), left_out, more), (2, 2, 0, false));
    let p = &pods[0];
    assert_eq!(
        (p.id.as_str(), p.namespace.as_str(), p.name.as_str(), p.qos),
        ("pod1", "rt", "dpdk-0", PodQos::Guaranteed)
    );
    assert_eq!(p.irq, [("app".to_string(), "disable".to_string()), (String::new(), "housekeeping".to_string())]);
    assert_eq!(pods[1].qos, PodQos::Burstable);
    let c = &containers[0];
    assert_eq!((c.id.as_str(), c.pod_id.as_str(), c.name.as_str()), ("c1", "pod1", "app"));
    assert_eq!(
        (c.state, &c.cpus, c.shares, c.pid),
        (ContainerState::Running, &Cpuset::Cpus(set("2-3")), Some(2048), Some(4242))
    );
    assert_eq!((&containers[1].cpus, containers[1].pid), (&Cpuset::Unset, None));
    let kept = format!("{pods:?}{containers:?}");
    assert!(!kept.contains("s3cret") && !kept.contains("hunter2") && !kept.contains("api-token"), "{kept}");
    // The room left: the rest is counted.
    let Ok(Call::Synchronize { pods, containers, left_out, .. }) =
        messages::call("Synchronize", &synchronize(true), (1, 0))
    else {
        panic!()
    };
    assert_eq!((pods.len(), containers.len(), left_out), (1, 0, 3));
}

#[test]
fn a_message_longer_than_4096_bytes_comes_as_a_first_frame_of_exactly_4096_and_the_rest() {
    let many: Vec<F<'_>> =
        (0..60).map(|i| F::M(2, fake::container(&format!("c{i:02}"), "pod1", "app", 3, "4-7", 4096, 0))).collect();
    let sync = fake::request(fake::PLUGIN, "Synchronize", msg(&many));
    let bytes = fake::framed(1, 3, 1, 1, &sync);
    assert_eq!(u32::from_be_bytes(bytes[4..8].try_into().unwrap()), 4096, "the first frame");
    assert_eq!(
        u32::from_be_bytes(bytes[8 + 4096 + 4..8 + 4096 + 8].try_into().unwrap()) as usize,
        10 + sync.len() - 4096
    );
    for cut in [4096 + 8, 1000, bytes.len()] {
        let m = messages_of(&bytes, cut);
        assert_eq!(m.len(), 1);
        let r = ttrpc::decode_request(&m[0].data).unwrap();
        let Ok(Call::Synchronize { containers, .. }) = messages::call(&r.method, &r.payload, (10, 100)) else {
            panic!()
        };
        assert_eq!(containers.len(), 60);
        assert!(containers.iter().all(|c| c.cpus == Cpuset::Cpus(set("4-7"))));
    }
}

#[test]
fn events_read_from_state_change_and_from_the_dedicated_calls_alike() {
    let pod = fake::pod("p", "ns", "web", "", &[]);
    let c = fake::container("c", "p", "app", 1, "4-5", 0, 77);
    let by_state = messages::call("StateChange", &fake::state_change(6, pod.clone(), Some(c.clone())), (0, 0)).unwrap();
    let dedicated =
        messages::call("StartContainer", &msg(&[F::M(1, pod.clone()), F::M(2, c.clone())]), (0, 0)).unwrap();
    assert_eq!(by_state, dedicated);
    let Call::Event(Some(Change::Started(p, c))) = by_state else { panic!("{by_state:?}") };
    assert_eq!((p.id.as_str(), c.id.as_str(), c.pid, c.cpus), ("p", "c", Some(77), Cpuset::Cpus(set("4-5"))));
    let stop = messages::call(
        "StateChange",
        &fake::state_change(10, pod.clone(), Some(fake::container("c", "p", "app", 4, "", 0, 0))),
        (0, 0),
    );
    assert_eq!(stop, Ok(Call::Event(Some(Change::Gone("c".into())))));
    let gone = messages::call("RemovePodSandbox", &msg(&[F::M(1, pod.clone())]), (0, 0));
    assert_eq!(gone, Ok(Call::Event(Some(Change::PodGone("p".into())))));
    // Events irqwise does not follow change nothing; methods it does not serve are unknown.
    assert_eq!(messages::call("StateChange", &fake::state_change(1, pod, None), (0, 0)), Ok(Call::Event(None)));
    assert_eq!(messages::call("UpdatePodSandbox", &[], (0, 0)), Ok(Call::Unknown));
    assert_eq!(messages::call("CreateContainer", &[], (0, 0)), Ok(Call::NoChange));
    // An id longer than any Kubernetes name is an error, not an allocation.
    let long = "x".repeat(messages::MAX_NAME + 1);
    let bad = messages::call("StartContainer", &msg(&[F::M(2, fake::container(&long, "p", "a", 3, "", 0, 0))]), (0, 0));
    assert!(matches!(bad, Err(messages::MessageError::Long { .. })), "{bad:?}");
}

/// A socket in a fresh directory, the plugin started on it.
fn plugin() -> (tempfile::TempDir, UnixListener, NriSource) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nri.sock");
    let listener = UnixListener::bind(&path).unwrap();
    (dir, listener, start(path).unwrap())
}

/// Registration, Configure and Synchronize as containerd does them.
async fn handshake(rt: &mut FakeRuntime, sync: Vec<u8>) -> Vec<u8> {
    let register = rt.registration().await;
    let r = ttrpc::decode_request(&register).unwrap();
    assert_eq!((r.service.as_str(), r.method.as_str()), (messages::RUNTIME_SERVICE, "RegisterPlugin"));
    assert_eq!(r.payload, msg(&[F::S(1, "irqwise"), F::S(2, "90")]));
    rt.write(CONFIGURE).await;
    let (stream, kind, data) = rt.read_message(1).await.unwrap();
    let mut answer = super::frame::frames(1, &ttrpc::encode(&ttrpc::Message { stream, kind, flags: 0, data }));
    assert_eq!(answer, CONFIGURED, "the exact answer");
    answer = rt.call("Synchronize", sync).await.unwrap();
    answer
}

async fn next_note(source: &mut NriSource) -> NriNote {
    tokio::time::timeout(Duration::from_secs(30), source.notes.recv()).await.expect("a note").unwrap()
}

async fn view_until(source: &mut NriSource, done: impl Fn(&super::NriView) -> bool) {
    let wait = source.view.wait_for(|v| done(v));
    tokio::time::timeout(Duration::from_secs(30), wait).await.expect("the view").unwrap();
}

#[tokio::test]
async fn the_plugin_registers_syncs_follows_events_and_answers_at_once() {
    let (_dir, listener, mut source) = plugin();
    let mut rt = FakeRuntime::accept(&listener).await;
    let synced = handshake(&mut rt, synchronize(false)).await;
    assert_eq!(ttrpc::decode_response(&synced), Ok((0, String::new(), Vec::new())), "no updates");
    assert_eq!(
        next_note(&mut source).await,
        NriNote::Synchronized { runtime: "containerd".into(), version: "v2.1.9".into(), pods: 2, containers: 2 }
    );
    view_until(&mut source, |v| v.synced && v.containers.len() == 2).await;
    let start = fake::state_change(
        6,
        fake::pod("p3", "ns", "x", "", &[]),
        Some(fake::container("c3", "p3", "x", 1, "6", 0, 0)),
    );
    let ok = rt.call("StateChange", start).await.unwrap();
    assert_eq!(ttrpc::decode_response(&ok), Ok((0, String::new(), Vec::new())));
    view_until(&mut source, |v| v.containers.get("c3").is_some_and(|c| c.state == ContainerState::Running)).await;
    let unknown = rt.call("ValidateContainerAdjustment", Vec::new()).await.unwrap();
    assert_eq!(ttrpc::decode_response(&unknown).unwrap().0, ttrpc::UNIMPLEMENTED);
    let other_service = fake::framed(1, 99, 1, 1, &fake::request("grpc.health.v1.Health", "Check", Vec::new()));
    rt.write(&other_service).await;
    let (_, _, data) = rt.read_message(1).await.unwrap();
    assert_eq!(ttrpc::decode_response(&data).unwrap().0, ttrpc::UNIMPLEMENTED);
    let stop =
        msg(&[F::M(1, fake::pod("p3", "ns", "x", "", &[])), F::M(2, fake::container("c3", "p3", "x", 4, "6", 0, 0))]);
    rt.call("StopContainer", stop).await.unwrap();
    view_until(&mut source, |v| !v.containers.contains_key("c3")).await;
    rt.call("Shutdown", Vec::new()).await.unwrap();
    assert_eq!(next_note(&mut source).await, NriNote::Unavailable(NriProblem::Shutdown));
}

#[tokio::test]
async fn a_split_synchronize_is_answered_more_and_taken_whole_at_its_end() {
    let (_dir, listener, mut source) = plugin();
    let mut rt = FakeRuntime::accept(&listener).await;
    let first = handshake(&mut rt, synchronize(true)).await;
    assert_eq!(ttrpc::decode_response(&first).unwrap().2, [0x10, 0x01], "more = true, no update");
    assert!(!source.view.borrow().synced, "not taken before its end");
    let rest = msg(&[F::M(2, fake::container("c9", "pod1", "app", 3, "8", 0, 0))]);
    let last = rt.call("Synchronize", rest).await.unwrap();
    assert_eq!(ttrpc::decode_response(&last).unwrap().2, Vec::<u8>::new());
    view_until(&mut source, |v| v.synced && v.containers.len() == 3).await;
}

#[tokio::test]
async fn a_runtime_that_restarts_is_connected_again_and_its_new_synchronize_is_the_truth() {
    let (_dir, listener, mut source) = plugin();
    let mut rt = FakeRuntime::accept(&listener).await;
    handshake(&mut rt, synchronize(false)).await;
    assert!(matches!(next_note(&mut source).await, NriNote::Synchronized { .. }));
    drop(rt);
    let note = next_note(&mut source).await;
    assert!(matches!(note, NriNote::Unavailable(NriProblem::Lost(_))), "{note:?}");
    let mut rt = FakeRuntime::accept(&listener).await;
    handshake(&mut rt, msg(&[F::M(2, fake::container("c7", "pod7", "a", 3, "1", 0, 0))])).await;
    assert!(matches!(next_note(&mut source).await, NriNote::Synchronized { containers: 1, .. }));
    view_until(&mut source, |v| v.containers.keys().eq(["c7"])).await;
}

#[tokio::test]
async fn garbage_ends_the_connection_with_one_problem_and_the_plugin_comes_back() {
    let (_dir, listener, mut source) = plugin();
    let cases: [(&str, Vec<u8>); 3] = [
        ("a frame of 4294967295 bytes", vec![0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]),
        (
            "a ttrpc message of 4294967295 bytes",
            vec![0, 0, 0, 1, 0, 0, 0, 10, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1, 1],
        ),
        (
            "Synchronize: not protobuf",
            fake::framed(1, 1, 1, 1, &fake::request(fake::PLUGIN, "Synchronize", vec![0x0b])),
        ),
    ];
    for (want, bytes) in cases {
        let mut rt = FakeRuntime::accept(&listener).await;
        rt.registration().await;
        rt.write(&bytes).await;
        match next_note(&mut source).await {
            NriNote::Unavailable(NriProblem::Garbage(why)) => assert!(why.contains(want), "{why} / {want}"),
            other => panic!("{want}: {other:?}"),
        }
    }
    // And after all that, a runtime that speaks NRI is served.
    let mut rt = FakeRuntime::accept(&listener).await;
    handshake(&mut rt, synchronize(false)).await;
    assert!(matches!(next_note(&mut source).await, NriNote::Synchronized { .. }));
}

#[tokio::test]
async fn a_flood_of_started_containers_is_answered_and_kept_to_the_cap() {
    let (_dir, listener, mut source) = plugin();
    let mut rt = FakeRuntime::accept(&listener).await;
    handshake(&mut rt, msg(&[])).await;
    assert!(matches!(next_note(&mut source).await, NriNote::Synchronized { .. }));
    let flood = MAX_CONTAINERS + 500;
    for i in 0..flood {
        let c = fake::container(&format!("{i:064x}"), "p", &format!("c{i}"), 1, "3", 1024, 0);
        let answer = rt.call("StartContainer", msg(&[F::M(1, fake::pod("p", "ns", "x", "", &[])), F::M(2, c)])).await;
        assert!(answer.is_some(), "event {i} answered");
    }
    assert_eq!(next_note(&mut source).await, NriNote::LeftOut(1));
    view_until(&mut source, |v| v.containers.len() == MAX_CONTAINERS && v.left_out == 500).await;
    assert!(source.notes.try_recv().is_err(), "said once");
}

#[tokio::test]
async fn no_socket_is_one_problem_and_a_refusal_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nri.sock");
    let mut source = start(path.clone()).unwrap();
    assert_eq!(next_note(&mut source).await, NriNote::Unavailable(NriProblem::Absent));
    // A socket file nobody listens on: refused.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let note = loop {
        match next_note(&mut source).await {
            NriNote::Unavailable(NriProblem::Absent) => {}
            other => break other,
        }
    };
    assert!(matches!(&note, NriNote::Unavailable(NriProblem::Refused(why)) if why.contains("refused")), "{note:?}");
    // The runtime answers the registration with an error.
    std::fs::remove_file(&path).unwrap();
    let listener = UnixListener::bind(&path).unwrap();
    let mut rt = FakeRuntime::accept(&listener).await;
    let (stream, _, _) = rt.read_message(2).await.unwrap();
    let status = msg(&[F::V(1, 3), F::S(2, "invalid plugin index")]);
    rt.write(&fake::framed(2, stream, 2, 0, &msg(&[F::M(1, status)]))).await;
    let note = loop {
        match next_note(&mut source).await {
            NriNote::Unavailable(NriProblem::Absent | NriProblem::Refused(_)) => {}
            other => break other,
        }
    };
    assert_eq!(
        note,
        NriNote::Unavailable(NriProblem::Rejected("RegisterPlugin answered code 3: invalid plugin index".into()))
    );
}
