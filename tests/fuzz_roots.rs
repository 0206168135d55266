//! Mutation fuzzing of whole fixture roots, on stable Rust: each case copies a machine with every
//! kind of device, mutates a few of its files at random (byte and structure: truncation, NUL
//! bytes, huge and negative numbers, garbage lists, swapped files, FIFOs, links out of the root,
//! links to devices, directories in place of files, removals), then runs the real `plan` and
//! `apply` under a deadline and a 512 MB address-space limit. Neither may panic, abort, hang or
//! write outside the root; every exit is 0, 1 or 2; and whatever bytes the names hold (IRQ
//! actions and the kernel release get random control characters, DEL and C1 among them), every
//! `--json` document that is printed is valid JSON with no raw control character.
//!
//! `IRQWISE_FUZZ_CASES` (default 24; `make fuzz` runs 1,000) and `IRQWISE_FUZZ_SEED` choose the
//! cases; a failure names the seed and case to replay it.

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/schema_check.rs"]
mod schema_check;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use acceptance::*;

/// xorshift64*: a small deterministic generator, so a failing case replays from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The template machine ([`five_device_machine`]).
fn template() -> tempfile::TempDir {
    five_device_machine()
}

/// Every regular file below `root`, links not followed, sorted.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// One random mutation of one file of the root; what was done, for the failure message.
fn mutate(rng: &mut Rng, root: &Path, outside: &Path) -> String {
    let all = files(root);
    if all.is_empty() {
        return "nothing left to mutate".into();
    }
    let f = rng.pick(&all).clone();
    let rel = f.strip_prefix(root).unwrap().display().to_string();
    let text = fs::read(&f).unwrap_or_default();
    const WORDS: [&str; 14] = [
        "eth0-\u{7f}TxRx-\u{85}1",
        "\u{9b}31m\u{80}",
        "4294967295",
        "18446744073709551616",
        "-1",
        "99999999999999999999",
        "0-",
        "5-3",
        ",,",
        "0-8191,8192",
        "ffffffff,ffffffff,ffffffff",
        "(null)",
        "nvme0q4294967295",
        "\u{1b}]0;x\u{7}",
    ];
    let _ = fs::remove_file(&f);
    match rng.below(12) {
        0 => {
            let n = rng.below(text.len() + 1);
            fs::write(&f, &text[..n]).unwrap();
            format!("truncate {rel} to {n}")
        }
        1 => {
            let mut t = text;
            let at = rng.below(t.len() + 1);
            t.insert(at, 0);
            fs::write(&f, t).unwrap();
            format!("NUL into {rel} at {at}")
        }
        2 | 3 => {
            let w = rng.pick(&WORDS);
            fs::write(&f, format!("{w}\n")).unwrap();
            format!("{rel} = {w:?}")
        }
        4 => {
            let other = rng.pick(&all).clone();
            let o = fs::read(&other).unwrap_or_default();
            fs::write(&f, o).unwrap();
            format!("{rel} = content of {}", other.display())
        }
        5 => {
            assert!(Command::new("mkfifo").arg(&f).status().unwrap().success());
            format!("{rel} is a FIFO")
        }
        6 => {
            symlink(outside, &f).unwrap();
            format!("{rel} -> the outside sentinel")
        }
        7 => {
            symlink(rng.pick(&["/dev/zero", "/dev/full", "/dev/null", "/proc/self/fd/0"]), &f).unwrap();
            format!("{rel} -> a device")
        }
        8 => {
            fs::create_dir_all(&f).unwrap();
            format!("{rel} is a directory")
        }
        9 => {
            let mut t = text;
            for _ in 0..rng.below(64) {
                t.push((rng.next() & 0xff) as u8);
            }
            fs::write(&f, t).unwrap();
            format!("random bytes appended to {rel}")
        }
        10 => {
            // A name of random characters, control ones (C0, DEL, C1) and quotes among them,
            // where names are read: an IRQ's actions, or the kernel release.
            let names: Vec<&PathBuf> =
                all.iter().filter(|p| p.ends_with("actions") || p.ends_with("osrelease")).collect();
            let target = if names.is_empty() { f.clone() } else { (*rng.pick(&names)).clone() };
            let name: String = (0..=rng.below(12))
                .map(|_| {
                    char::from_u32(
                        rng.pick(&[0x01u32, 0x1b, 0x22, 0x5c, 0x7f, 0x80, 0x85, 0x9b, 0x9f, 0x61, 0x2d]).to_owned(),
                    )
                    .unwrap_or('x')
                })
                .collect();
            fs::write(&f, &text).unwrap();
            fs::write(&target, format!("{name}\n")).unwrap();
            format!("{} = {name:?}", target.strip_prefix(root).unwrap().display())
        }
        _ => format!("{rel} removed"),
    }
}

