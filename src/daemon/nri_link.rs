//! The NRI plugin (`nri = true`) as the daemon holds it: the connection, what was said of it and
//! the claims written for it; [`super::nri`] acts on its events.

use std::collections::{BTreeMap, BTreeSet};

use super::nri_claims::Why;
use super::once::SaidOnce;
use crate::events::nri::{NriNote, NriProblem, NriSource};

/// The plugin while it runs, and what was said of it.
#[derive(Default)]
pub(crate) struct Nri {
    pub source: Option<NriSource>,
    /// The socket, as a path of the system (for lines).
    pub socket: String,
    pub link: SaidOnce<NriProblem>,
    pub synchronized_once: bool,
    pub left_out: SaidOnce<()>,
    /// The annotated containers not claimed for, by id, with the reason said (said once while
    /// it lasts).
    pub skipped: BTreeMap<String, String>,
    /// The claims written, by owner: who and why (for the release's line).
    pub held: BTreeMap<String, (String, Why)>,
    /// Containers' processes seen alive: one no longer alive has ended, and its claim is not
    /// written again (without its pid) when the view changes before the runtime says so.
    pub seen_alive: BTreeSet<u32>,
}

impl std::fmt::Debug for Nri {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nri").field("socket", &self.socket).field("held", &self.held).finish_non_exhaustive()
    }
}

/// What the plugin has for the event loop.
pub(crate) enum NriEvent {
    Note(NriNote),
    /// Its view changed.
    Changed,
}

/// The plugin's next note or change of view; never, when it does not run.
pub(crate) async fn next(source: &mut Option<NriSource>) -> NriEvent {
    let Some(s) = source else { return std::future::pending().await };
    tokio::select! {
        Some(note) = s.notes.recv() => NriEvent::Note(note),
        Ok(()) = s.view.changed() => NriEvent::Changed,
        else => std::future::pending().await,
    }
}
