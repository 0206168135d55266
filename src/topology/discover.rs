//! Reading a [`Topology`] from sysfs/procfs under a [`Root`].

use super::{Topology, TopologyError};
use crate::sysfs::Root;

pub(super) fn discover(root: &Root) -> Result<Topology, TopologyError> {
    let _ = root;
    todo!("topology discovery")
}
