//! The command line's pass: read a sample of the machine under a root, plan it. The daemon runs
//! the same two steps on the parts it keeps between passes (`daemon::pass`), so a daemon pass and
//! a one-shot `plan` or `apply` on the same machine always agree.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::config::Config;
use crate::plan::from_sample::{plan_sample_refined, PassMemory, PlannedPass};
use crate::plan::refine::Moved;
use crate::sample::reader::{read_sample, ReadError};
use crate::sysfs::Root;
use crate::topology::{memory_file, TopologyMemory};

/// Reads a sample under `root` and plans it with `config`. Queue homes use the running daemon's
/// topology memory of this boot when there is one ([`memory_file`]), so the plan is the
/// daemon's while CPUs are offline; `known_managed` are IRQs a write found kernel-managed.
pub fn plan_pass(root: &Root, config: &Config, known_managed: &BTreeSet<u32>) -> Result<PlannedPass, ReadError> {
    plan_pass_refined(root, config, known_managed, &BTreeMap::new())
}

/// [`plan_pass`] with the queues the running daemon's load refinement keeps away from home
/// (`moved`, from its state file), so the command's plan is the daemon's.
pub fn plan_pass_refined(
    root: &Root,
    config: &Config,
    known_managed: &BTreeSet<u32>,
    moved: &BTreeMap<u32, Moved>,
) -> Result<PlannedPass, ReadError> {
    let mut sample = read_sample(root, Arc::new(config.clone()))?;
    let mut memory = match memory_file::load(root) {
        Ok(m) => m.unwrap_or_default(),
        Err(e) => {
            // Said with the topology's warnings, the memory being what the topology was.
            sample.warnings.topology.push(e.to_string());
            TopologyMemory::default()
        }
    };
    memory.remember(&sample.topology);
    Ok(plan_sample_refined(&sample, PassMemory { topology: Some(&memory), known_managed }, moved))
}
