//! The documentation (`README.md` and `docs/**/*.md`, whichever exist) checked against the code,
//! so that it cannot drift from it:
//!
//! - **links**: every relative link (`[text](path)`, `[text](path#anchor)`, `[text](#anchor)`,
//!   reference definitions) names a file or directory of the repository, and every `#anchor` into
//!   a Markdown file names one of its headings by GitHub's slug (lower case, punctuation dropped,
//!   each space a `-`; a repeated heading gets `-1`, `-2`, ...) or an `<a id=...>`/`<a name=...>`;
//! - **configuration keys**: every key of `schemas/config.schema.json` (itself kept equal to the
//!   reader's keys by `tests/config_schema.rs`) appears in the docs, in backticks (`` `key` ``,
//!   `` `key = ...` ``, `` `[table.key]` ``, `` `property.<KEY>` ``) or as `key =` or a `[table]`
//!   header in a ` ```toml ` block; and every ` ```toml ` block that parses as TOML goes through
//!   the real reader (`irqwise::config::parse_files`) without an unknown key, a wrong type or an
//!   unknown spelling. A block that is not TOML (`...` placeholders) is skipped and counted; write
//!   ` ```toml ignore ` for a block that is TOML but not a configuration, or shows an error;
//! - **configuration values**: docs/configuration.md's `[global]` reference table has one row
//!   per key of the code's key table (`irqwise::config::GLOBAL_KEYS`) with its type and range
//!   (enum spellings), default and when it takes effect, as the key table words them; and every
//!   "`key` (`a`, `b`)" in prose lists exactly the spellings the schema gives that key, every
//!   rule, match and `[napi]` key with spellings being listed so somewhere;
//! - **the command line**: every command of clap's definition (`irqwise plan`, and a subcommand
//!   with its parent: `irqwise spread numa`) and every long option (`--json`), hidden ones aside,
//!   appears; every `irqwise WORD` in a command position of code (inline code, or a line of a
//!   `sh`/`bash`/`console`/`shell`/unlabelled block, after a prompt, `sudo`, `|`, `;`, `&&` or
//!   `$(`) names a command;
//! - **metrics**: every metric the daemon writes (`irqwise::daemon::metric_table::METRICS`)
//!   appears, and every `irqwise_...` name in the docs is one of them
//!   (`irqwise_last_pass_*` is a prefix of some), and every recording rule named
//!   (`instance:irqwise_degraded:bool`) is one of `packaging/prometheus/irqwise-rules.yml`;
//!   The table of `docs/monitoring.md` between the markers of
//!   `irqwise::daemon::metric_table` is the one `metric_table::markdown()` makes from the
//!   declared metrics (names, labels, types, every closed label's values): a hand edit or a new
//!   metric fails until `IRQWISE_BLESS=1 cargo nextest run --test docs` writes it;
//! - **journal**: every `MESSAGE_ID` of `daemon::catalog::ALL` appears, and every 32-hex-digit
//!   word is one of them;
//! - **JSON Schemas**: every `schemas/*.schema.json` is named (as a whole name:
//!   `check-config.schema.json` does not name `config.schema.json`);
//! - **runnable examples**: a fenced block whose info string is ` ```sh runnable ` (every line a
//!   command) or ` ```console runnable ` (only the `$ ` lines; the others are output) is run by
//!   `bash -e`, in a fresh temporary directory, where `irqwise` is a shell function calling the
//!   built binary as `irqwise --root FIXTURE --config EMPTY ARGS...`: FIXTURE is a 2-node,
//!   16-CPU machine with an ice, an mlx5 and a virtio NIC and two NVMe drives
//!   (`tests/common/fixture.rs`), EMPTY an empty configuration tree. It must exit 0 within 60 s.
//!   Such a block passes neither `--root` nor `--config` itself and never starts the daemon
//!   without `--once`. There may be none: the check then passes and says so;
//! - **example outputs**: a ` ```console fixture ` block's `$ irqwise ARGS` lines run on that
//!   same fixture machine (after one `run --once` pass when marked `after-once`) and print what
//!   the block shows under each, a line `...` standing for any lines and `...` in a line for any
//!   text;
//! - **journal examples**: a `REASON=` shown is one the planner gives on the fixture (numbers
//!   aside), a `PRIORITY=` beside a `MESSAGE_ID=` the one the message ID table lists;
//! - **tables and numbers**: no table row outside a table; no copied count of checks or suite
//!   time (`tests/vm/RESULTS.md` records each run: link it).
//! - **the map of the tests**: every `tests/*.rs` is named in the last column of a row of
//!   `tests/README.md`'s table, and every file named there exists.
//!
//! Each problem names `file:line` and the offending item. The checks take the documents as
//! (path, text) pairs, so the tests at the end feed them broken documents.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use clap::CommandFactory;
use irqwise::config::{parse_files, ConfigError, MachineShape, SourceFile, GLOBAL_KEYS};
use irqwise::cpuset::CpuSet;
use regex_lite::Regex;

/// One Markdown file: its path relative to the repository and its text.
#[derive(Debug, Clone)]
struct Doc {
    path: PathBuf,
    text: String,
}

fn doc(path: &str, text: &str) -> Doc {
    Doc { path: path.into(), text: text.into() }
}

/// A fenced code block: its info string (first word: the language) and where its text starts.
#[derive(Debug, Clone)]
struct Block {
    info: String,
    /// Line number (1-based) of the block's first line of content.
    first_line: usize,
    text: String,
}

impl Block {
    fn lang(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }

    fn has_flag(&self, flag: &str) -> bool {
        self.info.split_whitespace().skip(1).any(|w| w == flag)
    }
}

/// What the checks read of a document: prose lines (outside fenced blocks), inline code spans,
/// fenced blocks, headings.
#[derive(Debug, Default)]
struct Parsed {
    prose: Vec<(usize, String)>,
    spans: Vec<(usize, String)>,
    blocks: Vec<Block>,
    headings: Vec<(usize, String)>,
}

/// The inline code spans of one line, and the line with each span blanked out.
fn code_spans(line: &str) -> (Vec<String>, String) {
    let mut spans = Vec::new();
    let mut rest = String::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            let c = line[i..].chars().next().unwrap();
            rest.push(c);
            i += c.len_utf8();
            continue;
        }
        let run = b[i..].iter().take_while(|&&c| c == b'`').count();
        let ticks = &line[i..i + run];
        let after = i + run;
        // The closing run: exactly as many backticks.
        let mut j = after;
        let mut close = None;
        while let Some(k) = line[j..].find(ticks) {
            let at = j + k;
            let len = b[at..].iter().take_while(|&&c| c == b'`').count();
            if len == run {
                close = Some(at);
                break;
            }
            j = at + len;
        }
        if let Some(at) = close {
            let inner = &line[after..at];
            let inner = if inner.len() > 1 && inner.starts_with(' ') && inner.ends_with(' ') {
                &inner[1..inner.len() - 1]
            } else {
                inner
            };
            spans.push(inner.to_string());
            rest.push_str(&" ".repeat(at + run - i));
            i = at + run;
        } else {
            rest.push_str(ticks);
            i = after;
        }
    }
    (spans, rest)
}

