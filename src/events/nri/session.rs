//! One connection to the runtime, from registration to its end.
//!
//! Guarantees:
//! - every request of the runtime is answered as soon as its message is whole: an empty reply
//!   (never an adjustment), Configure with the subscription, a split Synchronize with
//!   `more = true`, a method irqwise does not serve with Unimplemented (code 12, which
//!   nri v0.12 runtimes take to fall back to StateChange);
//! - the view is changed before the reply is written, and nothing else waits in between: no
//!   pass, no file;
//! - what is read is bounded: frames and messages by their caps ([`super::frame`],
//!   [`super::ttrpc`]), pods and containers by [`super::view`]'s;
//! - anything that is not NRI ends the connection with [`NriProblem::Garbage`]; a write that
//!   takes longer than [`WRITE_TIME`] ends it too.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::UnixStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::frame::{frames, Demux, PLUGIN_CONN, RUNTIME_CONN};
use super::messages::{self, Call, PLUGIN_SERVICE, RUNTIME_SERVICE, SUBSCRIBED};
use super::ttrpc::{self, Message, Reassembly, INVALID_ARGUMENT, REMOTE_CLOSED, REQUEST, RESPONSE, UNIMPLEMENTED};
use super::view::{Container, Pod, MAX_CONTAINERS, MAX_PODS};
use super::{io_words, NriNote, NriProblem, NriView, PLUGIN_INDEX, PLUGIN_NAME};

/// How long the runtime has, from the connection, to configure and synchronize the plugin.
pub(crate) const REGISTRATION_TIME: Duration = Duration::from_secs(10);
/// How long one answer may take to write.
const WRITE_TIME: Duration = Duration::from_secs(5);
/// How much is read from the socket at once.
const READ_CHUNK: usize = 64 * 1024;
/// The stream of irqwise's one call (RegisterPlugin): a client's streams are odd.
const REGISTER_STREAM: u32 = 1;

/// A Synchronize split over several messages, gathered until the last.
#[derive(Default)]
struct Gathering {
    pods: Vec<Pod>,
    containers: Vec<Container>,
    left_out: usize,
}

/// The conversation's state.
struct Session<'a> {
    writer: OwnedWriteHalf,
    view: &'a watch::Sender<NriView>,
    notes: &'a mpsc::Sender<NriNote>,
    runtime: (String, String),
    gathering: Gathering,
    synchronized: bool,
}

/// What ends a conversation, or lets it go on.
type Step = Result<(), NriProblem>;

/// Serves `stream` until it ends: why it ended, and whether a Synchronize was taken.
pub(crate) async fn serve(
    stream: UnixStream,
    view: &watch::Sender<NriView>,
    notes: &mpsc::Sender<NriNote>,
) -> (NriProblem, bool) {
    let (mut reader, writer) = stream.into_split();
    let mut s = Session {
        writer,
        view,
        notes,
        runtime: (String::new(), String::new()),
        gathering: Gathering::default(),
        synchronized: false,
    };
    let problem = match s.conversation(&mut reader).await {
        Ok(()) => NriProblem::Lost("the runtime closed the connection".into()),
        Err(p) => p,
    };
    (problem, s.synchronized)
}

