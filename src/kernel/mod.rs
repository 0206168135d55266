//! The kernel's own rules, by version: its spreading algorithms, reproduced bit for bit
//! (`group_cpus_evenly()`, lib/group_cpus.c, with the three `lib/sort.c` heapsorts it depends
//! on, and the NUMA-hop orders of `cpumask_local_spread()`, lib/cpumask.c,
//! kernel/sched/topology.c), what NIC drivers do to masks across resets ([`nic_resets`]), and
//! what the running kernel does, each fact with its source ([`facts`]: BTF, a driver module's
//! imports, observation, else the version).
//!
//! Pure: `(Topology, ...) → CpuSets`, `(driver, version) → rule`; nothing here touches the
//! filesystem (`crate::probe` reads the facts). Device strategies that use these live in [`crate::strategy`].

pub mod boot_isolation;
pub mod facts;
pub mod group_cpus;
mod group_fill;
pub mod heapsort;
pub mod local_spread;
pub mod nic_resets;

pub use group_cpus::Grouping;
pub use group_cpus::{group_cpus_evenly, GroupAlgorithm, GroupRules};
#[cfg(test)]
pub(crate) use local_spread::spread_blocks_within;
pub use local_spread::spread_order;
pub(crate) use local_spread::{core_ranks, spread_blocks_ranked};

/// A kernel release as far as spreading rules care: `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelVersion {
    pub major: u32,
    pub minor: u32,
}

/// A kernel version string that is not `X.Y[...]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid kernel version {text:?}: expected MAJOR.MINOR, e.g. \"6.1\" or \"6.1.0-57-amd64\"")]
pub struct KernelVersionError {
    pub text: String,
}

impl KernelVersion {
    /// Parses `6.1`, `6.1.0-57-amd64`, `7.0-rc3`.
    pub fn parse(text: &str) -> Result<KernelVersion, KernelVersionError> {
        let err = || KernelVersionError { text: text.into() };
        let t = text.trim();
        let mut parts = t.splitn(3, '.');
        let major = parts.next().ok_or_else(err)?.parse().map_err(|_| err())?;
        let minor_raw = parts.next().ok_or_else(err)?;
        let digits: String = minor_raw.chars().take_while(char::is_ascii_digit).collect();
        let minor = digits.parse().map_err(|_| err())?;
        Ok(KernelVersion { major, minor })
    }
}

impl std::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_releases() {
        assert_eq!(KernelVersion::parse("6.1.0-57-amd64").unwrap(), KernelVersion { major: 6, minor: 1 });
        assert_eq!(KernelVersion::parse("7.0-rc3").unwrap(), KernelVersion { major: 7, minor: 0 });
        assert_eq!(KernelVersion::parse("6.11").unwrap(), KernelVersion { major: 6, minor: 11 });
        assert!(KernelVersion::parse("six").is_err());
        assert!(KernelVersion::parse("6").is_err());
    }
}
