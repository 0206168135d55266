//! Configuration: every validation error, located at `file:line:column` with the value and what
//! was expected, and the warnings for rules that cannot act on this machine.

#[path = "common/config_text.rs"]
mod config_text;

use config_text::*;
use irqwise::config::{load, parse_files, ConfigError, ConfigPaths, ConfigWarning, MetricsFile, SourceFile};

// ---------------------------------------------------------------- every error

#[test]
fn error_unknown_key_in_each_table() {
    assert_one_error("[global]\nbanned = \"1\"\n", 2, 1, &["unknown field `banned`", "banned_cpus"]);
    assert_one_error("[[device]]\nmatch = { pci = \"*\" }\ncpu = \"1\"\n", 3, 1, &["unknown field `cpu`", "`cpus`"]);
    assert_one_error("[[device]]\nmatch = { bus = \"pci\" }\nnode = 0\n", 2, 11, &["unknown field `bus`", "`pci`"]);
    assert_one_error("[globals]\n", 1, 2, &["unknown field `globals`", "`global`"]);
    // A setting written after a [device.match] header lands in the match table: say so.
    let msg = assert_one_error(
        "[[device]]\n[device.match]\nclass = \"nic\"\nnode = 1\n",
        4,
        1,
        &["unknown field `node`", "[device.match] header"],
    );
    assert!(msg.contains("match = { ... }"), "{msg}");
}

#[test]
fn error_wrong_types_and_names() {
    assert_one_error("[global]\nrespect_isolation = \"yes\"\n", 2, 21, &["\"yes\"", "expected a boolean"]);
    assert_one_error("[global]\nbanned_cpus = [1, 2]\n", 2, 15, &["invalid type", "expected a string"]);
    assert_one_error("[global]\nlog_format = \"xml\"\n", 2, 14, &["`xml`", "`journal`", "`text`", "`json`"]);
    assert_one_error(
        "[[device]]\nmatch = { pci = \"*\" }\nstrategy = \"spread\"\n",
        3,
        12,
        &["`spread`", "`numa-hop`", "`cluster-group`", "`pin`", "`leave`"],
    );
    assert_one_error("[[device]]\nmatch = { pci = \"*\" }\norder = \"random\"\n", 3, 9, &["`random`", "`cores-first`"]);
    assert_one_error(
        "[[device]]\nmatch = { class = \"gpu\" }\nnode = 0\n",
        2,
        19,
        &["`gpu`", "`nic`", "`nvme`", "`other`"],
    );
    assert_one_error("[[device]]\nmatch = { pci = \"*\" }\nnode = -1\n", 3, 8, &["-1", "non-negative integer"]);
    assert_one_error("[[device]]\nmatch = { pci = \"*\" }\nqueues_per_cpu = 1.5\n", 3, 18, &["1.5", "integer"]);
}

#[test]
fn error_toml_syntax() {
    assert_one_error("[global]\nbanned_cpus = \"1\ndebounce = \"1s\"\n", 2, 17, &["invalid basic string"]);
}

#[test]
fn error_bad_cpu_list_points_at_the_token() {
    // "x" is character 5 of the value, which starts after the quote at column 15.
    assert_one_error("[global]\nbanned_cpus = \"1-3,x\"\n", 2, 20, &["banned_cpus", "\"1-3,x\"", "\"x\"", "expected"]);
    assert_one_error("[[device]]\nmatch = { pci = \"*\" }\ncpus = \"7-2\"\n", 3, 9, &["cpus", "\"7-2\"", "backwards"]);
}