impl Session<'_> {
    async fn conversation(&mut self, reader: &mut tokio::net::unix::OwnedReadHalf) -> Step {
        let register = ttrpc::encode_request(
            RUNTIME_SERVICE,
            "RegisterPlugin",
            &messages::register_plugin(PLUGIN_NAME, PLUGIN_INDEX),
        );
        self.send(RUNTIME_CONN, REGISTER_STREAM, REQUEST, REMOTE_CLOSED, &register).await?;
        let deadline = Instant::now() + REGISTRATION_TIME;
        let (mut demux, mut plugin, mut runtime) = (Demux::default(), Reassembly::default(), Reassembly::default());
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            let read = reader.read(&mut chunk);
            let n = if self.synchronized {
                read.await
            } else {
                tokio::time::timeout_at(deadline, read).await.map_err(|_| NriProblem::Silent)?
            };
            let n = n.map_err(|e| self.ended(io_words(&e)))?;
            if n == 0 {
                return Err(self.ended("the runtime closed the connection".into()));
            }
            demux.push(&chunk[..n]);
            while let Some((conn, payload)) = demux.next_frame().map_err(|e| NriProblem::Garbage(e.to_string()))? {
                let conn_messages = match conn {
                    PLUGIN_CONN => &mut plugin,
                    RUNTIME_CONN => &mut runtime,
                    // A conn nobody opened: its frames are dropped, as the runtime's own mux does.
                    _ => continue,
                };
                conn_messages.push(&payload);
                while let Some(m) = conn_messages.next_message().map_err(|e| NriProblem::Garbage(e.to_string()))? {
                    if conn == PLUGIN_CONN {
                        self.request(m).await?;
                    } else {
                        registered(&m)?;
                    }
                }
            }
        }
    }

    /// The problem of a connection that ended: before the first Synchronize the runtime
    /// refused the plugin, after it the runtime went away.
    fn ended(&self, why: String) -> NriProblem {
        if self.synchronized {
            NriProblem::Lost(why)
        } else {
            NriProblem::Rejected(why)
        }
    }

    /// Writes one message on `conn`, cut into frames the runtime's reader takes.
    async fn send(&mut self, conn: u32, stream: u32, kind: u8, flags: u8, data: &[u8]) -> Step {
        let bytes = frames(conn, &ttrpc::encode(&Message { stream, kind, flags, data: data.to_vec() }));
        match tokio::time::timeout(WRITE_TIME, self.writer.write_all(&bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.ended(io_words(&e))),
            Err(_) => Err(self.ended(format!("an answer could not be written within {WRITE_TIME:?}"))),
        }
    }

    /// Answers request `m` with `status` (`None`: OK) and `payload`.
    async fn answer(&mut self, m: &Message, status: Option<(u32, &str)>, payload: &[u8]) -> Step {
        self.send(PLUGIN_CONN, m.stream, RESPONSE, 0, &ttrpc::encode_response(status, payload)).await
    }

    /// One message of the runtime on the plugin's conn.
    async fn request(&mut self, m: Message) -> Step {
        if m.kind != REQUEST {
            return Ok(()); // a stream's data: no method of NRI's streams
        }
        let r = match ttrpc::decode_request(&m.data) {
            Ok(r) => r,
            Err(e) => {
                self.answer(&m, Some((INVALID_ARGUMENT, "not a ttrpc request")), &[]).await?;
                return Err(NriProblem::Garbage(e.to_string()));
            }
        };
        if r.service != PLUGIN_SERVICE {
            return self.answer(&m, Some((UNIMPLEMENTED, "irqwise serves only NRI's Plugin service")), &[]).await;
        }
        let room = (
            MAX_PODS.saturating_sub(self.gathering.pods.len()),
            MAX_CONTAINERS.saturating_sub(self.gathering.containers.len()),
        );
        let call = match messages::call(&r.method, &r.payload, room) {
            Ok(call) => call,
            Err(e) => {
                self.answer(&m, Some((INVALID_ARGUMENT, "unreadable message")), &[]).await?;
                return Err(NriProblem::Garbage(e.to_string()));
            }
        };
        match call {
            Call::Configure { runtime, version } => {
                self.runtime = (runtime, version);
                self.answer(&m, None, &messages::configure_response(SUBSCRIBED)).await
            }
            Call::Synchronize { pods, containers, left_out, more } => {
                self.gathering.pods.extend(pods);
                self.gathering.containers.extend(containers);
                self.gathering.left_out += left_out;
                if !more {
                    self.synchronize();
                }
                self.answer(&m, None, &messages::synchronize_response(more)).await
            }
            Call::Shutdown => {
                self.answer(&m, None, &[]).await?;
                Err(NriProblem::Shutdown)
            }
            Call::Event(change) => {
                if let Some(change) = change {
                    let mut newly_left_out = 0;
                    self.view.send_modify(|v| {
                        let before = v.left_out;
                        v.apply(change);
                        if before == 0 {
                            newly_left_out = v.left_out;
                        }
                    });
                    if newly_left_out > 0 {
                        let _ = self.notes.try_send(NriNote::LeftOut(newly_left_out));
                    }
                }
                self.answer(&m, None, &[]).await
            }
            Call::NoChange => self.answer(&m, None, &[]).await,
            Call::Unknown => self.answer(&m, Some((UNIMPLEMENTED, "not served by irqwise")), &[]).await,
        }
    }

    /// The last message of a Synchronize: the view becomes what it gathered.
    fn synchronize(&mut self) {
        let g = std::mem::take(&mut self.gathering);
        let (pods, containers, left_out) = (g.pods.len(), g.containers.len(), g.left_out);
        self.view.send_modify(|v| v.replace(g.pods, g.containers, g.left_out));
        if !self.synchronized {
            let (runtime, version) = self.runtime.clone();
            let _ = self.notes.try_send(NriNote::Synchronized { runtime, version, pods, containers });
        }
        if left_out > 0 {
            let _ = self.notes.try_send(NriNote::LeftOut(left_out));
        }
        self.synchronized = true;
    }
}

/// The runtime's answer on its conn: only RegisterPlugin's is expected; a refusal ends the
/// connection.
fn registered(m: &Message) -> Step {
    if m.kind != RESPONSE || m.stream != REGISTER_STREAM {
        return Ok(());
    }
    let (code, message, _) = ttrpc::decode_response(&m.data).map_err(|e| NriProblem::Garbage(e.to_string()))?;
    if code != 0 {
        return Err(NriProblem::Rejected(format!(
            "RegisterPlugin answered code {code}: {}",
            crate::text::printable(&message)
        )));
    }
    Ok(())
}