fn parse(d: &Doc) -> Parsed {
    let mut p = Parsed::default();
    let mut open: Option<(char, usize, Block)> = None;
    for (i, line) in d.text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim_start();
        if let Some((ch, len, block)) = &mut open {
            let run = t.chars().take_while(|c| c == ch).count();
            if run >= *len && t[run..].trim().is_empty() {
                p.blocks.push(block.clone());
                open = None;
            } else {
                block.text.push_str(line);
                block.text.push('\n');
            }
            continue;
        }
        let fence = t.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(ch) = fence {
            let run = t.chars().take_while(|c| *c == ch).count();
            if run >= 3 {
                let info = t[run..].trim().to_string();
                open = Some((ch, run, Block { info, first_line: n + 1, text: String::new() }));
                continue;
            }
        }
        let (spans, rest) = code_spans(line);
        p.spans.extend(spans.into_iter().map(|s| (n, s)));
        if line.len() - t.len() <= 3 && t.starts_with('#') {
            let level = t.chars().take_while(|c| *c == '#').count();
            if level <= 6 && t[level..].starts_with(' ') {
                let text = t[level..].trim().trim_end_matches('#').trim();
                p.headings.push((n, text.to_string()));
            }
        }
        p.prose.push((n, rest));
    }
    if let Some((_, _, block)) = open {
        p.blocks.push(block); // an unclosed fence runs to the end, as GitHub renders it
    }
    p
}

/// GitHub's anchor of a heading: its rendered text in lower case, everything but letters,
/// digits, `_`, `-` and spaces dropped, each space a `-`.
fn slug(heading: &str) -> String {
    let link = Regex::new(r"!?\[([^\]]*)\]\([^)]*\)").unwrap();
    let tag = Regex::new(r"<[^>]*>").unwrap();
    let text = link.replace_all(heading, "$1");
    let text = tag.replace_all(&text, "");
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor of a document: heading slugs (repeats numbered as GitHub numbers them) and
/// explicit `<a id/name=...>` anchors.
fn anchors(p: &Parsed) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, h) in &p.headings {
        let base = slug(h);
        let mut s = base.clone();
        while out.contains(&s) {
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            s = format!("{base}-{n}");
        }
        out.insert(s);
    }
    let explicit = Regex::new(r#"<a\s+(?:id|name)="([^"]+)""#).unwrap();
    for (_, line) in &p.prose {
        for c in explicit.captures_iter(line) {
            out.insert(c[1].to_string());
        }
    }
    out
}

/// The link targets of a document's prose, with their lines.
fn links(p: &Parsed) -> Vec<(usize, String)> {
    let inline = Regex::new(r#"\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)"#).unwrap();
    let reference = Regex::new(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)").unwrap();
    let mut out = Vec::new();
    for (n, line) in &p.prose {
        for c in inline.captures_iter(line) {
            out.push((*n, c[1].to_string()));
        }
        if let Some(c) = reference.captures(line) {
            out.push((*n, c[1].to_string()));
        }
    }
    out
}

/// `base/rel` without `.` and `..` components; `None` when it climbs out of the repository.
fn normalize(base: &Path, rel: &str) -> Option<PathBuf> {
    let joined = if let Some(abs) = rel.strip_prefix('/') { PathBuf::from(abs) } else { base.join(rel) };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(x) => out.push(x),
            _ => return None,
        }
    }
    Some(out)
}

