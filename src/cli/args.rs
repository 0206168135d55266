//! The command line's definition (clap). Kept in the library so the man page and shell
//! completions are generated from the very same definition.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::choices::SpreadOrder;
use crate::config::LogFormat;

#[derive(Parser)]
#[command(
    name = "irqwise",
    version,
    about = "Places NVMe and NIC interrupts on the CPUs the kernel itself would choose",
    long_about = "irqwise places the interrupts of NVMe drives and network cards on CPUs chosen exactly as \
the kernel's own group_cpus_evenly() and cpumask_local_spread() would choose them, and keeps them there \
as devices, links and CPUs come and go. `irqwise run` is the daemon (normally started by \
irqwise.service); `plan` shows what it would do, `apply` does one pass. Configuration: \
/etc/irqwise/irqwise.toml and conf.d drop-ins."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args)]
pub struct GlobalArgs {
    /// Directory standing for `/`: every sysfs/procfs path is read (and written) below it.
    #[arg(long, global = true, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// Look up the configuration under DIR (DIR/etc/irqwise/irqwise.toml and the conf.d
    /// directories below DIR/usr/lib, DIR/run and DIR/etc) instead of the system's.
    #[arg(long, global = true, value_name = "DIR")]
    pub config: Option<PathBuf>,
    /// Log format of the daemon: journal (when running under systemd), text or json lines.
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormat>,
}

