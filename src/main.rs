//! The `irqwise` command line: parse, dispatch, turn errors into messages and exit codes.
//!
//! Exit codes: 0 success, 1 a runtime failure (unreadable system, failed writes), 2 usage or
//! configuration errors.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use irqwise::cli;

#[derive(Parser)]
#[command(
    name = "irqwise",
    version,
    about = "Places NVMe and NIC interrupts on the CPUs the kernel itself would choose"
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct GlobalArgs {
    /// Directory standing for `/`: every sysfs/procfs path is read (and written) below it.
    #[arg(long, global = true, default_value = "/", value_name = "DIR")]
    root: PathBuf,
}

#[derive(Subcommand)]
enum Command {
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
}

#[derive(Subcommand)]
enum SpreadCommand {
    /// CPU order by NUMA distance from a node (`cpumask_local_spread()` and friends).
    Numa {
        /// Start node; -1 means "no node" (NUMA_NO_NODE).
        #[arg(long, allow_hyphen_values = true)]
        node: i64,
        #[arg(long, value_enum, default_value_t = OrderArg::CoresFirst)]
        order: OrderArg,
        #[arg(long)]
        json: bool,
    },
    /// CPU groups for N queues, as `group_cpus_evenly()` of a kernel version computes them.
    Groups {
        #[arg(long)]
        groups: usize,
        /// Kernel version whose rules to use (e.g. 6.1, 7.0); default: the root's kernel.
        #[arg(long, value_name = "X.Y")]
        kernel: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum OrderArg {
    /// `cpumask_local_spread(i, node)` for i = 0..online-1 (v6.3+).
    Kernel,
    /// `for_each_numa_hop_mask()` concatenated.
    Hops,
    /// pre-6.3 `cpumask_local_spread()`.
    Legacy,
    /// NUMA hops, one thread of every core before any sibling (irqwise's NIC default).
    CoresFirst,
}

impl From<OrderArg> for irqwise::strategy::numa_hop::SpreadOrder {
    fn from(o: OrderArg) -> Self {
        use irqwise::strategy::numa_hop::SpreadOrder;
        match o {
            OrderArg::Kernel => SpreadOrder::Kernel,
            OrderArg::Hops => SpreadOrder::Hops,
            OrderArg::Legacy => SpreadOrder::Legacy,
            OrderArg::CoresFirst => SpreadOrder::CoresFirst,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = irqwise::sysfs::Root::new(&cli.global.root);
    let result = match cli.command {
        Command::Topology { json } => cli::topology(&root, json),
        Command::Spread { what: SpreadCommand::Numa { node, order, json } } => {
            cli::spread_numa(&root, node, order.into(), json)
        }
        Command::Spread { what: SpreadCommand::Groups { groups, kernel, json } } => {
            cli::spread_groups(&root, groups, kernel.as_deref(), json)
        }
    };
    match result {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("irqwise: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