#[test]
fn cpus_beyond_the_machine_are_warnings_and_cut_to_it() {
    for key in ["cpus", "exclude_cpus", "admin_cpus"] {
        let text = format!("[[device]]\nmatch = {{ pci = \"*\" }}\n{key} = \"60-70\"\n");
        let (path, errors) = errors_of(&text);
        assert!(errors.is_empty(), "{errors:#?}");
        let r = parse_files(&[SourceFile { path: path.clone().into(), text }], &possible());
        assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
        let w = r.warnings[0].to_string();
        assert!(w.starts_with(&format!("{path}:3:{}: warning: ", key.len() + 4)), "{w}");
        for needle in [key, "\"60-70\"", "64-70", "possible CPUs: 0-63", "60-63 on this machine"] {
            assert!(w.contains(needle), "{w} lacks {needle}");
        }
        let s = &r.config.unwrap().rules[0].settings;
        let got = match key {
            "cpus" => s.cpus.clone(),
            "exclude_cpus" => s.exclude_cpus.clone(),
            _ => s.admin_cpus.clone(),
        };
        assert_eq!(got, Some(cpus("60-63")), "{key} cut to the machine");
    }
    let r = parse_files(
        &[SourceFile { path: "t.toml".into(), text: "[global]\nbanned_cpus = \"64\"\n".into() }],
        &possible(),
    );
    assert!(r.errors.is_empty() && r.warnings[0].to_string().contains("no CPU of this machine is banned"));
    // A list naming none of the machine's CPUs voids its setting, and says how.
    let text = "[[device]]\nmatch = { pci = \"*\" }\ncpus = \"100-110\"\n";
    let r = parse_files(&[SourceFile { path: "t.toml".into(), text: text.into() }], &possible());
    let s = &r.config.unwrap().rules[0].settings;
    assert_eq!(s.cpus, None);
    assert!(s.voided[0].1.contains("names no CPU of this machine"), "{:?}", s.voided);
}

#[test]
fn error_bad_durations() {
    assert_one_error("[global]\ndebounce = \"100\"\n", 2, 12, &["debounce", "\"100\"", "ms, s, m or h"]);
    assert_one_error("[global]\nreconcile_interval = \"1.5s\"\n", 2, 22, &["reconcile_interval", "\"1.5s\""]);
    assert_one_error("[global]\nreconcile_interval = \"0s\"\n", 2, 22, &["\"0s\"", "from \"1s\""]);
    // Bounded by what makes sense: a pass every millisecond burns a CPU, a 20 s debounce is slower
    // than irqbalance.
    assert_one_error("[global]\nreconcile_interval = \"1ms\"\n", 2, 22, &["\"1ms\"", "from \"1s\" to \"24h\""]);
    assert_one_error("[global]\ndebounce = \"20s\"\n", 2, 12, &["\"20s\"", "to \"10s\""]);
    // A zero debounce is legal: re-plan at once.
    let (_, errors) = errors_of("[global]\ndebounce = \"0ms\"\n");
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn error_pin_without_cpus() {
    assert_one_error(
        "[[device]]\nmatch = { driver = \"ice\" }\nstrategy = \"pin\"\n",
        3,
        12,
        &["strategy = \"pin\"", "expected `cpus"],
    );
}

#[test]
fn error_allowed_set_empty_after_exclusions() {
    assert_one_error(
        "[[device]]\nmatch = { pci = \"*\" }\ncpus = \"2-3\"\nexclude_cpus = \"0-7\"\n",
        3,
        8,
        &["cpus = \"2-3\"", "0-7", "at least one allowed CPU"],
    );
    // The global ban, from another file, counts too; the error points at the rule's cpus.
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), MAIN, "[global]\nbanned_cpus = \"0-3\"\n");
    let rule = put(dir.path(), &format!("{ETC}/50.toml"), "[[device]]\nmatch = { pci = \"*\" }\ncpus = \"1,3\"\n");
    let errors = load(&ConfigPaths::under(dir.path()), &possible()).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let msg = errors[0].to_string();
    assert!(msg.starts_with(&format!("{}:3:8: ", rule.display())), "{msg}");
    assert!(msg.contains("\"1,3\"") && msg.contains("0-3"), "{msg}");
}

#[test]
fn banning_every_cpu_of_the_machine_is_a_warning_and_void_here() {
    let text = "[global]\nbanned_cpus = \"0-63\"\n";
    let r = parse_files(&[SourceFile { path: "t.toml".into(), text: text.into() }], &possible());
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let w = r.warnings[0].to_string();
    assert!(w.starts_with("t.toml:2:15: warning: ") && w.contains("every CPU of this machine"), "{w}");
    assert!(r.config.unwrap().global.banned_cpus.is_empty());
}

#[test]
fn error_queues_per_cpu_zero() {
    assert_one_error(
        "[[device]]\nmatch = { class = \"nic\" }\nqueues_per_cpu = 0\n",
        3,
        18,
        &["queues_per_cpu = 0", "at least 1"],
    );
}

