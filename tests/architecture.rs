//! The layering ARCHITECTURE.md promises, checked on the source text:
//! - every module of the crate stands on a floor, and imports only from floors below its own:
//!   no import runs up, so no two modules import each other, however far round;
//! - the module graph has no cycle (checked on its own, so that a module missing from the floors
//!   still cannot hide one);
//! - the pure core (CPU sets, the topology and device models, the kernel's algorithms, the
//!   vocabulary, the configuration but its loader, policy, strategies, the sample, the plan)
//!   does no I/O and imports nothing from the shell;
//! - the daemon never imports the command line;
//! - in the daemon, only the files of `DAEMON_LOGGERS` call `tracing`, each for its stated reason:
//!   a pass's lines are rendered by `daemon/journal.rs`, never by the record.
//!
//! An import is any `crate::NAME` path in code, in a `use` line or inline; comments are skipped
//! (a doc comment may name the reader of a model).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The crate's modules from the ground up: a module may import from any floor below its own,
/// never from its own floor or above. `config/load.rs`, the configuration's loader, is the one
/// file that stands apart from its module (`config::load`), above the topology discovery it
/// reads the machine's shape with.
const FLOORS: [&[&str]; 15] = [
    &["text", "cpuset"],
    &["sysfs", "events"],
    &["topology"],
    &["devices"],
    &["choices"],
    &["kernel"],
    &["config", "probe"],
    &["policy"],
    &["strategy"],
    &["sample"],
    &["plan"],
    &["apply", "report", "import_irqbalance", "snapshot", "advise", "diff"],
    &["pass"],
    &["daemon"],
    &["cli"],
];

/// Files and directories (every `.rs` below) of the pure core.
const PURE_CORE: [&str; 41] = [
    "src/cpuset",
    "src/text.rs",
    "src/choices.rs",
    "src/topology/model.rs",
    "src/topology/isolation.rs",
    "src/topology/claims.rs",
    "src/topology/kubelet.rs",
    "src/topology/home.rs",
    "src/topology/locality.rs",
    "src/topology/view.rs",
    "src/topology/synthetic.rs",
    "src/devices/model.rs",
    "src/devices/irq_names.rs",
    "src/devices/name_table.rs",
    "src/devices/recognise.rs",
    "src/devices/net_queues.rs",
    "src/devices/napi.rs",
    "src/kernel",
    "src/probe/btf.rs",
    "src/probe/elf.rs",
    "src/probe/view.rs",
    "src/config/mod.rs",
    "src/config/duration.rs",
    "src/config/error.rs",
    "src/config/glob.rs",
    "src/config/merge.rs",
    "src/config/schema.rs",
    "src/config/validate.rs",
    "src/policy.rs",
    "src/strategy",
    "src/sample/mod.rs",
    "src/sample/kernel_release.rs",
    "src/plan",
    "src/import_irqbalance.rs",
    "src/advise.rs",
    "src/diff.rs",
    "src/events/nri/frame.rs",
    "src/events/nri/ttrpc.rs",
    "src/events/nri/proto.rs",
    "src/events/nri/messages.rs",
    "src/events/nri/view.rs",
];

/// The report's pure files (its reader is `src/report/read.rs`).
const PURE_REPORT: [&str; 4] =
    ["src/report/counts.rs", "src/report/landing.rs", "src/report/render.rs", "src/report/softirqs.rs"];

/// What the pure core must not mention: the shell's modules and readers, and the standard
/// library's I/O.
const SHELL: [&str; 19] = [
    "crate::sysfs",
    "crate::apply",
    "crate::events",
    "crate::daemon",
    "crate::cli",
    "crate::pass",
    "crate::snapshot",
    "crate::topology::discover",
    "crate::topology::memory_file",
    "crate::devices::discover",
    "crate::sample::reader",
    "crate::config::load",
    "crate::report::read",
    "std::fs",
    "std::net",
    "std::process",
    "std::os",
    "tokio",
    "udev::",
];

