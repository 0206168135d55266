//! Generates the man page `irqwise.8` and the bash, zsh and fish completions from the clap
//! definition (`irqwise::cli::args::Cli`), so they can never disagree with the binary.
//!
//! Usage: `cargo run --example gen-assets -- OUT_DIR` (the Makefile's `assets` target). Writes
//! `OUT_DIR/irqwise.8`, `OUT_DIR/completions/{irqwise.bash,_irqwise,irqwise.fish}`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;
use irqwise::cli::args::Cli;

/// Hand-written sections appended to the generated page: what clap cannot know (files, signals,
/// exit codes, related pages). Plain roff; `\-` is a literal hyphen.
const EXTRA_SECTIONS: &str = r#".SH "RUNNING UNDER SYSTEMD"
The package ships \fBirqwise.service\fR, which runs \fBirqwise run\fR as a \fBType=notify\fR
service with a watchdog. It conflicts with \fBirqbalance.service\fR: both would write the same
affinities.
.TP
\fBsystemctl reload irqwise\fR
sends \fBSIGHUP\fR: the configuration is read again; when it is invalid the last good one is kept
and the error is logged.
.TP
\fBjournalctl \-u irqwise \-o verbose\fR
shows every affinity change with the fields \fBIRQ\fR, \fBIRQ_NAME\fR, \fBDEVICE\fR, \fBDRIVER\fR,
\fBQUEUE\fR, \fBCPUS_OLD\fR, \fBCPUS_NEW\fR, \fBSTRATEGY\fR and \fBREASON\fR. Every kind of entry
has a fixed \fBMESSAGE_ID\fR (\fBjournalctl MESSAGE_ID=8ecce3473d944b3c8c6fde38160ae753\fR: every
change); \fBjournalctl \-x\fR explains each from the catalog.
.TP
\fBmetrics_file\fR
the daemon writes Prometheus metrics for node_exporter's textfile collector after every pass, at
most once per second (default \fI/var/lib/prometheus/node\-exporter/irqwise.prom\fR when that
directory exists). irqwise opens no listening socket.
.SH SIGNALS
.TP
\fBSIGHUP\fR
reload the configuration (\fBirqwise run\fR only).
.TP
\fBSIGTERM\fR, \fBSIGINT\fR
stop cleanly (\fBirqwise run\fR only).
.SH "EXIT STATUS"
.TP
\fB0\fR
success.
.TP
\fB1\fR
a runtime failure: an unreadable system file, failed writes.
.TP
\fB2\fR
a usage or configuration error (\fBcheck\-config\fR prints file:line:column).
.TP
\fB4\fR
changes pending: \fBplan \-\-exit\-code\fR found an IRQ it would write.
.SH FILES
.TP
\fI/etc/irqwise/irqwise.toml\fR
the main configuration file.
.TP
\fI/usr/lib/irqwise/conf.d/*.toml\fR, \fI/run/irqwise/conf.d/*.toml\fR, \fI/etc/irqwise/conf.d/*.toml\fR
drop\-ins, read after the main file in lexical order of file name; a file in \fI/etc\fR hides one
of the same name in \fI/run\fR and \fI/usr/lib\fR.
.TP
\fI/run/irqwise/\fR
the daemon's runtime directory.
.TP
\fI/usr/share/doc/irqwise/examples/\fR
example drop\-ins.
.TP
\fI/proc/irq/N/smp_affinity_list\fR
the files irqwise writes.
.TP
\fI/var/lib/prometheus/node\-exporter/irqwise.prom\fR
the metrics file (setting \fBmetrics_file\fR).
.TP
\fI/usr/lib/systemd/catalog/irqwise.catalog\fR
the explanations of irqwise's journal entries.
.TP
\fI/proc/interrupts\fR
the per\-CPU counts \fBirqwise report\fR reads.
.SH "SEE ALSO"
\fBsystemctl\fR(1), \fBjournalctl\fR(1), \fBsystemd.exec\fR(5), \fBirqbalance\fR(1)
"#;

/// The man page: clap's page for `irqwise`, one subsection per (sub)subcommand with its synopsis
/// and options, then [`EXTRA_SECTIONS`]. Guarantees every subcommand clap knows is documented.
pub fn man_page() -> io::Result<Vec<u8>> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    let top = clap_mangen::Man::new(cmd.clone()).section("8").manual("System Administration");
    top.render_title(&mut out)?;
    top.render_name_section(&mut out)?;
    top.render_synopsis_section(&mut out)?;
    top.render_description_section(&mut out)?;
    top.render_options_section(&mut out)?;
    writeln!(out, ".SH COMMANDS")?;
    let shared: Vec<String> = cmd.get_arguments().map(|a| a.get_id().to_string()).collect();
    for sub in leaf_and_inner_commands(&cmd) {
        render_command(&without(sub, &shared), &mut out)?;
    }
    out.extend_from_slice(EXTRA_SECTIONS.as_bytes());
    top.render_version_section(&mut out)?;
    Ok(out)
}

/// Every subcommand below `cmd`, depth first, parents before children, without clap's `help`.
fn leaf_and_inner_commands(cmd: &clap::Command) -> Vec<clap::Command> {
    let mut all = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        all.push(sub.clone());
        all.extend(leaf_and_inner_commands(sub));
    }
    all
}

/// `sub` with the top-level options (documented once, under OPTIONS) and `--help` hidden.
fn without(sub: clap::Command, shared: &[String]) -> clap::Command {
    let ids: Vec<String> = sub.get_arguments().map(|a| a.get_id().to_string()).collect();
    ids.iter()
        .filter(|id| *id == "help" || shared.contains(id))
        .fold(sub, |cmd, id| cmd.mut_arg(id.as_str(), |a| a.hide(true)))
}

/// One command as a `.SS` subsection: its full name, what it does, its synopsis and options
/// (clap_mangen's `.SH` headers demoted so they nest under COMMANDS).
fn render_command(sub: &clap::Command, out: &mut Vec<u8>) -> io::Result<()> {
    let name = sub.get_bin_name().unwrap_or(sub.get_name()).to_string();
    let man = clap_mangen::Man::new(sub.clone());
    let mut body = Vec::new();
    man.render_synopsis_section(&mut body)?;
    if sub.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut body)?;
    }
    writeln!(out, ".SS \"{}\"", name.replace('-', "\\-"))?;
    if let Some(about) = sub.get_long_about().or(sub.get_about()) {
        writeln!(out, "{}", about.to_string().replace('-', "\\-"))?;
    }
    let body = String::from_utf8_lossy(&body)
        .replace(".SH SYNOPSIS", ".PP\n.B Synopsis:")
        .replace(".SH OPTIONS", ".PP\n.B Options:");
    out.extend_from_slice(body.as_bytes());
    Ok(())
}

/// The three completion scripts, named as the shells look them up.
pub fn completions(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    for (shell, file) in [(Shell::Bash, "irqwise.bash"), (Shell::Zsh, "_irqwise"), (Shell::Fish, "irqwise.fish")] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "irqwise", &mut buf);
        fs::write(dir.join(file), buf)?;
    }
    Ok(())
}

fn run(out: &Path) -> io::Result<()> {
    fs::create_dir_all(out)?;
    fs::write(out.join("irqwise.8"), man_page()?)?;
    completions(&out.join("completions"))
}

fn main() -> ExitCode {
    let out = std::env::args_os().nth(1).map_or_else(|| PathBuf::from("target/assets"), PathBuf::from);
    match run(&out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen-assets: writing {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