#[test]
fn error_empty_or_missing_match() {
    assert_one_error("[[device]]\nmatch = {}\nnode = 1\n", 2, 9, &["empty match table", "pci = \"*\""]);
    assert_one_error("# x\n[[device]]\nnode = 1\n", 2, 1, &["no match table", "expected at least one of"]);
    assert_one_error("[[device]]\nmatch = { property = {} }\nnode = 1\n", 2, 9, &["empty match table"]);
}

#[test]
fn error_bad_glob() {
    assert_one_error(
        "[[device]]\nmatch = { interface = \"eth[0-3\" }\nnode = 1\n",
        2,
        27,
        &["match.interface", "\"eth[0-3\"", "no closing `]`"],
    );
    assert_one_error(
        "[[device]]\nmatch = { property.ID_NET_NAME = \"[z-a]\" }\nnode = 1\n",
        2,
        36,
        &["match.property.ID_NET_NAME", "\"[z-a]\"", "backwards"],
    );
}

#[test]
fn error_admin_cpus_excluded() {
    assert_one_error(
        "[[device]]\nmatch = { class = \"nvme\" }\nexclude_cpus = \"0-1\"\nadmin_cpus = \"1-2\"\n",
        4,
        14,
        &["admin_cpus = \"1-2\"", "contains 1", "outside exclude_cpus"],
    );
}

#[test]
fn unreadable_main_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(MAIN)).unwrap(); // a directory where the file should be
    let errors = load(&ConfigPaths::under(dir.path()), &possible()).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(matches!(&errors[0], ConfigError::Read { path, .. } if path == &dir.path().join(MAIN)));
}

#[test]
fn all_errors_of_all_files_are_collected() {
    let dir = tempfile::tempdir().unwrap();
    let main = put(dir.path(), MAIN, "[global]\nbanned_cpus = \"x\"\n");
    let a = put(dir.path(), &format!("{USR}/10-a.toml"), "[global]\nfoo = 1\n");
    let b = put(
        dir.path(),
        &format!("{ETC}/20-b.toml"),
        "[[device]]\nmatch = {}\nqueues_per_cpu = 0\n\n[[device]]\nmatch = { pci = \"*\" }\nstrategy = \"pin\"\n",
    );
    let errors = load(&ConfigPaths::under(dir.path()), &possible()).unwrap_err();
    let got: Vec<String> = errors.iter().map(|e| e.location().unwrap().to_string()).collect();
    let want = vec![
        format!("{}:2:16", main.display()),
        format!("{}:2:1", a.display()),
        format!("{}:2:9", b.display()),
        format!("{}:3:18", b.display()),
        format!("{}:7:12", b.display()),
    ];
    assert_eq!(got, want, "{errors:#?}");
}