fn percent_decode(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if let Some(Ok(v)) = s.get(i + 1..i + 3).map(|h| u8::from_str_radix(h, 16)) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Links: every relative target exists in `repo` (or among `docs`), every anchor into a
/// Markdown file names one of its anchors.
fn link_problems(repo: &Path, docs: &[Doc]) -> Vec<String> {
    let parsed: BTreeMap<PathBuf, Parsed> = docs.iter().map(|d| (d.path.clone(), parse(d))).collect();
    let mut out = Vec::new();
    for d in docs {
        for (n, target) in links(&parsed[&d.path]) {
            let at = format!("{}:{n}", d.path.display());
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = percent_decode(file);
            let path = if file.is_empty() {
                d.path.clone()
            } else {
                let Some(p) = normalize(d.path.parent().unwrap_or(Path::new("")), &file) else {
                    out.push(format!("{at}: link {target} points outside the repository"));
                    continue;
                };
                p
            };
            let in_docs = parsed.contains_key(&path);
            if !in_docs && !repo.join(&path).exists() {
                out.push(format!("{at}: link {target}: no file {}", path.display()));
                continue;
            }
            if anchor.is_empty() || path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let found = if let Some(p) = parsed.get(&path) {
                anchors(p).contains(anchor)
            } else {
                let text = std::fs::read_to_string(repo.join(&path)).unwrap_or_default();
                anchors(&parse(&Doc { path: path.clone(), text })).contains(anchor)
            };
            if !found {
                out.push(format!("{at}: link {target}: no heading #{anchor} in {}", path.display()));
            }
        }
    }
    out
}

/// Every key of the configuration's JSON Schema: the names of every `properties` object.
fn schema_keys(schema: &serde_json::Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    fn walk(v: &serde_json::Value, out: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::Object(props)) = m.get("properties") {
                    out.extend(props.keys().cloned());
                }
                m.values().for_each(|x| walk(x, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(schema, &mut out);
    out
}

fn shipped_schema_keys() -> BTreeSet<String> {
    schema_keys(&shipped_schema())
}

/// The key names a piece of code documents: `key`, `key = ...`, `[table.key]`, `a.b.c`.
fn keys_in_span(span: &str) -> Vec<String> {
    let re = Regex::new(r"^\[*\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_<>][A-Za-z0-9_<>]*)*)\s*\]*(?:\s|=|$)").unwrap();
    re.captures(span.trim()).map(|c| c[1].split('.').map(String::from).collect()).unwrap_or_default()
}

/// The key names a TOML block shows: `key =` (dotted and inline-table keys too) and headers.
fn keys_in_toml(text: &str) -> Vec<String> {
    let assign = Regex::new(r"([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*=").unwrap();
    let header = Regex::new(r"(?m)^\s*\[\[?\s*([A-Za-z0-9_.]+)\s*\]\]?").unwrap();
    let mut out: Vec<String> = Vec::new();
    for c in assign.captures_iter(text).chain(header.captures_iter(text)) {
        out.extend(c[1].split('.').map(|s| s.trim().to_string()));
    }
    out
}

fn machine() -> MachineShape {
    MachineShape::with_cpus(CpuSet::parse_list("0-63").unwrap())
}

/// How many ` ```toml ` blocks were checked by the reader, skipped as not TOML, marked ignore.
#[derive(Debug, Default, PartialEq, Eq)]
struct TomlBlocks {
    checked: usize,
    not_toml: usize,
    ignored: usize,
}

/// Configuration keys: every key of `keys` is documented somewhere, and every TOML block the
/// reader can read has no unknown key, wrong type or unknown spelling.
fn config_key_problems(docs: &[Doc], keys: &BTreeSet<String>) -> (Vec<String>, TomlBlocks) {
    let mut out = Vec::new();
    let mut counts = TomlBlocks::default();
    let mut documented: BTreeSet<String> = BTreeSet::new();
    for d in docs {
        let p = parse(d);
        for (_, s) in &p.spans {
            documented.extend(keys_in_span(s));
        }
        for b in p.blocks.iter().filter(|b| b.lang() == "toml") {
            documented.extend(keys_in_toml(&b.text));
            if b.has_flag("ignore") {
                counts.ignored += 1;
                continue;
            }
            if toml::from_str::<toml::Table>(&b.text).is_err() {
                counts.not_toml += 1;
                continue;
            }
            counts.checked += 1;
            let report = parse_files(&[SourceFile { path: d.path.clone(), text: b.text.clone() }], &machine());
            for e in &report.errors {
                if let ConfigError::Schema { at, message } = e {
                    let line = b.first_line + at.line - 1;
                    out.push(format!("{}:{line}: the reader refuses this ```toml block: {message}", d.path.display()));
                }
            }
        }
    }
    for k in keys.difference(&documented) {
        out.push(format!("schemas/config.schema.json: the configuration key `{k}` is documented nowhere"));
    }
    (out, counts)
}

/// The header of the `[global]` reference table of docs/configuration.md.
const GLOBAL_TABLE: &str = "| key | type and range | default | takes effect |";

/// The `[global]` reference table of `doc` (docs/configuration.md): one row per key of
/// [`GLOBAL_KEYS`], in its order, each cell what the key table says (type and range, default,
/// when a change takes effect).
fn global_table_problems(doc: &Doc) -> Vec<String> {
    let path = doc.path.display();
    let lines: Vec<&str> = doc.text.lines().collect();
    let Some(header) = lines.iter().position(|l| l.trim() == GLOBAL_TABLE) else {
        return vec![format!("{path}: no [global] reference table (a table headed `{GLOBAL_TABLE}`)")];
    };
    let mut out = Vec::new();
    let mut rows: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate().skip(header + 2).take_while(|(_, l)| l.starts_with('|')) {
        let cells: Vec<String> = line.trim().trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect();
        let key = cells.first().map(|c| c.trim_matches('`').to_string()).unwrap_or_default();
        if GLOBAL_KEYS.iter().all(|k| k.name != key) {
            out.push(format!("{path}:{}: the [global] table names `{key}`, which is no [global] key", i + 1));
        }
        rows.insert(key, (i + 1, cells));
    }
    for k in GLOBAL_KEYS {
        let Some((line, cells)) = rows.get(k.name) else {
            out.push(format!("{path}: the [global] key `{}` has no row in the reference table", k.name));
            continue;
        };
        let want = [k.kind.words(), k.default.words(), k.effect.words().to_string()];
        for ((what, want), have) in
            ["type and range", "default", "takes effect"].iter().zip(&want).zip(cells.iter().skip(1))
        {
            if want != have {
                out.push(format!(
                    "{path}:{line}: `{}`: the {what} is documented as {have}, the code's is {want}",
                    k.name
                ));
            }
        }
        if cells.len() != 4 {
            out.push(format!("{path}:{line}: `{}`: {} cells, expected 4 ({GLOBAL_TABLE})", k.name, cells.len()));
        }
    }
    out
}

/// Every key of the configuration's JSON Schema that takes one of a list of spellings, with
/// them (`$ref`s followed).
fn schema_enums(schema: &serde_json::Value) -> BTreeMap<String, BTreeSet<String>> {
    fn walk(root: &serde_json::Value, v: &serde_json::Value, out: &mut BTreeMap<String, BTreeSet<String>>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::Object(props)) = m.get("properties") {
                    for (k, p) in props {
                        let p = match p.get("$ref").and_then(|r| r.as_str()) {
                            Some(r) => root.pointer(r.trim_start_matches('#')).unwrap_or(p),
                            None => p,
                        };
                        if let Some(e) = p.get("enum").and_then(|e| e.as_array()) {
                            out.insert(k.clone(), e.iter().filter_map(|s| s.as_str().map(String::from)).collect());
                        }
                    }
                }
                m.values().for_each(|x| walk(root, x, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(root, x, out)),
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    walk(schema, schema, &mut out);
    out
}

fn shipped_schema() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/config.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Spellings in prose: every "`key` (`a`, `b`)" (or "`key` (`a`, `b`: ...") of the docs whose
/// key takes spellings lists exactly the schema's (itself checked against the reader by
/// tests/config_schema.rs), and every such key of a rule, a match table or a `[napi]` table is
/// listed so somewhere (the `[global]` ones are in the reference table).
fn enum_spelling_problems(docs: &[Doc], enums: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let re = Regex::new(r"`([a-z_]+)` \((`[a-z0-9_-]+`(?:, `[a-z0-9_-]+`)*)[:)]").unwrap();
    let mut out = Vec::new();
    let mut listed = BTreeSet::new();
    for d in docs {
        let text = d.text.replace('\n', " ");
        for c in re.captures_iter(&text) {
            let Some(want) = enums.get(&c[1]) else { continue };
            listed.insert(c[1].to_string());
            let have: BTreeSet<String> = c[2].split(", ").map(|s| s.trim_matches('`').to_string()).collect();
            if &have != want {
                let line = d.text[..c.get(0).map_or(0, |m| m.start())].matches('\n').count() + 1;
                out.push(format!(
                    "{}:{line}: `{}` is documented with {have:?}, the reader takes {want:?}",
                    d.path.display(),
                    &c[1]
                ));
            }
        }
    }
    let global: BTreeSet<&str> = GLOBAL_KEYS.iter().map(|k| k.name).collect();
    for k in enums.keys().filter(|k| !listed.contains(*k) && !global.contains(k.as_str())) {
        out.push(format!("docs: `{k}` is never documented with its spellings (`{k}` (`a`, `b`))"));
    }
    out
}

/// The command line: command paths (`irqwise spread numa`) and long options, hidden ones aside.
#[derive(Debug, Default)]
struct CliItems {
    commands: BTreeSet<String>,
    options: BTreeMap<String, String>,
    /// Subcommand names under each command path (`irqwise` for the top level).
    children: BTreeMap<String, BTreeSet<String>>,
}

fn cli_items() -> CliItems {
    fn walk(cmd: &clap::Command, path: &str, out: &mut CliItems) {
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = a.get_long().filter(|l| !["help", "version"].contains(l)) {
                out.options.entry(format!("--{long}")).or_insert_with(|| path.to_string());
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let p = format!("{path} {}", sub.get_name());
            out.children.entry(path.to_string()).or_default().insert(sub.get_name().to_string());
            out.commands.insert(p.clone());
            walk(sub, &p, out);
        }
    }
    let mut out = CliItems::default();
    walk(&irqwise::cli::args::Cli::command(), "irqwise", &mut out);
    out
}

/// The commands a line of shell names: the word after each `irqwise` in a command position
/// (options skipped), with the word after it (a subcommand's).
fn commands_named(line: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let line = line.trim_start();
    let line = line.strip_prefix("$ ").or_else(|| line.strip_prefix("# ")).unwrap_or(line);
    let split = Regex::new(r"\|\||&&|[|;(`]").unwrap();
    for segment in split.split(line) {
        let mut words = segment.split_whitespace().peekable();
        while let Some(w) = words.peek() {
            if *w == "sudo" || *w == "exec" || *w == "$" || (w.contains('=') && !w.starts_with('-')) {
                words.next();
            } else {
                break;
            }
        }
        let Some(first) = words.next() else { continue };
        if first.rsplit('/').next() != Some("irqwise") {
            continue;
        }
        let mut rest = Vec::new();
        while let Some(w) = words.next() {
            if w.starts_with('-') {
                if ["--root", "--config", "--log-format"].contains(&w) {
                    words.next();
                }
                continue;
            }
            rest.push(w);
            if rest.len() == 2 {
                break;
            }
        }
        let word = Regex::new(r"^[a-z][a-z-]*$").unwrap();
        if let Some(cmd) = rest.first().filter(|w| word.is_match(w)) {
            let sub = rest.get(1).filter(|w| word.is_match(w)).map(|s| (*s).to_string());
            out.push(((*cmd).to_string(), sub));
        }
    }
    out
}

/// The command line: every command and option appears; every command named exists.
fn cli_problems(docs: &[Doc], cli: &CliItems) -> Vec<String> {
    let mut out = Vec::new();
    let all: String = docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
    let spaced = Regex::new(r"[ \t]+").unwrap().replace_all(&all, " ").into_owned();
    for c in &cli.commands {
        if !spaced.contains(c.as_str()) {
            out.push(format!("the command `{c}` is documented nowhere"));
        }
    }
    for (o, cmd) in &cli.options {
        let re = Regex::new(&format!(r"(?:^|[^A-Za-z0-9-]){}(?:$|[^A-Za-z0-9-])", regex_lite::escape(o))).unwrap();
        if !re.is_match(&all) {
            out.push(format!("the option `{o}` (of `{cmd}`) is documented nowhere"));
        }
    }
    let top = cli.children.get("irqwise").cloned().unwrap_or_default();
    for d in docs {
        let p = parse(d);
        let mut code: Vec<(usize, String)> = p.spans.clone();
        for b in p.blocks.iter().filter(|b| ["", "sh", "bash", "console", "shell"].contains(&b.lang())) {
            code.extend(b.text.lines().enumerate().map(|(i, l)| (b.first_line + i, l.to_string())));
        }
        for (n, line) in code {
            for (cmd, sub) in commands_named(&line) {
                if cmd == "help" {
                    continue;
                }
                if !top.contains(&cmd) {
                    out.push(format!("{}:{n}: `irqwise {cmd}` is not a command", d.path.display()));
                    continue;
                }
                let children = cli.children.get(&format!("irqwise {cmd}"));
                if let (Some(children), Some(sub)) = (children, sub) {
                    if !children.contains(&sub) && sub != "help" {
                        out.push(format!("{}:{n}: `irqwise {cmd} {sub}` is not a command", d.path.display()));
                    }
                }
            }
        }
    }
    out
}

/// The metrics the daemon writes: every name of `irqwise::daemon::metric_table::METRICS`.
fn metric_names() -> BTreeSet<String> {
    irqwise::daemon::metric_table::METRICS.iter().map(|m| m.name.to_string()).collect()
}

/// Names matching `pattern` in every line of every document, with `file:line`.
fn occurrences(docs: &[Doc], pattern: &Regex) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for d in docs {
        for (i, line) in d.text.lines().enumerate() {
            for m in pattern.find_iter(line) {
                out.push((format!("{}:{}", d.path.display(), i + 1), m.as_str().to_string()));
            }
        }
    }
    out
}

/// The recording rules the packages install (`record:` of `packaging/prometheus/irqwise-rules.yml`).
fn recording_rules() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join("packaging/prometheus/irqwise-rules.yml")).unwrap();
    Regex::new(r"record:\s*(\S+)").unwrap().captures_iter(&text).map(|c| c[1].to_string()).collect()
}

/// Metrics: every metric appears, every `irqwise_...` name in the docs is one (or, followed by
/// `*`, a prefix of one), and every recording rule named (`level:irqwise_...:ops`) is one of
/// `rules`.
fn metric_problems(docs: &[Doc], names: &BTreeSet<String>, rules: &BTreeSet<String>) -> Vec<String> {
    let rule = Regex::new(r"\b[a-z_]+:irqwise_[a-z_]+:[a-z_]+\b").unwrap();
    let metric = Regex::new(r"\birqwise_[a-z_]*(?:[a-z]|_\*)").unwrap();
    let mut out = Vec::new();
    let mut found = Vec::new();
    for d in docs {
        for (i, line) in d.text.lines().enumerate() {
            let at = format!("{}:{}", d.path.display(), i + 1);
            for m in rule.find_iter(line) {
                if !rules.contains(m.as_str()) {
                    out.push(format!("{at}: `{}` is not a recording rule of irqwise-rules.yml", m.as_str()));
                }
            }
            let rest = rule.replace_all(line, " ");
            found.extend(metric.find_iter(&rest).map(|m| (at.clone(), m.as_str().to_string())));
        }
    }
    let mut missing: Vec<String> = names
        .iter()
        .filter(|name| !found.iter().any(|(_, n)| n == *name))
        .map(|name| format!("the metric `{name}` is documented nowhere"))
        .collect();
    missing.append(&mut out);
    for (at, n) in &found {
        let known = match n.strip_suffix('*') {
            Some(prefix) => names.iter().any(|m| m.starts_with(prefix)),
            None => names.contains(n),
        };
        if !known {
            missing.push(format!("{at}: `{n}` is not a metric the daemon writes"));
        }
    }
    missing
}

/// A generated section of `d`: the lines from `start` through `end` equal `want` (which holds
/// both markers); the first line that differs, else nothing.
fn generated_section_problems(d: &Doc, want: &str, start: &str, end: &str) -> Vec<String> {
    let lines: Vec<&str> = d.text.lines().collect();
    let at = |m: &str| lines.iter().position(|l| l.trim() == m);
    let (Some(from), Some(to)) = (at(start), at(end)) else {
        return vec![format!("{}: no generated section ({start} ... {end})", d.path.display())];
    };
    let got = &lines[from..=to.max(from)];
    let want: Vec<&str> = want.lines().collect();
    let differ = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
    if got.len() == want.len() && differ == got.len() {
        return Vec::new();
    }
    vec![format!(
        "{}:{}: the generated section differs from the code:\n  docs: {}\n  code: {}",
        d.path.display(),
        from + differ + 1,
        got.get(differ).unwrap_or(&"(end)"),
        want.get(differ).unwrap_or(&"(end)")
    )]
}

/// `d` with its generated section (from `start` through `end`) replaced by `want`.
fn blessed(d: &Doc, want: &str, start: &str, end: &str) -> String {
    let (Some(from), Some(to)) = (d.text.find(start), d.text.find(end)) else { return d.text.clone() };
    format!("{}{}{}", &d.text[..from], want.trim_end(), &d.text[to + end.len()..])
}

/// Journal: every MESSAGE_ID appears; every 32-hex-digit word of the docs is one.
fn message_id_problems(docs: &[Doc], ids: &[(&str, &str)]) -> Vec<String> {
    let found = occurrences(docs, &Regex::new(r"\b[0-9a-f]{32}\b").unwrap());
    let mut out = Vec::new();
    for (name, id) in ids {
        if !found.iter().any(|(_, f)| f == id) {
            out.push(format!("the MESSAGE_ID {id} ({name}) is documented nowhere"));
        }
    }
    for (at, f) in &found {
        if !ids.iter().any(|(_, id)| id == f) {
            out.push(format!("{at}: {f} is not a MESSAGE_ID of daemon::catalog::ALL"));
        }
    }
    out
}

/// Files: every name of `files` (`config.schema.json`) appears as a whole name (not inside
/// `check-config.schema.json`).
fn file_name_problems(docs: &[Doc], files: &[String]) -> Vec<String> {
    let all: String = docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>().join("\n");
    files
        .iter()
        .filter(|f| {
            let re =
                Regex::new(&format!(r"(?:^|[^A-Za-z0-9_.-]){}(?:$|[^A-Za-z0-9_-])", regex_lite::escape(f))).unwrap();
            !re.is_match(&all)
        })
        .map(|f| format!("{f} is named nowhere"))
        .collect()
}

/// The map of the tests (`tests/README.md`): every file of `files` (`claims.rs`) is named in
/// backticks in the last column of a table row, and every `*.rs` named there is one of them.
fn test_map_problems(map: &Doc, files: &[String]) -> Vec<String> {
    let named = Regex::new(r"`([A-Za-z0-9_]+\.rs)`").unwrap();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (n, line) in map.text.lines().enumerate() {
        let Some(last) =
            line.trim().strip_prefix('|').and_then(|l| l.strip_suffix('|')).and_then(|l| l.rsplit('|').next())
        else {
            continue;
        };
        for name in named.captures_iter(last).map(|c| c[1].to_string()) {
            if !files.contains(&name) {
                out.push(format!("{}:{}: `{name}` is no file of tests/", map.path.display(), n + 1));
            }
            seen.insert(name);
        }
    }
    let missing = files.iter().filter(|f| !seen.contains(*f));
    out.extend(missing.map(|f| format!("{}: tests/{f} is in no row of the table", map.path.display())));
    out
}

/// The script of a runnable block: `sh` as it is, `console` its `$ ` lines (with their `\`
/// continuations).
fn runnable_script(b: &Block) -> String {
    if b.lang() != "console" {
        return b.text.clone();
    }
    let mut out = String::new();
    let mut continued = false;
    for line in b.text.lines() {
        let command = if continued { Some(line) } else { line.strip_prefix("$ ") };
        if let Some(c) = command {
            out.push_str(c);
            out.push('\n');
            continued = c.trim_end().ends_with('\\');
        }
    }
    out
}

/// Runs every runnable block; returns the problems and how many blocks ran.
fn runnable_problems(docs: &[Doc]) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut ran = 0;
    for d in docs {
        for b in parse(d).blocks.iter().filter(|b| ["sh", "console"].contains(&b.lang()) && b.has_flag("runnable")) {
            ran += 1;
            let root = acceptance::five_device_machine();
            let config = acceptance::empty_config();
            let cwd = tempfile::tempdir().unwrap();
            let script = format!(
                "set -e\nirqwise() {{ \"$IRQWISE_BIN\" --root \"$IRQWISE_ROOT\" --config \"$IRQWISE_CONFIG\" \"$@\"; }}\n{}",
                runnable_script(b)
            );
            let result = Command::new("timeout")
                .arg(Duration::from_secs(60).as_secs().to_string())
                .args(["bash", "-e", "-c", &script])
                .current_dir(cwd.path())
                .env("IRQWISE_BIN", acceptance::bin::BIN)
                .env("IRQWISE_ROOT", root.path())
                .env("IRQWISE_CONFIG", config.path())
                .output()
                .unwrap();
            if !result.status.success() {
                out.push(format!(
                    "{}:{}: the runnable ```{} block exited {:?}: {}",
                    d.path.display(),
                    b.first_line - 1,
                    b.info,
                    result.status.code(),
                    String::from_utf8_lossy(&result.stderr).trim()
                ));
            }
        }
    }
    (out, ran)
}

