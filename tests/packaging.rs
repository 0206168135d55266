//! Packaging checks that run in `cargo test`: the systemd unit's settings against what the daemon
//! needs, `systemd-analyze verify`/`security` where systemd is installed, the generated man page
//! and completions against the clap definition, and the package metadata against the tree.
//! (Installing the .deb is `make package-test`.)

#[path = "common/apt.rs"]
mod apt;
#[path = "common/bin.rs"]
mod bin;
#[path = "common/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{CommandFactory, Parser};
use irqwise::cli::args::Cli;

#[allow(dead_code)]
#[path = "../examples/gen-assets.rs"]
mod gen_assets;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The unit file as `section.Key` → every value assigned (in order; an empty assignment kept).
fn unit_settings() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(repo("systemd/irqwise.service")).unwrap();
    let mut section = String::new();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with(['#', ';'])) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or_else(|| panic!("not key=value: {line}"));
        out.entry(format!("{section}.{}", key.trim())).or_default().push(value.trim().to_string());
    }
    out
}

fn one<'a>(s: &'a BTreeMap<String, Vec<String>>, key: &str) -> &'a str {
    match s.get(key).map(Vec::as_slice) {
        Some([v]) => v,
        other => panic!("{key}: expected exactly one value, got {other:?}"),
    }
}

/// Whether `name` runs here, after installing its Debian `package` when it is missing (root).
fn has_tool(name: &str, package: &str) -> bool {
    apt::ensure(&[name], &[package]) && Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn unit_runs_the_daemon_as_a_notify_service_that_reloads_on_hup() {
    let s = unit_settings();
    assert_eq!(one(&s, "Service.Type"), "notify");
    assert_eq!(one(&s, "Service.ExecStart"), "/usr/sbin/irqwise run");
    // systemd 252 (Debian 12) has no notify-reload: the reload is SIGHUP to the main process, sent
    // by irqwise itself (a minimal system has no /bin/kill) after checking the configuration.
    assert_eq!(one(&s, "Service.ExecReload"), "/usr/sbin/irqwise reload --pid $MAINPID");
    assert!(!one(&s, "Service.WatchdogSec").is_empty());
    assert_eq!(one(&s, "Service.Restart"), "on-failure");
    // A configuration error (exit 2) is not retried in a loop.
    assert_eq!(one(&s, "Service.RestartPreventExitStatus"), "2");
    assert_eq!(one(&s, "Unit.Conflicts"), "irqbalance.service");
    assert_eq!(one(&s, "Install.WantedBy"), "multi-user.target");
}

#[test]
fn unit_sandbox_leaves_the_daemon_what_it_needs() {
    let s = unit_settings();
    let get = |k: &str| s.get(k).cloned().unwrap_or_default();
    // uid 0 writes /proc/irq without any capability; xps_cpus takes writes only with
    // CAP_NET_ADMIN (net/core/net-sysfs.c, xps_cpus_store()); moving a NAPI thread (a kernel
    // thread, holding every capability) needs CAP_SYS_NICE (security/commoncap.c,
    // cap_safe_nice()). Those two are the only ones kept.
    assert_eq!(get("Service.CapabilityBoundingSet"), vec!["CAP_NET_ADMIN CAP_SYS_NICE".to_string()]);
    assert!(get("Service.User").is_empty(), "writing /proc/irq needs uid 0");
    let rw: Vec<String> =
        get("Service.ReadWritePaths").iter().flat_map(|v| v.split_whitespace().map(String::from)).collect();
    assert!(rw.contains(&"/proc/irq".to_string()), "ReadWritePaths must include /proc/irq: {rw:?}");
    assert_eq!(one(&s, "Service.ProtectSystem"), "strict");
    // ProtectKernelTunables= mounts /proc/irq read-only (irqbalance #308).
    assert!(
        get("Service.ProtectKernelTunables").iter().all(|v| v == "no"),
        "ProtectKernelTunables breaks /proc/irq writes"
    );
    // Kernel uevents and rtnetlink only reach the host network namespace.
    assert!(get("Service.PrivateNetwork").iter().all(|v| v == "no"), "netlink needs the host network namespace");
    let families = one(&s, "Service.RestrictAddressFamilies");
    assert!(families.split_whitespace().any(|f| f == "AF_NETLINK"), "{families}");
    assert!(families.split_whitespace().any(|f| f == "AF_UNIX"), "sd_notify and journald: {families}");
    // The irqbalance check reads /proc/PID/comm of root processes; /proc/irq and /proc/interrupts
    // are not per-process files.
    assert!(get("Service.ProtectProc").iter().all(|v| v == "default"), "ProtectProc hides irqbalance");
    assert!(get("Service.ProcSubset").iter().all(|v| v == "all"), "ProcSubset=pid hides /proc/irq");
    for key in [
        "NoNewPrivileges",
        "PrivateDevices",
        "PrivateTmp",
        "MemoryDenyWriteExecute",
        "LockPersonality",
        "RestrictRealtime",
        "RestrictNamespaces",
        "RestrictSUIDSGID",
    ] {
        assert_eq!(one(&s, &format!("Service.{key}")), "yes", "{key}");
    }
}

/// A copy of the unit whose ExecStart names an executable that exists here (verify checks it).
fn unit_copy_with_existing_binary(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo("systemd/irqwise.service")).unwrap();
    let path = dir.join("irqwise.service");
    std::fs::write(&path, text.replace("/usr/sbin/irqwise", bin::BIN)).unwrap();
    path
}