fn src_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every `.rs` file at or below `rel`.
fn rust_files(rel: &str) -> Vec<PathBuf> {
    let path = src_root().join(rel);
    assert!(path.exists(), "{rel} is listed in the architecture check but does not exist");
    if path.is_file() {
        return vec![path];
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(&path).unwrap().flatten() {
        let p = entry.path();
        let r = p.strip_prefix(src_root()).unwrap().to_string_lossy().into_owned();
        if p.is_dir() || p.extension().is_some_and(|e| e == "rs") {
            out.extend(rust_files(&r));
        }
    }
    out.sort();
    out
}

/// `text` without its comments: a line's code up to `//` (there is no `//` in a string of the
/// crate's import paths).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, line)| (i + 1, line.split("//").next().unwrap_or("")))
}

/// The lines of `text` that mention any of `forbidden` outside comments, as `line: text`.
fn violations(text: &str, forbidden: &[&str]) -> Vec<String> {
    code_lines(text)
        .filter(|(_, code)| forbidden.iter().any(|f| code.contains(f)))
        .map(|(n, code)| format!("{n}: {}", code.trim()))
        .collect()
}

/// The module a source file belongs to: its first path component below `src/` (`src/plan/build.rs`
/// → `plan`, `src/policy.rs` → `policy`), except `config/load.rs` → `config::load`.
fn module_of(rel: &Path) -> Option<String> {
    let rel = rel.strip_prefix("src").ok()?;
    if rel == Path::new("config/load.rs") {
        return Some("config::load".into());
    }
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The modules `text` imports: each `crate::NAME` in code (and `crate::{A, B}`), `config::load`
/// for `crate::config::load`.
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, code) in code_lines(text) {
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let names: Vec<&str> = if let Some(group) = after.strip_prefix('{') {
                group.split('}').next().unwrap_or("").split(',').map(str::trim).collect()
            } else {
                vec![after]
            };
            for name in names {
                let path: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
                let mut parts = path.split("::");
                let first = parts.next().unwrap_or("");
                if first.is_empty() || first.chars().next().is_some_and(char::is_uppercase) {
                    continue; // crate::JSON_SCHEMA, a constant of the crate root
                }
                let module = if first == "config" && parts.next() == Some("load") { "config::load" } else { first };
                out.push((n, module.to_string()));
            }
            rest = after;
        }
    }
    out
}

/// Every import between two different modules: (from, to) → the places it is made.
fn module_graph() -> BTreeMap<(String, String), Vec<String>> {
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for file in rust_files("src") {
        let rel = file.strip_prefix(src_root()).unwrap();
        let Some(from) = module_of(rel) else { continue };
        let text = fs::read_to_string(&file).unwrap();
        for (line, to) in imports(&text) {
            let same = to == from || (from == "config::load" && to == "config");
            if !same {
                edges.entry((from.clone(), to)).or_default().push(format!("{}:{line}", rel.display()));
            }
        }
    }
    edges
}

/// The floor of `module` (`config::load` stands just above the topology it reads).
fn floor_of(module: &str) -> Option<usize> {
    if module == "config::load" {
        return floor_of("topology").map(|f| f + 1);
    }
    FLOORS.iter().position(|floor| floor.contains(&module))
}

/// Imports that do not run strictly down, each with where it is made.
fn upward_imports(edges: &BTreeMap<(String, String), Vec<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for ((from, to), at) in edges {
        match (floor_of(from), floor_of(to)) {
            (Some(f), Some(t)) if t < f => {}
            (Some(f), Some(t)) => {
                found.push(format!("{from} (floor {f}) imports {to} (floor {t}) at {}", at.join(", ")));
            }
            _ => found.push(format!("{from} imports {to} at {}: a module not on any floor", at.join(", "))),
        }
    }
    found
}