#[derive(Subcommand)]
pub enum Command {
    /// The daemon: place IRQs now, then keep them placed as CPUs and devices come and go.
    Run {
        /// Run the initial pass only, then exit (tests and one-shot journal checks).
        #[arg(long, hide = true)]
        once: bool,
        /// Reload when a configuration file or drop-in changes, as SIGHUP does (for a Kubernetes
        /// ConfigMap mounted at /etc/irqwise/conf.d, whose updates no one signals).
        #[arg(long)]
        watch_config: bool,
    },
    /// What the running daemon last applied and why (reads ROOT/run/irqwise/state.json).
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// What irqwise would do now: every IRQ's current and desired CPUs; writes nothing.
    Plan {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Show only IRQs with something to do (to be written) or a kernel-managed IRQ that is not
        /// where the kernel's spreading predicts.
        #[arg(long)]
        changed: bool,
        /// Exit with status 4 when changes are pending (some IRQ would be written), 0 when none.
        #[arg(long)]
        exit_code: bool,
    },
    /// One pass of discover, plan and apply, then exit.
    Apply {
        /// Show what would be written, write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Where interrupts actually land: reads /proc/interrupts twice, INTERVAL apart, and shows per
    /// device and queue the interrupts per second, the CPUs they fired on, and how near those are
    /// to where irqwise puts each IRQ (desired CPU, same core, cluster, LLC, node, or remote).
    /// Works whether or not irqwise manages the machine.
    Report {
        /// Time between the two reads: a whole number and ms, s, m or h.
        #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_interval)]
        interval: Duration,
        /// Print JSON instead of a table.
        #[arg(long, conflicts_with = "watch")]
        json: bool,
        /// Refresh in place every INTERVAL, like top (on a terminal only); Ctrl-C stops.
        #[arg(long)]
        watch: bool,
        /// Run CMD (with sh -c) between the two reads instead of waiting; the rates then take
        /// INTERVAL as the time between them. For tests that rewrite the counts.
        #[arg(long, hide = true, value_name = "CMD", conflicts_with = "watch")]
        between_samples: Option<String>,
    },
    /// Validate the configuration (against --root's machine): every error and warning of every
    /// file with file:line:column; exit 2 on errors.
    CheckConfig {
        /// Files to check instead of the configured lookup.
        paths: Vec<PathBuf>,
        /// Fail (exit 2) on warnings too, e.g. CPUs or nodes this machine lacks.
        #[arg(long)]
        strict: bool,
        /// Print every error and warning as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Check the configuration, then make the running daemon PID reload it (SIGHUP) and wait
    /// until it has; an invalid configuration fails (exit 2) without signalling. The unit's
    /// ExecReload=.
    Reload {
        /// The daemon's process id (systemd passes $MAINPID).
        #[arg(long)]
        pid: u32,
        /// Seconds to wait for the daemon to record the reload in its state file; 0: do not wait.
        #[arg(long, default_value_t = 60, value_name = "SECONDS")]
        timeout: u64,
    },
    /// Keep device IRQs (and NAPI threads) off CPUS for OWNER, until released or until process PID
    /// exits; waits until the running daemon has moved them (like reload). Writes
    /// ROOT/run/irqwise/claims/OWNER.
    Claim {
        /// The CPUs, as a kernel CPU list (4-7,12).
        #[arg(long, value_name = "LIST")]
        cpus: String,
        /// Who claims them (letters, digits and . _ : @ -): the claim's name.
        #[arg(long, value_name = "NAME")]
        owner: String,
        /// The claim ends when this process exits.
        #[arg(long)]
        pid: Option<u32>,
        /// Seconds to wait for the claims lock, then for the daemon to apply the claim; 0: do not
        /// wait for the daemon (the lock, held by another claim for milliseconds, up to 1 s).
        #[arg(long, default_value_t = 30, value_name = "SECONDS")]
        timeout: u64,
    },
    /// Release OWNER's claim; waits until the running daemon has placed the IRQs again.
    Release {
        #[arg(long, value_name = "NAME")]
        owner: String,
        /// Seconds to wait for the daemon to apply the release; 0: do not wait.
        #[arg(long, default_value_t = 30, value_name = "SECONDS")]
        timeout: u64,
    },
    /// List the claims (ROOT/run/irqwise/claims) and whether the running daemon holds them.
    Claims {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Compare two machines in what decides placement (kernel, topology, isolation, devices)
    /// and in the plans that result, most decisive first; A and B are snapshots (irqwise
    /// snapshot) or - for this host. Exit 0 same, 1 different, 2 error.
    Diff {
        a: PathBuf,
        b: PathBuf,
        /// Print JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Print irqbalance's settings (IRQBALANCE_BANNED_CPUS/_CPULIST, IRQBALANCE_ARGS) as an
    /// irqwise drop-in, with a comment for each setting irqwise has no equivalent for (exit 3
    /// then). FILE defaults to ROOT/etc/default/irqbalance or ROOT/etc/sysconfig/irqbalance.
    ImportIrqbalance {
        /// irqbalance's environment file.
        file: Option<PathBuf>,
    },
    /// Copy the part of /sys and /proc that irqwise reads into OUT, usable as --root OUT.
    Snapshot {
        /// Directory to write the copy into (created if missing; must be empty).
        out: PathBuf,
    },
    /// Show the CPU and NUMA topology as irqwise sees it.
    Topology {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show how the kernel spreads CPUs (NUMA-hop order, or groups for N queues).
    Spread {
        #[command(subcommand)]
        what: SpreadCommand,
    },
    /// Advice for what irqwise cannot do at run time.
    Advise {
        #[command(subcommand)]
        what: AdviseCommand,
    },
}

#[derive(Subcommand)]
pub enum AdviseCommand {
    /// The kernel command line for this machine and configuration (irqaffinity=, isolcpus=managed_irq),
    /// what the running one says against it (exit 1), and how to apply it on this distribution.
    Boot {
        /// Print JSON instead.
        #[arg(long)]
        json: bool,
    },
}

/// The longest `--interval`: a report between two reads an hour apart is already an average
/// over a long time; years are a typo, not a measurement.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// `--interval`: a duration above zero and at most [`MAX_INTERVAL`], written like the config's
/// durations.
fn parse_interval(text: &str) -> Result<Duration, String> {
    crate::config::parse_duration(text)
        .filter(|d| !d.is_zero() && *d <= MAX_INTERVAL)
        .ok_or_else(|| format!("{text:?}: expected a duration from \"1ms\" to \"1h\", e.g. \"500ms\", \"5s\", \"1m\""))
}

#[derive(Subcommand)]
pub enum SpreadCommand {
    /// CPU order by NUMA distance from a node (`cpumask_local_spread()` and friends).
    Numa {
        /// Start node; -1 means "no node" (NUMA_NO_NODE).
        #[arg(long, allow_hyphen_values = true)]
        node: i64,
        #[arg(long, value_enum, default_value_t = SpreadOrder::CoresFirst)]
        order: SpreadOrder,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// CPU groups for N queues, as `group_cpus_evenly()` of a kernel version computes them.
    Groups {
        /// Number of queues (groups) to spread the CPUs into.
        #[arg(long)]
        groups: usize,
        /// Kernel version whose rules to use (e.g. 6.1, 7.0); default: the root's kernel.
        #[arg(long, value_name = "X.Y")]
        kernel: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}