#[test]
fn systemd_analyze_verify_prints_nothing_on_stderr() {
    if !has_tool("systemd-analyze", "systemd") {
        skip::skip("systemd_analyze_verify_prints_nothing_on_stderr", "systemd-analyze is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_copy_with_existing_binary(dir.path());
    // --man=no: the man page is not installed here (make package-test verifies with it installed).
    let out = Command::new("systemd-analyze").args(["verify", "--man=no"]).arg(&unit).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "systemd-analyze verify:\n{stderr}");
}

#[test]
fn systemd_analyze_security_exposure_is_at_most_2() {
    if !has_tool("systemd-analyze", "systemd") {
        skip::skip("systemd_analyze_security_exposure_is_at_most_2", "systemd-analyze is not installed");
        return;
    }
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(repo("systemd/irqwise.service"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_else(|| panic!("no exposure line in:\n{text}"));
    let level: f64 =
        line.split(": ").nth(1).and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok()).unwrap();
    assert!(level <= 2.0, "{line}");
}

#[test]
fn unit_exec_start_and_exec_reload_are_commands_the_binary_accepts() {
    let s = unit_settings();
    for key in ["Service.ExecStart", "Service.ExecReload"] {
        let line = one(&s, key).replace("$MAINPID", "4242");
        let args: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(args[0], "/usr/sbin/irqwise", "{key} runs the packaged binary (make install rewrites the prefix)");
        assert!(Cli::try_parse_from(args.iter().map(|a| a.rsplit('/').next().unwrap())).is_ok(), "{key}: {args:?}");
    }
}

/// `RestartPreventExitStatus=` names the status `irqwise run` exits with on a configuration error.
#[test]
fn the_exit_status_the_unit_does_not_restart_on_is_the_configuration_error() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let possible = root.path().join("sys/devices/system/cpu/possible");
    std::fs::create_dir_all(possible.parent().unwrap()).unwrap();
    std::fs::write(&possible, "0-3\n").unwrap();
    let main = cfg.path().join("etc/irqwise/irqwise.toml");
    std::fs::create_dir_all(main.parent().unwrap()).unwrap();
    std::fs::write(&main, "[global]\nbanned_cpus = \"zero\"\n").unwrap();
    let out = bin::irqwise_with(root.path(), cfg.path()).args(["--log-format", "text", "run"]).output().unwrap();
    let status = out.status.code().expect("exited, not killed").to_string();
    assert_eq!(
        one(&unit_settings(), "Service.RestartPreventExitStatus"),
        status,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every command path of the clap definition ("irqwise spread numa"), without `help`.
fn command_paths(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
    for sub in cmd.get_subcommands().filter(|c| c.get_name() != "help") {
        let path = format!("{prefix} {}", sub.get_name());
        out.push(path.clone());
        command_paths(sub, &path, out);
    }
}

#[test]
fn man_page_documents_every_command_and_renders_cleanly() {
    let page = String::from_utf8(gen_assets::man_page().unwrap()).unwrap();
    assert!(page.contains(".TH irqwise 8"), "section 8 title");
    let mut paths = Vec::new();
    command_paths(&Cli::command(), "irqwise", &mut paths);
    assert!(paths.len() >= 5, "{paths:?}");
    for path in &paths {
        let header = format!(".SS \"{}\"", path.replace('-', "\\-"));
        assert!(page.contains(&header), "no subsection {header}");
    }
    if !has_tool("man", "man-db") {
        skip::skip(
            "man_page_documents_every_command_and_renders_cleanly",
            "man is not installed: the page is checked, its rendering is not",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("irqwise.8");
    std::fs::write(&file, &page).unwrap();
    let out = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(&file)
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "man -l: {stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    for path in &paths {
        assert!(text.contains(path.as_str()), "rendered page lacks {path}");
    }
}

#[test]
fn bash_completion_loads_and_knows_the_commands() {
    let dir = tempfile::tempdir().unwrap();
    gen_assets::completions(dir.path()).unwrap();
    for f in ["irqwise.bash", "_irqwise", "irqwise.fish"] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    let bash = dir.path().join("irqwise.bash");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("source '{}' && complete -p irqwise", bash.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let script = std::fs::read_to_string(&bash).unwrap();
    let mut paths = Vec::new();
    command_paths(&Cli::command(), "irqwise", &mut paths);
    for name in paths.iter().filter_map(|p| p.rsplit(' ').next()) {
        assert!(script.contains(name), "bash completion lacks {name}");
    }
}

/// `[package.metadata.<tool>].assets` of Cargo.toml as (source, dest) pairs.
fn assets(tool: &str) -> Vec<(Option<String>, String)> {
    let manifest: toml::Value = toml::from_str(&std::fs::read_to_string(repo("Cargo.toml")).unwrap()).unwrap();
    let list = manifest["package"]["metadata"][tool]["assets"].as_array().unwrap().clone();
    list.iter()
        .map(|a| match a {
            toml::Value::Array(v) => (v[0].as_str().map(String::from), v[1].as_str().unwrap().to_string()),
            t => (t.get("source").and_then(|s| s.as_str()).map(String::from), t["dest"].as_str().unwrap().to_string()),
        })
        .collect()
}

#[test]
fn both_packages_ship_the_same_files_from_sources_that_exist() {
    for tool in ["deb", "generate-rpm"] {
        let list = assets(tool);
        for (source, _) in &list {
            let Some(source) = source else { continue };
            if source.starts_with("target/") {
                continue; // built by cargo or `make assets`
            }
            let (dir, pattern) = source.rsplit_once('/').unwrap_or((".", source));
            let found = std::fs::read_dir(repo(dir)).unwrap().flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                match pattern.split_once('*') {
                    Some((pre, post)) => name.starts_with(pre) && name.ends_with(post),
                    None => name == pattern,
                }
            });
            assert!(found, "{tool}: asset source {source} matches no file");
        }
        let dests: Vec<String> = list.iter().map(|(_, d)| format!("/{}", d.trim_start_matches('/'))).collect();
        for want in [
            "/usr/sbin/",
            "/etc/irqwise/irqwise.toml",
            "/usr/share/man/man8/irqwise.8.gz",
            "/usr/share/bash-completion/completions/irqwise",
            "/usr/share/doc/irqwise/examples/",
            "/usr/lib/systemd/catalog/irqwise.catalog",
        ] {
            assert!(dests.iter().any(|d| d.starts_with(want)), "{tool} ships nothing at {want}: {dests:?}");
        }
    }
}

/// The journal catalog as the real `journalctl` compiles it: `--update-catalog` into a database
/// below a temporary root (it refuses a malformed file), and `--list-catalog` lists every id of
/// `irqwise::daemon::catalog` with its subject.
#[test]
fn journalctl_compiles_the_catalog_and_lists_every_message_id() {
    if !has_tool("journalctl", "systemd") {
        skip::skip("journalctl_compiles_the_catalog_and_lists_every_message_id", "journalctl is not installed");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("usr/lib/systemd/catalog");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(repo("systemd/irqwise.catalog"), dir.join("irqwise.catalog")).unwrap();
    let journalctl =
        |args: &[&str]| Command::new("journalctl").arg("--root").arg(root.path()).args(args).output().unwrap();
    let update = journalctl(&["--update-catalog"]);
    let stderr = String::from_utf8_lossy(&update.stderr);
    assert!(update.status.success() && stderr.trim().is_empty(), "journalctl --update-catalog: {stderr}");
    assert!(root.path().join("var/lib/systemd/catalog/database").is_file());
    let list = journalctl(&["--list-catalog"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    for (name, id) in irqwise::daemon::catalog::ALL {
        let line =
            listed.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("{name} {id} not listed:\n{listed}"));
        assert!(line.starts_with(&format!("{id} irqwise: ")), "{line}");
    }
    // The same check fails for a broken catalog: the test can fail.
    std::fs::write(dir.join("broken.catalog"), "-- 0123\nSubject no colon\n").unwrap();
    assert!(!journalctl(&["--update-catalog"]).status.success());
}

#[test]
fn maintainer_scripts_parse_and_touch_systemd_only_where_it_runs() {
    let scripts = [
        "deb/postinst",
        "deb/prerm",
        "deb/postrm",
        "rpm/post_install.sh",
        "rpm/pre_uninstall.sh",
        "rpm/post_uninstall.sh",
    ];
    for name in scripts {
        let path = repo(&format!("packaging/{name}"));
        let out = Command::new("sh").arg("-n").arg(&path).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&path).unwrap();
        if name.starts_with("deb/") {
            assert!(text.contains("\n#DEBHELPER#\n"), "{name}: cargo-deb inserts the systemd snippets at #DEBHELPER#");
        }
        let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect();
        // `systemctl is-enabled` only reads unit files: it works without a running systemd. A
        // command shown to the user (echo) runs nothing.
        let changes_systemd = |l: &&str| {
            l.contains("systemctl") && !l.contains("systemctl -q is-enabled") && !l.trim_start().starts_with("echo ")
        };
        if code.iter().any(changes_systemd) {
            assert!(
                code.iter().any(|l| l.contains("[ -d /run/systemd/system ]")),
                "{name}: systemctl without the systemd-running guard"
            );
        }
    }
}
