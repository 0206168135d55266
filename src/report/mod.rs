//! Where interrupts actually land (`irqwise report`): two reads of the per-CPU counts in
//! `/proc/interrupts`, their difference per IRQ and CPU, and the locality of those CPUs relative
//! to where the plan puts each IRQ and to its device's node.
//!
//! The counts ([`counts`]), the report ([`landing`]) and its text ([`render`]) are pure; only
//! [`read`] reads, through a [`Root`](crate::sysfs::Root), so a report works on any root and
//! the two reads can be of a file a test rewrites in between.

pub mod counts;
pub mod landing;
pub mod read;
pub mod render;
pub mod softirqs;

use std::path::PathBuf;

pub(crate) use counts::InterruptCounts;
pub(crate) use landing::{build_landing, Landing};
pub(crate) use render::render_table;

use crate::sysfs::SysfsError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum LandingError {
    #[error("{}: missing; a report needs the kernel's per-CPU interrupt counts", .path.display())]
    Missing { path: PathBuf },
    #[error(transparent)]
    Read(#[from] SysfsError),
    #[error("{}: {source}", .path.display())]
    Header { path: PathBuf, source: counts::HeaderError },
}
