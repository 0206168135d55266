//! Which kernel's `group_cpus_evenly()` rules a sample is planned with: `--kernel X.Y` where the
//! command line gives one, else the release the root shows (`proc/sys/kernel/osrelease`, read
//! with the topology), else [`FALLBACK_KERNEL`].
//!
//! Pure: the release comes in with the topology; the path only names it in messages.

use std::path::{Path, PathBuf};

use crate::kernel::{GroupRules, KernelVersion, KernelVersionError};
use crate::topology::Topology;

/// The kernel grouping rules when the release is unknown: those of current kernels.
pub(crate) const FALLBACK_KERNEL: KernelVersion = KernelVersion { major: 6, minor: 11 };

/// Where the kernel release is, relative to a root.
pub(crate) const OSRELEASE: &str = "proc/sys/kernel/osrelease";

/// The kernel release could not be turned into grouping rules.
#[derive(Debug, thiserror::Error)]
pub enum KernelRulesError {
    /// `--kernel X.Y` that is not a kernel version (a usage error).
    #[error("--kernel: {0}")]
    Explicit(KernelVersionError),
    /// The root's kernel release is not a kernel version.
    #[error("{}: {source}; pass --kernel X.Y to choose the rules", .path.display())]
    Release { path: PathBuf, source: KernelVersionError },
}

/// The kernel version whose rules apply: `explicit` (`--kernel`), else `topo`'s release (read
/// from `osrelease`), else [`FALLBACK_KERNEL`] (a capture without it). The one choice of `spread
/// groups` and of planning: a malformed release is an error here, which planning turns into a
/// warning and the fallback ([`plan_rules`]).
pub(crate) fn kernel_version(
    topo: &Topology,
    explicit: Option<&str>,
    osrelease: &Path,
) -> Result<KernelVersion, KernelRulesError> {
    if let Some(text) = explicit {
        return KernelVersion::parse(text).map_err(KernelRulesError::Explicit);
    }
    match &topo.kernel {
        Some(release) => KernelVersion::parse(release)
            .map_err(|source| KernelRulesError::Release { path: osrelease.to_path_buf(), source }),
        None => Ok(FALLBACK_KERNEL),
    }
}

/// The grouping rules a plan uses for `topo`, and the warning (naming `osrelease`) when its
/// release is not a kernel version: then the rules of [`FALLBACK_KERNEL`].
pub(crate) fn plan_rules(topo: &Topology, osrelease: &Path) -> (GroupRules, Option<String>) {
    if let Ok(v) = kernel_version(topo, None, osrelease) {
        (GroupRules::for_kernel(v), None)
    } else {
        let release = topo.kernel.as_deref().unwrap_or_default();
        let warning = format!(
            "{}: {release:?} is not a kernel version (expected MAJOR.MINOR...); predicting with the grouping rules of {FALLBACK_KERNEL}",
            osrelease.display()
        );
        (GroupRules::for_kernel(FALLBACK_KERNEL), Some(warning))
    }
}

/// The grouping rules a plan uses for `topo` (its kernel release, else [`FALLBACK_KERNEL`]).
pub fn group_rules(topo: &Topology) -> GroupRules {
    plan_rules(topo, Path::new(OSRELEASE)).0
}