#[test]
fn warnings_for_rules_that_cannot_act() {
    let r = parse_files(
        &[SourceFile {
            path: "w.toml".into(),
            text: "[[device]]\nmatch = { pci = \"*\" }\n\n[[device]]\nmatch = { class = \"nvme\" }\nqueues_per_cpu = 2\n\n\
                   [[device]]\nmatch = { driver = \"ice\" }\nstrategy = \"leave\"\ncpus = \"1\"\n"
                .into(),
        }],
        &possible(),
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let w: Vec<String> = r.warnings.iter().map(std::string::ToString::to_string).collect();
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(matches!(&r.warnings[0], ConfigWarning::RuleSetsNothing { at } if at.line == 1));
    assert!(w[1].starts_with("w.toml:6:18: warning: queues_per_cpu"), "{}", w[1]);
    assert!(w[2].starts_with("w.toml:10:12: warning: strategy"), "{}", w[2]);
    assert!(r.config.is_some(), "warnings do not make the config unusable");
}

#[test]
fn metrics_file_must_be_an_absolute_plain_path_of_a_prom_file() {
    for bad in ["relative/m.prom", "/var/lib/m.txt", "/var/lib/.prom", "/var/./lib/m.prom", "/var/lib/../m.prom"] {
        assert_one_error(&format!("[global]\nmetrics_file = \"{bad}\"\n"), 2, 16, &["metrics_file", bad]);
    }
    let at = |text: &str| parse_ok(&format!("[global]\nmetrics_file = \"{text}\"\n")).global.metrics_file;
    assert_eq!(
        at("/var/lib/node-exporter/irqwise.prom"),
        MetricsFile::At("/var/lib/node-exporter/irqwise.prom".into())
    );
    assert_eq!(at("/x.prom"), MetricsFile::At("/x.prom".into()), "one character before .prom is a name");
    assert_eq!(at(""), MetricsFile::Off);
}

#[test]
fn kubelet_cpu_manager_state_must_be_an_absolute_plain_path_and_a_later_file_may_turn_it_off() {
    for bad in ["var/lib/kubelet/cpu_manager_state", "/", "/var/./lib/kubelet/x", "/var/lib/../kubelet/x"] {
        let text = format!("[global]\nkubelet_cpu_manager_state = \"{bad}\"\n");
        assert_one_error(&text, 2, 29, &["kubelet_cpu_manager_state", bad, "absolute path"]);
    }
    let set = "[global]\nkubelet_cpu_manager_state = \"/var/lib/kubelet/cpu_manager_state\"\n";
    let state = parse_ok(set).global.kubelet_cpu_manager_state;
    assert_eq!(state, Some("/var/lib/kubelet/cpu_manager_state".into()));
    assert_eq!(parse_ok("").global.kubelet_cpu_manager_state, None, "off by default");
    let files = [
        SourceFile { path: "a.toml".into(), text: set.into() },
        SourceFile { path: "b.toml".into(), text: "[global]\nkubelet_cpu_manager_state = \"\"\n".into() },
    ];
    let r = parse_files(&files, &possible());
    assert_eq!(r.config.unwrap().global.kubelet_cpu_manager_state, None, "\"\" in a later file turns it off");
}

#[test]
fn reconcile_full_every_is_from_1_to_1000_and_a_later_file_wins() {
    for bad in ["0", "1001"] {
        let text = format!("[global]\nreconcile_full_every = {bad}\n");
        assert_one_error(&text, 2, 24, &["reconcile_full_every", bad, "an integer from 1 to 1000"]);
    }
    assert_one_error("[global]\nreconcile_full_every = \"10\"\n", 2, 24, &["invalid type", "expected"]);
    assert_eq!(parse_ok("").global.reconcile_full_every, 10, "the default");
    let files = [
        SourceFile { path: "a.toml".into(), text: "[global]\nreconcile_full_every = 1\n".into() },
        SourceFile { path: "b.toml".into(), text: "[global]\nreconcile_full_every = 30\n".into() },
    ];
    assert_eq!(parse_files(&files, &possible()).config.unwrap().global.reconcile_full_every, 30);
}

#[test]
fn nri_socket_must_be_an_absolute_plain_path_and_the_nri_keys_read() {
    for bad in ["nri.sock", "/var/run/nri/", "/var/./run/nri.sock", "/var/run/../nri.sock", ""] {
        assert_one_error(&format!("[global]\nnri_socket = \"{bad}\"\n"), 2, 14, &["nri_socket", "absolute path"]);
    }
    let g =
        parse_ok("[global]\nnri = true\nnri_socket = \"/run/containerd/nri.sock\"\nnri_exclusive_cpus = true\n").global;
    assert_eq!((g.nri, g.nri_socket.to_str(), g.nri_exclusive_cpus), (true, Some("/run/containerd/nri.sock"), true));
    let d = parse_ok("").global;
    assert_eq!((d.nri, d.nri_socket.to_str(), d.nri_exclusive_cpus), (false, Some("/var/run/nri/nri.sock"), false));
}

#[test]
fn strategy_leave_warns_only_when_other_settings_are_set() {
    let warnings = |settings: &str| {
        let text = format!("[[device]]\nmatch = {{ driver = \"ice\" }}\nstrategy = \"leave\"\n{settings}");
        let r = parse_files(&[SourceFile { path: "l.toml".into(), text }], &possible());
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        r.warnings.iter().map(std::string::ToString::to_string).collect::<Vec<_>>()
    };
    assert_eq!(warnings(""), Vec::<String>::new(), "leave alone is what it says");
    assert_eq!(warnings("guard = false\n"), Vec::<String>::new(), "the guard still acts on a left device");
    let w = warnings("cpus = \"1\"\n");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("l.toml:3:12: warning: strategy"), "{}", w[0]);
}