/// Whether `lines` match `pattern`: a pattern line `...` stands for any number of lines, `...`
/// inside a line for any text; other text matches exactly (trailing blanks aside). `Err` holds
/// the index of the first pattern line that matches nowhere after the lines before it
/// (`pattern.len()` when `lines` go on after the last), and the furthest line it was tried at.
fn match_lines(pattern: &[&str], lines: &[&str]) -> Result<(), (usize, usize)> {
    let line_re = |p: &str| {
        let parts: Vec<String> = p.trim_end().split("...").map(regex_lite::escape).collect();
        Regex::new(&format!("^{}$", parts.join(".*"))).unwrap()
    };
    let res: Vec<Option<Regex>> = pattern.iter().map(|p| (p.trim() != "...").then(|| line_re(p))).collect();
    // reach[i][j]: the first i pattern lines match the first j lines.
    let mut reach = vec![vec![false; lines.len() + 1]; pattern.len() + 1];
    reach[0][0] = true;
    for i in 0..pattern.len() {
        for j in 0..=lines.len() {
            if !reach[i][j] {
                continue;
            }
            match &res[i] {
                None => (j..=lines.len()).for_each(|k| reach[i + 1][k] = true),
                Some(re) if j < lines.len() && re.is_match(lines[j].trim_end()) => reach[i + 1][j + 1] = true,
                Some(_) => {}
            }
        }
    }
    if reach[pattern.len()][lines.len()] {
        return Ok(());
    }
    // The first pattern line not matched (`pattern.len()`: the output goes on after it) and the
    // furthest line it was tried at.
    let stuck = (0..=pattern.len()).rev().find(|i| reach[*i].iter().any(|r| *r)).unwrap_or(0);
    let tried: Vec<usize> = (0..=lines.len()).filter(|j| reach[stuck][*j]).collect();
    let at = tried.iter().rev().find(|j| **j < lines.len()).or(tried.last()).copied().unwrap_or(0);
    Err((stuck, at))
}