/// One cycle of the graph, as the modules on it in order, if there is one.
fn find_cycle(edges: &BTreeMap<(String, String), Vec<String>>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().insert(to);
    }
    // Depth-first search; a module met again while still on the path closes a cycle.
    fn visit<'a>(
        m: &'a str,
        next: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| *p == m) {
            let mut cycle: Vec<String> = path[at..].iter().map(std::string::ToString::to_string).collect();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for n in next.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for m in next.keys() {
        if let Some(c) = visit(m, &next, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn every_import_runs_down_a_floor() {
    let edges = module_graph();
    assert!(edges.len() > 50, "only {} imports between modules found", edges.len());
    let up = upward_imports(&edges);
    assert!(up.is_empty(), "imports that do not run down (ARCHITECTURE.md has the floors):\n{}", up.join("\n"));
}

#[test]
fn the_modules_import_each_other_in_no_cycle() {
    let edges = module_graph();
    if let Some(cycle) = find_cycle(&edges) {
        panic!("an import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn every_module_of_the_crate_stands_on_a_floor() {
    let text = fs::read_to_string(src_root().join("src/lib.rs")).unwrap();
    let declared: Vec<&str> =
        text.lines().filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod "))).collect();
    assert!(declared.len() > 15, "{declared:?}");
    for m in declared {
        let m = m.trim_end_matches(';');
        assert!(floor_of(m).is_some(), "module {m} is on no floor of tests/architecture.rs");
    }
}

#[test]
fn the_pure_core_imports_nothing_from_the_shell() {
    let mut found = Vec::new();
    let mut files = 0;
    for rel in PURE_CORE.iter().chain(&PURE_REPORT) {
        for file in rust_files(rel) {
            files += 1;
            let text = fs::read_to_string(&file).unwrap();
            for v in violations(&text, &SHELL) {
                found.push(format!("{}:{v}", file.display()));
            }
        }
    }
    assert!(files >= 45, "only {files} pure-core files found");
    assert!(found.is_empty(), "the pure core reaches into the shell:\n{}", found.join("\n"));
}

#[test]
fn the_daemon_does_not_import_the_command_line() {
    let mut found = Vec::new();
    for file in rust_files("src/daemon") {
        let text = fs::read_to_string(&file).unwrap();
        for v in violations(&text, &["crate::cli"]) {
            found.push(format!("{}:{v}", file.display()));
        }
    }
    assert!(found.is_empty(), "src/daemon imports the CLI:\n{}", found.join("\n"));
}

#[test]
fn the_checks_see_imports_and_ignore_comments() {
    let text = "//! Read by [`crate::sysfs::Root`].\nuse crate::cpuset::CpuSet;\nuse crate::sysfs::Root; // here\n";
    assert_eq!(violations(text, &SHELL), vec!["3: use crate::sysfs::Root;"]);
    assert!(violations("let f = std::fs::read(p);", &SHELL).len() == 1);
    let text =
        "use crate::{cpuset::CpuSet, plan};\nlet x = crate::config::load::check(p);\nlet s = crate::JSON_SCHEMA;\n";
    let found: Vec<String> = imports(text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(found, ["cpuset", "plan", "config::load"]);
}

#[test]
fn the_checks_fail_on_an_upward_import_and_on_a_cycle() {
    let edge = |a: &str, b: &str| ((a.to_string(), b.to_string()), vec!["src/x.rs:1".to_string()]);
    let down: BTreeMap<_, _> = [edge("plan", "strategy"), edge("strategy", "kernel")].into();
    assert!(upward_imports(&down).is_empty());
    assert!(find_cycle(&down).is_none());
    let up: BTreeMap<_, _> = [edge("plan", "strategy"), edge("strategy", "plan")].into();
    assert_eq!(upward_imports(&up), ["strategy (floor 8) imports plan (floor 10) at src/x.rs:1"]);
    assert_eq!(find_cycle(&up), Some(vec!["plan".into(), "strategy".into(), "plan".into()]));
    let lost: BTreeMap<_, _> = [edge("plan", "nowhere")].into();
    assert_eq!(upward_imports(&lost).len(), 1, "a module on no floor is reported");
}

/// The backticked words of `text` outside parentheses.
fn ticked_outside_parentheses(text: &str) -> Vec<String> {
    let mut depth = 0;
    let mut plain = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn architecture_md_matches_the_tree() {
    let text = fs::read_to_string(src_root().join("ARCHITECTURE.md")).unwrap();
    // Its floor table is the one this test checks.
    let mut rows = 0;
    for line in text
        .lines()
        .filter(|l| l.starts_with("| ") && l.split('|').nth(1).is_some_and(|c| c.trim().parse::<usize>().is_ok()))
    {
        let cells: Vec<&str> = line.split('|').collect();
        let floor: usize = cells[1].trim().parse().unwrap();
        let mut named = ticked_outside_parentheses(cells[2]);
        named.sort();
        let mut want: Vec<String> = FLOORS[floor].iter().map(ToString::to_string).collect();
        want.sort();
        assert_eq!(named, want, "ARCHITECTURE.md floor {floor}");
        rows += 1;
    }
    assert_eq!(rows, FLOORS.len(), "ARCHITECTURE.md lists every floor");
    // Every file or directory it names exists (below src/, or from the top for tests/).
    let mut paths = 0;
    for word in text.split('`').skip(1).step_by(2) {
        let word = word.split(&[' ', ',', ':'][..]).next().unwrap_or("");
        if word.ends_with(".rs") || word.ends_with(".md") || (word.ends_with('/') && word.len() > 1) {
            let (top, below) = (src_root().join(word), src_root().join("src").join(word));
            assert!(top.exists() || below.exists(), "ARCHITECTURE.md names {word}, which does not exist");
            paths += 1;
        }
    }
    assert!(paths > 20, "only {paths} paths found in ARCHITECTURE.md");
}

/// Functions over the limit that other work is shortening now, by file and name: each must still
/// be over it (an entry that is no longer is reported, so the list only shrinks).
const LONG_FOR_NOW: [(&str, &str); 0] = [];

/// The most lines a production function may have, from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;

/// A string literal open at the end of a line: plain, or raw with its number of `#`.
#[derive(Clone, Copy)]
enum Literal {
    Plain,
    Raw(usize),
}

/// `line` without its comment, string and character literals (their braces do not count);
/// `in_block` and `in_str` carry a block comment or a string over from the line before.
fn braces_code(line: &str, in_block: &mut bool, in_str: &mut Option<Literal>) -> String {
    let b = line.as_bytes();
    let (mut out, mut i) = (String::new(), 0);
    while i < b.len() {
        if *in_block {
            match line[i..].find("*/") {
                Some(j) => (*in_block, i) = (false, i + j + 2),
                None => return out,
            }
            continue;
        }
        match *in_str {
            Some(Literal::Plain) => {
                match b[i] {
                    b'\\' => i += 2,
                    b'"' => (*in_str, i) = (None, i + 1),
                    _ => i += 1,
                }
                continue;
            }
            Some(Literal::Raw(hashes)) => {
                let end = format!("\"{}", "#".repeat(hashes));
                match line[i..].find(&end) {
                    Some(j) => (*in_str, i) = (None, i + j + end.len()),
                    None => return out,
                }
                continue;
            }
            None => {}
        }
        let rest = &line[i..];
        let word_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with("//") {
            break;
        } else if rest.starts_with("/*") {
            (*in_block, i) = (true, i + 2);
        } else if !word_before && (rest.starts_with("r\"") || rest.starts_with("r#")) {
            let hashes = rest[1..].bytes().take_while(|&c| c == b'#').count();
            if rest.as_bytes().get(1 + hashes) == Some(&b'"') {
                (*in_str, i) = (Some(Literal::Raw(hashes)), i + 2 + hashes);
            } else {
                out.push('r');
                i += 1;
            }
        } else if b[i] == b'"' {
            (*in_str, i) = (Some(Literal::Plain), i + 1);
        } else if b[i] == b'\''
            && (rest.get(2..3) == Some("'") || (rest.starts_with("'\\") && rest[2..].find('\'').is_some()))
        {
            // A character literal ('{', '\''); a lifetime ('a) has no closing quote nearby.
            i += rest.strip_prefix("'\\").map_or(3, |after| 2 + after.find('\'').unwrap_or(0) + 1);
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// `text` up to its `#[cfg(test)]` module: the production code.
fn production(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let next = &text[at + line.len()..];
        if line.trim() == "#[cfg(test)]" && next.trim_start().trim_start_matches("pub ").starts_with("mod ") {
            return &text[..at];
        }
        at += line.len();
    }
    text
}

/// Every function of `text` outside its `#[cfg(test)]` module, as (name, first line, lines).
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = production(text).lines().collect();
    let end = lines.len();
    let (mut in_block, mut in_str) = (false, None);
    let code: Vec<String> = lines[..end].iter().map(|l| braces_code(l, &mut in_block, &mut in_str)).collect();
    let mut found = Vec::new();
    for (start, line) in code.iter().enumerate() {
        let Some(at) = line.find("fn ").filter(|&at| at == 0 || !line.as_bytes()[at - 1].is_ascii_alphanumeric())
        else {
            continue;
        };
        let name: String = line[at + 3..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            continue; // `fn(` of a function pointer type
        }
        let mut depth = 0i32;
        let mut opened = false;
        'body: for (n, l) in code.iter().enumerate().skip(start) {
            for c in l.chars().skip(if n == start { at } else { 0 }) {
                match c {
                    '{' => (depth, opened) = (depth + 1, true),
                    '}' => depth -= 1,
                    ';' if !opened => break 'body, // a declaration without a body
                    _ => {}
                }
                if opened && depth == 0 {
                    found.push((name.clone(), start + 1, n - start + 1));
                    break 'body;
                }
            }
        }
    }
    found
}

#[test]
fn no_production_function_is_over_100_lines() {
    let mut over = Vec::new();
    let mut functions = 0;
    for file in rust_files("src") {
        let rel = file.strip_prefix(src_root()).unwrap().to_string_lossy().into_owned();
        for (name, line, lines) in function_lengths(&fs::read_to_string(&file).unwrap()) {
            functions += 1;
            let excused = LONG_FOR_NOW.contains(&(rel.as_str(), name.as_str()));
            if (lines > MAX_FUNCTION_LINES) != excused {
                over.push(format!("{rel}:{line}: fn {name}: {lines} lines"));
            }
        }
    }
    assert!(functions > 1000, "only {functions} functions found");
    assert!(
        over.is_empty(),
        "production functions over {MAX_FUNCTION_LINES} lines (split them), or listed in LONG_FOR_NOW but no longer over it (strike them):\n{}",
        over.join("\n")
    );
}

#[test]
fn function_lengths_count_from_fn_to_its_closing_brace() {
    let text = "fn a() {\n    let s = \"}\";\n    let c = '{';\n    // }\n}\ntrait T {\n    fn b(&self);\n}\nfn c<'x>(v: &'x str) -> &'x str {\n    let r = r#\"{\"#;\n    v\n}\n#[cfg(test)]\nmod tests {\n    fn long() {}\n}\n";
    assert_eq!(
        function_lengths(text),
        [("a".to_string(), 1, 5), ("c".to_string(), 9, 4)],
        "braces in strings, characters and comments do not count; a declaration has no length; tests are not production"
    );
}

/// The files of `src/daemon/` a file of it imports, by stem (`mod` for `daemon/mod.rs`): each
/// `super::NAME` (and `super::{A, B}`, `crate::daemon::NAME`) naming a sibling file, or naming
/// anything else (an item of `daemon/mod.rs`: `mod`); in `mod.rs`, each path starting with a
/// file's name. `mod NAME;` declares, it does not import.
fn daemon_imports(stem: &str, text: &str, files: &BTreeSet<String>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let word = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    for (n, code) in code_lines(text) {
        if code.trim_start().trim_start_matches("pub ").trim_start_matches("pub(crate) ").starts_with("mod ") {
            continue;
        }
        let mut names = Vec::new();
        for prefix in ["super::", "crate::daemon::"] {
            let mut rest = code;
            while let Some(at) = rest.find(prefix) {
                let before = rest[..at].chars().last();
                let after = &rest[at + prefix.len()..];
                rest = after;
                if prefix == "super::" && (before == Some(':') || after.starts_with("super::")) {
                    rest = after.trim_start_matches("super::"); // super::super::… leaves the daemon
                    continue;
                }
                match after.strip_prefix('{') {
                    Some(group) => {
                        names.extend(group.split('}').next().unwrap_or("").split(',').map(|g| word(g.trim())));
                    }
                    None => names.push(word(after)),
                }
            }
        }
        if stem == "mod" {
            // In mod.rs a sibling is named by its own name: `parts::Daemon`, `use rescan::Rescan`.
            let bytes = code.as_bytes();
            for (at, _) in code.match_indices("::") {
                let start = code[..at].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
                let preceded_by_path = start >= 2 && &bytes[start - 2..start] == b"::";
                if !preceded_by_path && start < at {
                    names.push(code[start..at].to_string());
                }
            }
        }
        for name in names.into_iter().filter(|w| !w.is_empty() && w != "self") {
            if files.contains(&name) && name != stem {
                out.push((n, name));
            } else if stem != "mod" && !files.contains(&name) {
                out.push((n, "mod".to_string()));
            }
        }
    }
    out
}

/// Every import between two files of `src/daemon/`: (from, to) → the places it is made.
fn daemon_graph() -> BTreeMap<(String, String), Vec<String>> {
    let files: Vec<PathBuf> =
        rust_files("src/daemon").into_iter().filter(|f| f.parent().is_some_and(|p| p.ends_with("daemon"))).collect();
    let stems: BTreeSet<String> =
        files.iter().filter_map(|f| f.file_stem().and_then(|s| s.to_str()).map(str::to_string)).collect();
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for file in &files {
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
        let text = fs::read_to_string(file).unwrap();
        for (line, to) in daemon_imports(&stem, production(&text), &stems) {
            edges.entry((stem.clone(), to)).or_default().push(format!("src/daemon/{stem}.rs:{line}"));
        }
    }
    edges
}

/// Each file's floor in `edges`: 0 for one that imports no other, else one above the highest
/// file it imports (`None` when the graph has a cycle).
fn floors(edges: &BTreeMap<(String, String), Vec<String>>) -> Option<BTreeMap<String, usize>> {
    let mut floor: BTreeMap<String, usize> = BTreeMap::new();
    let nodes: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    for _ in 0..=nodes.len() {
        let mut changed = false;
        for (from, to) in edges.keys() {
            let want = floor.get(to).copied().unwrap_or(0) + 1;
            if floor.get(from).copied().unwrap_or(0) < want {
                floor.insert(from.clone(), want);
                changed = true;
            }
        }
        if !changed {
            return Some(floor);
        }
    }
    None
}

#[test]
fn inside_the_daemon_files_import_down_only_and_in_no_cycle() {
    let edges = daemon_graph();
    assert!(edges.len() > 40, "only {} imports between daemon files found", edges.len());
    if let Some(cycle) = find_cycle(&edges) {
        let at: Vec<String> = cycle.windows(2).map(|w| edges[&(w[0].clone(), w[1].clone())][0].clone()).collect();
        panic!("an import cycle inside src/daemon/: {} (at {})", cycle.join(" -> "), at.join(", "));
    }
    let up: Vec<String> = edges
        .iter()
        .filter(|((_, to), _)| to == "mod")
        .map(|((from, _), at)| format!("{from} imports daemon/mod.rs (the event loop, the top) at {}", at.join(", ")))
        .collect();
    assert!(up.is_empty(), "imports that run up inside src/daemon/:\n{}", up.join("\n"));
    let floors = floors(&edges).unwrap();
    let top = floors.values().max().copied().unwrap_or(0);
    assert_eq!(floors.get("mod"), Some(&top), "daemon/mod.rs stands above every other daemon file: {floors:?}");
}

#[test]
fn the_daemon_check_sees_siblings_items_of_mod_rs_and_cycles() {
    let files: BTreeSet<String> = ["mod", "pass", "parts", "record"].iter().map(ToString::to_string).collect();
    let found =
        |stem: &str, text: &str| daemon_imports(stem, text, &files).into_iter().map(|(_, m)| m).collect::<Vec<_>>();
    assert_eq!(
        found("pass", "use super::parts::Daemon;\nuse super::{record, once::SaidOnce};\n"),
        ["parts", "record", "mod"]
    );
    assert_eq!(found("record", "let t = super::unix_now(); // super::pass\nuse super::super::cpuset;\n"), ["mod"]);
    assert_eq!(
        found("mod", "mod pass;\npub use parts::Daemon;\nlet r = record::Records::new(crate::x::y);\n"),
        ["parts", "record"]
    );
    let edge = |a: &str, b: &str| ((a.to_string(), b.to_string()), vec!["src/daemon/x.rs:1".to_string()]);
    let looped: BTreeMap<_, _> = [edge("mod", "parts"), edge("parts", "nri"), edge("nri", "parts")].into();
    assert!(find_cycle(&looped).is_some() && floors(&looped).is_none());
    let tower: BTreeMap<_, _> = [edge("mod", "pass"), edge("pass", "parts"), edge("mod", "parts")].into();
    assert_eq!(floors(&tower).unwrap()["mod"], 2);
}

/// The stages of the pass as ARCHITECTURE.md draws them: (stage, the function's path).
fn pass_stages(text: &str) -> Vec<(String, String)> {
    let picture = text.split("## The pass").nth(1).and_then(|t| t.split("```").nth(1)).unwrap_or("");
    picture
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_lowercase()))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.to_string()))
        })
        .collect()
}

/// Whether `path` (`module::…::Type::function` or `module::…::function`) names a function
/// defined in the file of its longest module prefix below src/.
fn function_exists(path: &str) -> bool {
    let parts: Vec<&str> = path.split("::").collect();
    let Some(name) = parts.last() else { return false };
    (1..parts.len()).rev().any(|n| {
        let module = parts[..n].join("/");
        let files = [src_root().join(format!("src/{module}.rs")), src_root().join(format!("src/{module}/mod.rs"))];
        files.iter().any(|f| {
            fs::read_to_string(f).is_ok_and(|t| {
                code_lines(&t).any(|(_, l)| l.contains(&format!("fn {name}(")) || l.contains(&format!("fn {name}<")))
            })
        })
    })
}

#[test]
fn architecture_md_draws_the_pass_as_it_runs() {
    let text = fs::read_to_string(src_root().join("ARCHITECTURE.md")).unwrap();
    let stages = pass_stages(&text);
    let names: Vec<&str> = stages.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(names, ["read", "plan", "adjust", "apply", "record"], "the pass's stages in ARCHITECTURE.md");
    for (stage, path) in &stages {
        assert!(function_exists(path), "ARCHITECTURE.md's {stage} stage names {path}, which is no function of src/");
    }
    assert!(!function_exists("daemon::pass::Daemon::no_such_stage") && !function_exists("nowhere::read"));
}

/// The files of `src/daemon/` whose production code may call `tracing`, each with why: the
/// pass's lines are rendered by `journal.rs` and `journal_news.rs` from values; the others say what happens outside a
/// pass (start-up, the event loop's sources, timers, side channels, stop). A new file that logs
/// must be added here with its reason, and a file that no longer logs struck.
const DAEMON_LOGGERS: &[(&str, &str)] = &[
    ("journal.rs", "renders the journal lines of a pass's changes, drift and own news, from values"),
    ("journal_news.rs", "renders the journal lines of a pass's collaborators' news and whole queues, from values"),
    ("mod.rs", "the event loop's start: irqbalance running, the claims directory"),
    ("pass.rs", "the first pass's start-up lines: container diagnosis, stale temp files, files read back"),
    ("reload.rs", "a reload's outcome, between passes"),
    ("sources.rs", "event sources that cannot be opened, at start"),
    ("notify.rs", "the service manager's socket, outside any pass"),
    ("descriptors.rs", "the open-file limit, at start"),
    ("resident.rs", "giving back mapped pages while idle, after a pass"),
    ("balance.rs", "the load sampler's timer: its moves and unreadable counts, between passes"),
    ("claims.rs", "the claimed processes' pidfd watches, spawned tasks outside a pass"),
    ("originals.rs", "restoring the original masks on stop"),
    ("napi_originals.rs", "restoring the original NAPI settings on stop"),
    ("state.rs", "the state file's writer, a side channel said once"),
    ("metrics_file.rs", "the metrics file's writer, a side channel said once"),
    ("nri.rs", "the NRI plugin's connection, its own task"),
    ("irqbalance_answers.rs", "irqbalance's socket clients, answered outside a pass"),
    ("irqbalance_socket.rs", "irqbalance's socket, its own task"),
    ("irqbalance_socket_file.rs", "irqbalance's stale socket files, at start"),
];

/// The lines of `text`'s production code (comments and the test module left out) that call
/// into `tracing`.
fn tracing_calls(text: &str) -> Vec<String> {
    violations(production(text), &["tracing::", "use tracing;"])
}

#[test]
fn in_the_daemon_only_the_listed_files_call_tracing() {
    let mut unlisted = Vec::new();
    let mut logging = BTreeSet::new();
    for file in rust_files("src/daemon") {
        let rel = file.strip_prefix(src_root().join("src/daemon")).unwrap().to_string_lossy().into_owned();
        let calls = tracing_calls(&fs::read_to_string(&file).unwrap());
        if calls.is_empty() {
            continue;
        }
        logging.insert(rel.clone());
        if !DAEMON_LOGGERS.iter().any(|(f, _)| *f == rel) {
            unlisted.extend(calls.iter().map(|c| format!("src/daemon/{rel}:{c}")));
        }
    }
    assert!(
        unlisted.is_empty(),
        "daemon files that call tracing but are not in DAEMON_LOGGERS (say a pass's news as a value rendered by daemon/journal.rs, or list the file with its reason):\n{}",
        unlisted.join("\n")
    );
    let stale: Vec<&str> = DAEMON_LOGGERS.iter().map(|(f, _)| *f).filter(|f| !logging.contains(*f)).collect();
    assert!(stale.is_empty(), "listed in DAEMON_LOGGERS but calling no tracing (strike them): {stale:?}");
    assert!(!logging.contains("record.rs"), "the record decides; daemon/journal.rs says");
}

#[test]
fn the_tracing_check_sees_calls_and_skips_comments_and_tests() {
    let text = "fn a() {\n    tracing::info!(\"x\");\n    // tracing::warn!(\"y\");\n}\n#[cfg(test)]\nmod tests {\n    fn b() { tracing::debug!(\"z\"); }\n}\n";
    assert_eq!(tracing_calls(text), ["2: tracing::info!(\"x\");"]);
}