/// Runs the binary like the hostile tests do: deadline, memory limit, exit 0, 1 or 2; the exit
/// code and stdout.
fn run_limited(root: &Path, config: &Path, args: &[&str]) -> Result<(i32, String), String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 524288; exec timeout 30 \"$@\"")
        .arg("sh")
        .arg(bin::BIN)
        .arg("--root")
        .arg(root)
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        None => Err(format!("{args:?} killed by a signal: {stderr}")),
        Some(124) => Err(format!("{args:?} hung")),
        Some(c) if c > 2 || stderr.contains("panicked") => Err(format!("{args:?} exited {c}: {stderr}")),
        Some(c) => Ok((c, String::from_utf8_lossy(&out.stdout).into_owned())),
    }
}

/// Whether `text`, a `--json` command's output, is one JSON document with no raw control
/// character but newlines.
fn valid_json(text: &str) -> Result<(), String> {
    if let Some(c) = text.chars().find(|c| c.is_control() && *c != '\n') {
        return Err(format!("raw control character {c:?}"));
    }
    serde_json::from_str::<serde_json::Value>(text).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn mutated_roots_never_crash_hang_or_write_outside() {
    let cases: usize = std::env::var("IRQWISE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24);
    let seed: u64 = std::env::var("IRQWISE_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x1e5f_0a11);
    let template = template();
    let outside = tempfile::tempdir().unwrap();
    let sentinel = outside.path().join("sentinel");
    let config = empty_config();
    let started = Instant::now();
    let mut exits = [0usize; 3];
    for case in 0..cases {
        let mut rng = Rng(seed ^ (case as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        fs::write(&sentinel, "untouched\n").unwrap();
        let root = tempfile::tempdir().unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", template.path().display()))
            .arg(root.path())
            .status()
            .unwrap();
        assert!(copied.success());
        let done: Vec<String> = (0..=rng.below(4)).map(|_| mutate(&mut rng, root.path(), &sentinel)).collect();
        for args in [&["plan", "--json"][..], &["topology", "--json"], &["apply"][..]] {
            match run_limited(root.path(), config.path(), args) {
                Ok((code, stdout)) => {
                    exits[code as usize] += 1;
                    if code == 0 && args.contains(&"--json") {
                        if let Err(e) = valid_json(&stdout) {
                            panic!("seed {seed} case {case} ({done:?}): {args:?} printed invalid JSON ({e}): {stdout}");
                        }
                        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_default();
                        let v = schema_check::violations(&schema_check::schema(args[0]), &doc);
                        assert!(
                            v.is_empty(),
                            "seed {seed} case {case} ({done:?}): {args:?} against its schema:\n{}",
                            v.join("\n")
                        );
                    }
                }
                Err(e) => panic!("seed {seed} case {case} ({done:?}): {e}"),
            }
        }
        assert_eq!(
            fs::read_to_string(&sentinel).unwrap(),
            "untouched\n",
            "seed {seed} case {case} ({done:?}): a write went outside the root"
        );
    }
    eprintln!(
        "{cases} mutated roots, {} runs (exits 0/1/2: {exits:?}) in {:.1} s",
        3 * cases,
        started.elapsed().as_secs_f64()
    );
}