/// The `$ irqwise ...` commands of a block and the documented output after each, with the
/// line number of each command.
fn console_steps(b: &Block) -> Vec<(usize, Vec<String>, Vec<&str>)> {
    let mut out: Vec<(usize, Vec<String>, Vec<&str>)> = Vec::new();
    for (i, line) in b.text.lines().enumerate() {
        if let Some(cmd) = line.strip_prefix("$ ") {
            let words: Vec<String> = cmd.split_whitespace().filter(|w| *w != "sudo").map(String::from).collect();
            out.push((b.first_line + i, words, Vec::new()));
        } else if let Some(last) = out.last_mut() {
            last.2.push(line);
        }
    }
    out
}

/// Example outputs: every ` ```console fixture ` block's `$ irqwise ARGS` lines run on the
/// five-device fixture machine with an empty configuration (after one daemon pass, `run
/// --once`, when the block is also marked `after-once`), each printing what the block shows
/// below it, `...` marking what is left out. The fixture's path reads as `/`. Returns the
/// problems and how many commands ran.
fn fixture_example_problems(docs: &[Doc]) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut ran = 0;
    for d in docs {
        for b in parse(d).blocks.iter().filter(|b| b.lang() == "console" && b.has_flag("fixture")) {
            let (root, config) = (acceptance::five_device_machine(), acceptance::empty_config());
            if b.has_flag("after-once") {
                acceptance::run_ok(root.path(), config.path(), &["run", "--once", "--log-format", "text"]);
            }
            for (n, words, want) in console_steps(b) {
                let Some(("irqwise", args)) = words.split_first().map(|(a, r)| (a.as_str(), r)) else {
                    out.push(format!("{}:{n}: a fixture block runs only `irqwise ...`", d.path.display()));
                    continue;
                };
                ran += 1;
                let got = acceptance::irqwise(root.path(), config.path()).args(args).output().unwrap();
                let text = String::from_utf8_lossy(&got.stdout).replace(&root.path().display().to_string(), "");
                let lines: Vec<&str> = text.lines().collect();
                if let Err((i, j)) = match_lines(&want, &lines) {
                    out.push(format!(
                        "{}:{}: `irqwise {}` on the fixture prints no line like this one here:\n  docs: {}\n  real: {}",
                        d.path.display(),
                        n + 1 + i,
                        args.join(" "),
                        want.get(i).unwrap_or(&"(end)"),
                        lines.get(j).unwrap_or(&"(end)")
                    ));
                }
            }
        }
    }
    (out, ran)
}

/// Journal examples: every `REASON=` value shown is one the planner gives on the fixture
/// machine (numbers aside), and every `PRIORITY=N` beside a `MESSAGE_ID=X` is the `PRIORITY`
/// the message ID table gives X.
fn journal_example_problems(docs: &[Doc], reasons: &BTreeSet<String>) -> Vec<String> {
    let digits = Regex::new(r"[0-9]+").unwrap();
    let shape = |r: &str| digits.replace_all(r.trim(), "N").into_owned();
    let shapes: BTreeSet<String> = reasons.iter().map(|r| shape(r)).collect();
    let row = Regex::new(r"^\| `([0-9a-f]{32})` \|[^|]*\| ([^|]*) \|").unwrap();
    let mut priority: BTreeMap<String, String> = BTreeMap::new();
    for d in docs {
        for line in d.text.lines() {
            if let Some(c) = row.captures(line) {
                priority.insert(c[1].to_string(), c[2].trim().to_string());
            }
        }
    }
    let mut out = Vec::new();
    for d in docs {
        for b in parse(d).blocks {
            let field = |name: &str| {
                b.text
                    .lines()
                    .enumerate()
                    .find_map(|(i, l)| Some((b.first_line + i, l.trim().strip_prefix(name)?.to_string())))
            };
            if let Some((n, reason)) = field("REASON=") {
                if !shapes.contains(&shape(&reason)) {
                    out.push(format!("{}:{n}: REASON={reason} is not a reason irqwise gives", d.path.display()));
                }
            }
            if let (Some((n, p)), Some((_, id))) = (field("PRIORITY="), field("MESSAGE_ID=")) {
                let listed = priority.get(&id).map_or("(no row)", String::as_str);
                if listed.split_whitespace().next() != Some(p.as_str()) {
                    out.push(format!("{}:{n}: PRIORITY={p} for {id}, whose row says `{listed}`", d.path.display()));
                }
            }
        }
    }
    out
}

