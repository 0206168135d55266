//! Reading the kubelet's CPU manager checkpoint (`kubelet_cpu_manager_state`) under a [`Root`]
//! into an isolation source ([`crate::topology::kubelet`] says what is taken from it).
//!
//! Guarantees: the file is read as every host file is (below the root, a capped regular file,
//! never blocking); a damaged or unreadable file changes nothing: the last good reading stays
//! in force (none in a fresh [`KubeletMemory`], as a command has) and a warning names the
//! file, what is wrong and what stays. A missing file is no exclusive CPU (the kubelet writes
//! it when it starts, whatever its policy), and a warning says so.

use std::path::Path;

use super::{io_problem, TopologyWarning};
use crate::sysfs::Root;
use crate::topology::isolation::IsolationSource;
use crate::topology::kubelet::{parse_checkpoint, KubeletCheckpoint};
use crate::topology::Topology;

/// The last good reading of the checkpoint: the daemon's reader keeps it from pass to pass.
#[derive(Debug, Default)]
pub(crate) struct KubeletMemory {
    last_good: Option<KubeletCheckpoint>,
}

/// The source the checkpoint at `path` (an absolute path of the system, read below `root`)
/// makes, its CPUs checked against `topo.possible`, and the warning its reading costs. A good
/// file replaces `memory`; a damaged or unreadable one leaves it and its source stays; a
/// missing one empties it.
pub(crate) fn read_kubelet_state(
    root: &Root,
    path: &Path,
    topo: &Topology,
    memory: &mut KubeletMemory,
) -> (Option<IsolationSource>, Option<TopologyWarning>) {
    let shown = root.path(path).display().to_string();
    let warn = |problem: String, instead: String| TopologyWarning {
        path: root.path(path),
        problem,
        instead,
        transient: false,
    };
    let text = match root.read_small_optional(path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            memory.last_good = None;
            let problem = "does not exist (the kubelet writes it when it starts, whatever its CPU manager policy)";
            return (
                None,
                Some(warn(problem.into(), "no CPU is kept free for the kubelet's exclusive assignments".into())),
            );
        }
        Err(e) => {
            let problem = format!("unreadable ({})", io_problem(&e));
            let kept = kept(memory, &shown);
            return (kept.0, Some(warn(problem, kept.1)));
        }
    };
    match parse_checkpoint(&text, &topo.possible) {
        Ok(checkpoint) => {
            let source = checkpoint.source(&shown);
            memory.last_good = Some(checkpoint);
            (source, None)
        }
        Err(problem) => {
            let kept = kept(memory, &shown);
            (kept.0, Some(warn(problem, kept.1)))
        }
    }
}

/// What stays in force while the file cannot be taken: the last good reading's source, and how
/// the warning says it.
fn kept(memory: &KubeletMemory, shown: &str) -> (Option<IsolationSource>, String) {
    match memory.last_good.as_ref().and_then(|c| c.source(shown)) {
        Some(source) => {
            let said = format!("the last good reading stays: CPUs {} kept free", source.cpus);
            (Some(source), said)
        }
        None if memory.last_good.is_some() => (None, "the last good reading stays: no CPU assigned exclusively".into()),
        None => (None, "no CPU is kept free for the kubelet's exclusive assignments".into()),
    }
}