/// Every reason `irqwise plan --json` gives on the five-device fixture machine.
fn fixture_reasons() -> BTreeSet<String> {
    let (root, config) = (acceptance::five_device_machine(), acceptance::empty_config());
    let plan = acceptance::plan_json(root.path(), config.path());
    let irqs = plan["devices"].as_array().unwrap().iter().flat_map(|d| d["irqs"].as_array().unwrap().iter());
    irqs.filter_map(|p| p["reason"].as_str().map(String::from)).collect()
}

/// Tables: every row (`| ... |`) of prose belongs to a table, i.e. follows a header and its
/// `|---|` line or another row.
fn orphan_row_problems(docs: &[Doc]) -> Vec<String> {
    let delimiter = Regex::new(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$").unwrap();
    let mut out = Vec::new();
    for d in docs {
        let p = parse(d);
        let lines: BTreeMap<usize, &str> = d.text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
        let in_block: BTreeSet<usize> = p.prose.iter().map(|(n, _)| *n).collect();
        for (n, line) in &lines {
            let row = |k: usize| in_block.contains(&k) && lines.get(&k).is_some_and(|l| l.starts_with('|'));
            if !row(*n) || row(n - 1) {
                continue;
            }
            if !lines.get(&(n + 1)).is_some_and(|next| delimiter.is_match(next.trim_end())) {
                out.push(format!("{}:{n}: a table row outside any table: {line}", d.path.display()));
            }
        }
    }
    out
}

/// Numbers that belong to a run: a count of checks or tests passed, or how long a suite or
/// `.ci/run` takes, is linked (`tests/vm/RESULTS.md` records each run), never copied.
fn copied_number_problems(docs: &[Doc]) -> Vec<String> {
    let copied = Regex::new(
        r"\b[0-9][0-9,]* (checks|passed)\b|\babout [0-9]+(\.[0-9]+)? (min|minutes)\b|\.ci/run`? about [0-9]",
    )
    .unwrap();
    let mut out = Vec::new();
    for d in docs {
        for (n, line) in d.text.lines().enumerate() {
            if let Some(m) = copied.find(line) {
                out.push(format!(
                    "{}:{}: `{}` copies a run's number: link tests/vm/RESULTS.md instead",
                    d.path.display(),
                    n + 1,
                    m.as_str()
                ));
            }
        }
    }
    out
}

// ---------------------------------------------------------------- the repository's docs

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every `docs/**/*.md`, in path order.
fn repo_docs() -> Vec<Doc> {
    fn walk(repo: &Path, dir: &Path, out: &mut Vec<Doc>) {
        let Ok(entries) = std::fs::read_dir(repo.join(dir)) else { return };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for e in entries {
            let rel = dir.join(e.file_name());
            if e.path().is_dir() {
                walk(repo, &rel, out);
            } else if rel.extension().is_some_and(|x| x == "md") {
                out.push(Doc { text: std::fs::read_to_string(e.path()).unwrap(), path: rel });
            }
        }
    }
    let repo = repo();
    let mut out =
        vec![Doc { path: "README.md".into(), text: std::fs::read_to_string(repo.join("README.md")).unwrap() }];
    walk(&repo, Path::new("docs"), &mut out);
    out
}

fn assert_none(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}: {} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn links_and_anchors_resolve() {
    let docs = repo_docs();
    let count: usize = docs.iter().map(|d| links(&parse(d)).len()).sum();
    eprintln!("links in {} document(s): {count}", docs.len());
    assert_none("links", &link_problems(&repo(), &docs));
}

#[test]
fn every_config_key_is_documented_and_every_toml_block_is_read_cleanly() {
    let (problems, counts) = config_key_problems(&repo_docs(), &shipped_schema_keys());
    eprintln!("```toml blocks: {counts:?}");
    assert!(counts.checked > 0, "no ```toml block was read: {counts:?}");
    assert_none("configuration keys", &problems);
}

#[test]
fn the_global_reference_table_is_the_key_tables() {
    let docs = repo_docs();
    let Some(d) = docs.iter().find(|d| d.path == Path::new("docs/configuration.md")) else {
        panic!("no configuration.md")
    };
    assert_none("the [global] reference table", &global_table_problems(d));
}

#[test]
fn documented_spellings_are_the_readers() {
    assert_none("spellings", &enum_spelling_problems(&repo_docs(), &schema_enums(&shipped_schema())));
}

#[test]
fn every_command_and_option_is_documented_and_every_command_named_exists() {
    let cli = cli_items();
    eprintln!("commands: {}, long options: {}", cli.commands.len(), cli.options.len());
    assert!(cli.commands.len() >= 18, "{cli:?}");
    assert_none("command line", &cli_problems(&repo_docs(), &cli));
}

#[test]
fn every_metric_is_documented_and_every_metric_named_exists() {
    let names = metric_names();
    assert!(names.len() >= 30 && names.contains("irqwise_last_pass_success"), "{names:?}");
    let rules = recording_rules();
    assert!(rules.contains("instance:irqwise_degraded:bool"), "{rules:?}");
    assert_none("metrics", &metric_problems(&repo_docs(), &names, &rules));
}

#[test]
fn the_metrics_table_is_the_one_the_declared_metrics_make() {
    use irqwise::daemon::metric_table::{markdown, MARKDOWN_END, MARKDOWN_START};
    let path = repo().join("docs/monitoring.md");
    let d = Doc { path: "docs/monitoring.md".into(), text: std::fs::read_to_string(&path).unwrap() };
    if std::env::var_os("IRQWISE_BLESS").is_some() {
        std::fs::write(&path, blessed(&d, &markdown(), MARKDOWN_START, MARKDOWN_END)).unwrap();
        return;
    }
    assert_none("the metrics table", &generated_section_problems(&d, &markdown(), MARKDOWN_START, MARKDOWN_END));
}

#[test]
fn example_outputs_are_what_the_binary_prints_on_the_fixture_machine() {
    let (problems, ran) = fixture_example_problems(&repo_docs());
    eprintln!("fixture example commands run: {ran}");
    assert!(ran >= 5, "only {ran} fixture example command(s)");
    assert_none("example outputs", &problems);
}

#[test]
fn journal_examples_show_real_reasons_and_their_listed_priority() {
    let reasons = fixture_reasons();
    assert!(reasons.len() > 5, "{reasons:?}");
    assert_none("journal examples", &journal_example_problems(&repo_docs(), &reasons));
}

#[test]
fn every_table_row_is_in_a_table_and_no_run_number_is_copied() {
    let docs = repo_docs();
    let mut problems = orphan_row_problems(&docs);
    problems.extend(copied_number_problems(&docs));
    assert_none("tables and numbers", &problems);
}

#[test]
fn every_message_id_is_documented_and_every_id_named_exists() {
    assert_none("journal MESSAGE_IDs", &message_id_problems(&repo_docs(), &irqwise::daemon::catalog::ALL));
}

#[test]
fn every_test_file_is_in_the_map_of_the_tests() {
    let mut files: Vec<String> = std::fs::read_dir(repo().join("tests"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "{files:?}");
    let map =
        Doc { path: "tests/README.md".into(), text: std::fs::read_to_string(repo().join("tests/README.md")).unwrap() };
    assert_none("tests/README.md", &test_map_problems(&map, &files));
}

#[test]
fn every_json_schema_is_named() {
    let mut files: Vec<String> = std::fs::read_dir(repo().join("schemas"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".schema.json"))
        .collect();
    files.sort();
    assert!(files.len() >= 12, "{files:?}");
    assert_none("schemas/", &file_name_problems(&repo_docs(), &files));
}

#[test]
fn runnable_examples_exit_zero() {
    let (problems, ran) = runnable_problems(&repo_docs());
    eprintln!("runnable blocks run: {ran}");
    assert_none("runnable examples", &problems);
}

// ---------------------------------------------------------------- the checks can fail

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug("Interrupt mitigation per queue: `[napi]`"), "interrupt-mitigation-per-queue-napi");
    assert_eq!(slug("Kubernetes, CRI-O and tuned"), "kubernetes-cri-o-and-tuned");
    assert_eq!(slug("Where interrupts land: `irqwise report`"), "where-interrupts-land-irqwise-report");
    assert_eq!(slug("Scale: 1,024 to 8,192 CPUs"), "scale-1024-to-8192-cpus");
    assert_eq!(slug("A [link](x.md) and *emphasis*"), "a-link-and-emphasis");
    let p = parse(&doc("a.md", "# Setup\n## Setup\n```\n# Setup\n```\n### Setup\n"));
    let want: BTreeSet<String> = ["setup", "setup-1", "setup-2"].iter().map(|s| (*s).to_string()).collect();
    assert_eq!(anchors(&p), want, "a heading inside a code block is no heading");
}

#[test]
fn a_broken_link_or_anchor_is_reported_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(dir.path().join("config/irqwise.toml"), "").unwrap();
    let docs = [
        doc("README.md", "# Top\n\nSee [install](docs/install.md#from-source) and [cfg](config/irqwise.toml).\n"),
        doc(
            "docs/install.md",
            "# Install\n## From a package\n[back](../README.md#top), [gone](../README.md#bottom),\n\
             [missing](nothing.md), [here](#from-a-package), [out](../../etc/passwd)\n\
             `[not a link](nowhere.md)` and [web](https://example.com/x.md)\n[ref]: ../config/absent.toml\n",
        ),
    ];
    let p = link_problems(dir.path(), &docs);
    assert_eq!(
        p,
        [
            "README.md:3: link docs/install.md#from-source: no heading #from-source in docs/install.md",
            "docs/install.md:3: link ../README.md#bottom: no heading #bottom in README.md",
            "docs/install.md:4: link nothing.md: no file docs/nothing.md",
            "docs/install.md:4: link ../../etc/passwd points outside the repository",
            "docs/install.md:6: link ../config/absent.toml: no file config/absent.toml",
        ]
    );
}

#[test]
fn an_undocumented_or_unknown_config_key_is_reported() {
    let keys: BTreeSet<String> = ["global", "banned_cpus", "debounce", "device", "match", "driver", "node"]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    let docs = [doc(
        "docs/configuration.md",
        "Set `banned_cpus = \"1\"` and [`device.match`](#x).\n\n```toml\n[global]\nbanned_cpus = \"1\"\n\
         debounse = \"1s\"\n\n[[device]]\nmatch = { driver = \"ice\" }\nnode = \"one\"\n```\n\n\
         ```toml\n[global]\nbanned_cpus = ...\n```\n\n```toml ignore\n[package]\nname = \"x\"\n```\n",
    )];
    let (p, counts) = config_key_problems(&docs, &keys);
    assert_eq!(counts, TomlBlocks { checked: 1, not_toml: 1, ignored: 1 });
    assert_eq!(p.len(), 3, "{p:#?}");
    assert!(
        p[0].starts_with("docs/configuration.md:6: the reader refuses this ```toml block: unknown field `debounse`"),
        "{p:#?}"
    );
    assert!(
        p[1].starts_with("docs/configuration.md:10: the reader refuses this ```toml block: invalid type"),
        "{p:#?}"
    );
    assert_eq!(p[2], "schemas/config.schema.json: the configuration key `debounce` is documented nowhere");
}

#[test]
fn a_wrong_default_or_spelling_in_the_configuration_reference_is_reported() {
    let real = std::fs::read_to_string(repo().join("docs/configuration.md")).unwrap();
    let planted = real
        .replace(
            "| `debounce` | duration, `0ms` to `10s` | `\"100ms\"` |",
            "| `debounce` | duration, `0ms` to `10s` | `\"200ms\"` |",
        )
        .replace("| `log_format` | `auto`, `journal`, `text`, `json` |", "| `log_format` | `auto`, `journal`, `text` |")
        .replace("`order` (`kernel`, `hops`, `legacy`, `cores-first`)", "`order` (`cores-first`, `kernel`)");
    assert_ne!(planted, real, "the planted drifts must change the page");
    let d = doc("docs/configuration.md", &planted);
    let p = global_table_problems(&d).join("\n");
    assert!(p.contains("`debounce`: the default is documented as `\"200ms\"`, the code's is `\"100ms\"`"), "{p}");
    assert!(
        p.contains("`log_format`: the type and range is documented as `auto`, `journal`, `text`, the code's"),
        "{p}"
    );
    let p = enum_spelling_problems(&[d], &schema_enums(&shipped_schema())).join("\n");
    assert!(p.contains("`order` is documented with {\"cores-first\", \"kernel\"}, the reader takes"), "{p}");
    let without =
        doc("docs/configuration.md", &real.replace("| key | type and range | default | takes effect |", "| key |"));
    assert!(global_table_problems(&without)[0].contains("no [global] reference table"));
}

#[test]
fn an_undocumented_option_or_unknown_command_is_reported() {
    let cli = cli_items();
    assert!(cli.commands.contains("irqwise spread numa") && cli.options.contains_key("--exit-code"), "{cli:?}");
    assert!(!cli.options.contains_key("--once"), "hidden options are left out");
    let docs = [doc(
        "README.md",
        "Run `irqwise plan --json` or `irqwise --root /x placement`.\n\n```sh\n$ sudo irqwise spread numbers --node 1\n\
         systemctl reload irqwise && irqwise status\n# irqwise places interrupts\n```\n",
    )];
    let p = cli_problems(&docs, &cli);
    assert!(p.contains(&"the command `irqwise apply` is documented nowhere".to_string()), "{p:#?}");
    assert!(p.contains(&"the option `--exit-code` (of `irqwise plan`) is documented nowhere".to_string()), "{p:#?}");
    assert!(!p.iter().any(|x| x.contains("`--json`") || x.contains("`irqwise status` is")), "{p:#?}");
    assert!(p.contains(&"README.md:1: `irqwise placement` is not a command".to_string()), "{p:#?}");
    assert!(p.contains(&"README.md:4: `irqwise spread numbers` is not a command".to_string()), "{p:#?}");
    assert!(p.contains(&"README.md:6: `irqwise places` is not a command".to_string()), "{p:#?}");
}

#[test]
fn an_undocumented_or_unknown_metric_or_message_id_is_reported() {
    let names: BTreeSet<String> = ["irqwise_passes_total", "irqwise_last_pass_success", "irqwise_claims"]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    let rules: BTreeSet<String> = ["instance:irqwise_degraded:bool".to_string()].into();
    let docs = [doc(
        "docs/monitoring.md",
        "`irqwise_passes_total` and `irqwise_last_pass_*`;\nalert on irqwise_pass_total.\n\
         `instance:irqwise_degraded:bool`, `fleet:irqwise_hosts:count`\n",
    )];
    let p = metric_problems(&docs, &names, &rules);
    assert_eq!(
        p,
        [
            "the metric `irqwise_claims` is documented nowhere",
            "the metric `irqwise_last_pass_success` is documented nowhere",
            "docs/monitoring.md:3: `fleet:irqwise_hosts:count` is not a recording rule of irqwise-rules.yml",
            "docs/monitoring.md:2: `irqwise_pass_total` is not a metric the daemon writes",
        ]
    );
    let ids = [("A", "8ecce3473d944b3c8c6fde38160ae753"), ("B", "e5cb5fa2c27345efbed92da95ac4c142")];
    let docs = [doc(
        "docs/monitoring.md",
        "MESSAGE_ID=8ecce3473d944b3c8c6fde38160ae753\nMESSAGE_ID=8ecce3473d944b3c8c6fde38160ae754\n",
    )];
    let p = message_id_problems(&docs, &ids);
    assert_eq!(
        p,
        [
            "the MESSAGE_ID e5cb5fa2c27345efbed92da95ac4c142 (B) is documented nowhere",
            "docs/monitoring.md:2: 8ecce3473d944b3c8c6fde38160ae754 is not a MESSAGE_ID of daemon::catalog::ALL",
        ]
    );
}

#[test]
fn a_generated_section_edited_by_hand_is_reported_at_its_line() {
    let want = "<!-- a -->\n| x | `nic`, `storage` |\n<!-- b -->\n";
    let d = doc("docs/monitoring.md", "intro\n<!-- a -->\n| x | `nic` |\n<!-- b -->\nafter\n");
    assert_eq!(
        generated_section_problems(&d, want, "<!-- a -->", "<!-- b -->"),
        ["docs/monitoring.md:3: the generated section differs from the code:\n  docs: | x | `nic` |\n  code: | x | `nic`, `storage` |"]
    );
    let fixed = doc("docs/monitoring.md", &blessed(&d, want, "<!-- a -->", "<!-- b -->"));
    assert_eq!(fixed.text, "intro\n<!-- a -->\n| x | `nic`, `storage` |\n<!-- b -->\nafter\n");
    assert!(generated_section_problems(&fixed, want, "<!-- a -->", "<!-- b -->").is_empty());
    let none = doc("docs/monitoring.md", "no table\n");
    assert_eq!(generated_section_problems(&none, want, "<!-- a -->", "<!-- b -->").len(), 1);
}

#[test]
fn elided_example_lines_match_and_a_differing_one_is_found() {
    let lines = ["head", "a 1", "b 2", "c 3", "tail 4 ms"];
    assert_eq!(match_lines(&["head", "...", "tail ... ms"], &lines), Ok(()));
    assert_eq!(match_lines(&["head", "a 1", "...", "c 3", "tail ... ms"], &lines), Ok(()));
    assert_eq!(match_lines(&["head", "...", "b 9", "..."], &lines), Err((2, 4)));
    assert_eq!(match_lines(&["head", "a 1"], &lines), Err((2, 2)), "a missing ... is a difference");
    assert_eq!(match_lines(&["head", "x"], &lines), Err((1, 1)));
    let docs = [doc(
        "README.md",
        "```console fixture\n$ irqwise topology\nkernel 6.12.0  possible 0-15  online 0-15  isolated -\n...\n\
         $ irqwise plan --changed\n...\n24 IRQs on 6 devices: ...\n```\n",
    )];
    let (p, ran) = fixture_example_problems(&docs);
    assert_eq!(ran, 2);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].starts_with("README.md:7: `irqwise plan --changed` on the fixture prints no line like this one here:\n  docs: 24 IRQs on 6 devices: ...\n  real: "), "{p:#?}");
}

#[test]
fn an_old_reason_a_wrong_priority_an_orphan_row_and_a_copied_count_are_reported() {
    let reasons: BTreeSet<String> =
        ["queue 3: CPU 7 (home 7; least loaded in cores-first order from node 1, 1 queue there)".into()].into();
    let docs = [doc(
        "docs/systemd.md",
        "| `MESSAGE_ID` | kind | `PRIORITY` | fields |\n|---|---|---|---|\n| `8ecce3473d944b3c8c6fde38160ae753` | mapping applied | info | `IRQ` |\n\n\
         ```\n    PRIORITY=5\n    MESSAGE_ID=8ecce3473d944b3c8c6fde38160ae753\n    REASON=queue 3: CPU #3 in cores-first order from node 1\n```\n\
         ```\n    REASON=queue 12: CPU 35 (home 35; least loaded in cores-first order from node 0, 2 queue there)\n```\n\n\
         ## Options\n\n| `irqwise snapshot OUT` | copy |\n\nabout 130 checks, `.ci/run` about 38 min\n",
    )];
    assert_eq!(
        journal_example_problems(&docs, &reasons),
        [
            "docs/systemd.md:8: REASON=queue 3: CPU #3 in cores-first order from node 1 is not a reason irqwise gives",
            "docs/systemd.md:6: PRIORITY=5 for 8ecce3473d944b3c8c6fde38160ae753, whose row says `info`",
        ]
    );
    assert_eq!(
        orphan_row_problems(&docs),
        ["docs/systemd.md:16: a table row outside any table: | `irqwise snapshot OUT` | copy |"]
    );
    assert_eq!(
        copied_number_problems(&docs),
        ["docs/systemd.md:18: `130 checks` copies a run's number: link tests/vm/RESULTS.md instead"]
    );
}

#[test]
fn a_failing_runnable_block_is_reported_and_others_run() {
    let docs = [doc(
        "docs/commands.md",
        "```sh runnable\nirqwise plan --json > plan.json\ntest -s plan.json\n```\n\n\
         ```console runnable\n$ irqwise topology\nNode 0: ...\n$ irqwise check-config --strict\n```\n\n\
         ```console runnable\n$ irqwise plan --no-such-option\n```\n\n```sh\nirqwise run\n```\n",
    )];
    let (p, ran) = runnable_problems(&docs);
    assert_eq!(ran, 3);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].starts_with("docs/commands.md:12: the runnable ```console runnable block exited Some(2)"), "{p:#?}");
}

#[test]
fn a_schema_named_only_inside_another_name_is_reported() {
    let docs = [doc("docs/commands.md", "`check-config.schema.json` and plan.schema.json.\n")];
    let files = ["config.schema.json".to_string(), "check-config.schema.json".into(), "plan.schema.json".into()];
    assert_eq!(file_name_problems(&docs, &files), ["config.schema.json is named nowhere"]);
}

#[test]
fn a_test_file_missing_from_the_map_or_a_gone_one_named_is_reported() {
    let map = doc(
        "tests/README.md",
        "| behaviour | code | test files |\n|---|---|---|\n| claims | `cli/claim.rs` | `claims.rs`, `gone.rs` |\n\
         Shared: `daemon.rs` in prose does not count.\n",
    );
    let files = ["claims.rs".to_string(), "daemon.rs".into()];
    assert_eq!(
        test_map_problems(&map, &files),
        [
            "tests/README.md:3: `gone.rs` is no file of tests/",
            "tests/README.md: tests/daemon.rs is in no row of the table"
        ]
    );
}
