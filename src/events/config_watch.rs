//! `run --watch-config`: what the configuration's loader reads, watched with inotify.
//!
//! Guarantees: the watched set is derived from what the loader reads (the main file, each
//! drop-in directory, and each drop-in in it as [`ConfigWatchSpec::dropin_name`], the loader's
//! own rule, names them), each path resolved component by component as the kernel resolves
//! it, symbolic links followed: every directory in which a name is looked up is watched for
//! that name, and each drop-in directory's resolved target for every drop-in name. So any
//! change of what the loader would read (a file edited in place or renamed over, created or
//! removed; a drop-in directory made after start, removed and made again, renamed into place;
//! a link re-pointed, a link's target edited; a Kubernetes ConfigMap's `..data` swap) is a
//! [`Trigger::Config`]. Before each trigger the watches are established again from the paths
//! as they are now, so the reload that follows reads nothing the new watches do not cover. A
//! queue overflow (events lost) is "anything changed": a trigger, the watches established
//! again. Not seen: a filesystem mounted over a watched path (no directory entry changes).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::inotify::{self, ReadFlags};
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;

use super::inotify::{dir_events, open_instance, read_events, Event};
use super::{EventsError, Trigger};

/// What [`EventsError::Register`] names when the watch's descriptor cannot be registered.
pub(crate) const DESCRIPTOR: &str = "the configuration's inotify descriptor";

/// The most symbolic links followed resolving one path (the kernel's own limit): a loop ends.
const MAX_LINKS: usize = 40;

/// What the loader reads: the main file and the drop-in directories, and its rule for the
/// names of drop-ins (passed in: the loader stands on a floor above the event sources).
#[derive(Debug, Clone)]
pub struct ConfigWatchSpec {
    pub main: PathBuf,
    pub dropin_dirs: Vec<PathBuf>,
    /// Whether the loader reads a file of this name in a drop-in directory.
    pub dropin_name: fn(&OsStr) -> bool,
}

impl PartialEq for ConfigWatchSpec {
    fn eq(&self, other: &Self) -> bool {
        self.main == other.main
            && self.dropin_dirs == other.dropin_dirs
            && std::ptr::fn_addr_eq(self.dropin_name, other.dropin_name)
    }
}

impl Eq for ConfigWatchSpec {}

/// What a change in one directory must be about to matter.
#[derive(Debug, Clone, Default)]
struct Interest {
    /// The names looked up in it.
    names: BTreeSet<OsString>,
    /// It is a drop-in directory: every drop-in name matters too.
    dropins: bool,
}

/// The directories to watch, and what for.
#[derive(Debug, Default)]
struct Wanted(BTreeMap<PathBuf, Interest>);

impl Wanted {
    /// What the loader reads under `spec` now: every lookup of resolving the main file, each
    /// drop-in directory and each drop-in it holds.
    fn of(spec: &ConfigWatchSpec) -> Wanted {
        let mut wanted = Wanted::default();
        wanted.resolve(&spec.main);
        for dir in &spec.dropin_dirs {
            let Some(real) = wanted.resolve(dir) else { continue };
            wanted.0.entry(real.clone()).or_default().dropins = true;
            let Ok(entries) = std::fs::read_dir(&real) else { continue };
            for name in entries.flatten().map(|e| e.file_name()).filter(|n| (spec.dropin_name)(n)) {
                wanted.resolve(&real.join(name));
            }
        }
        wanted
    }

    /// Resolves `path` as the kernel does, component by component, following symbolic links
    /// (at most [`MAX_LINKS`]), noting each name looked up and the directory it is looked up
    /// in; the resolved path, when every component exists. A missing component ends the walk:
    /// its creation is seen in the directory noted last.
    fn resolve(&mut self, path: &Path) -> Option<PathBuf> {
        let mut rest = steps(&std::path::absolute(path).ok()?);
        let mut at = PathBuf::from("/");
        let mut links = 0;
        while let Some(step) = rest.pop() {
            match step {
                Step::Root => at = PathBuf::from("/"),
                // `at` holds no link: its parent is the one `..` leads to.
                Step::Up => {
                    at.pop();
                }
                Step::Name(name) => {
                    let next = at.join(&name);
                    self.0.entry(at.clone()).or_default().names.insert(name);
                    let meta = std::fs::symlink_metadata(&next).ok()?;
                    if !meta.file_type().is_symlink() {
                        at = next;
                        continue;
                    }
                    links += 1;
                    if links > MAX_LINKS {
                        return None;
                    }
                    // The target, relative to `at`, is resolved before the rest.
                    rest.extend(steps(&std::fs::read_link(&next).ok()?));
                }
            }
        }
        Some(at)
    }
}

/// One step of a path's resolution.
enum Step {
    Root,
    Up,
    Name(OsString),
}

/// The steps of `path`, last first (a stack: a link's target is pushed on top of the rest).
fn steps(path: &Path) -> Vec<Step> {
    let step = |c: Component<'_>| match c {
        Component::RootDir | Component::Prefix(_) => Some(Step::Root),
        Component::ParentDir => Some(Step::Up),
        Component::CurDir => None,
        Component::Normal(name) => Some(Step::Name(name.to_os_string())),
    };
    path.components().rev().filter_map(step).collect()
}

/// A watched directory: its path (as first wanted) and what matters in it.
#[derive(Debug, Clone)]
struct Watched {
    dir: PathBuf,
    interest: Interest,
}

/// The watches in force, by descriptor.
#[derive(Debug)]
struct Watches {
    by_wd: BTreeMap<i32, Watched>,
    dropin_name: fn(&OsStr) -> bool,
}

impl Watches {
    /// Whether an event changes what the loader reads, as the trigger that says so: an
    /// overflow (anything may have changed), a watched directory gone, or a change of a name
    /// looked up in it or of a drop-in in a drop-in directory.
    fn change(&self, (wd, flags, name): &Event) -> Option<Trigger> {
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            return Some(Trigger::Config { path: None });
        }
        // A descriptor not (or no longer) in force: the leftovers of one removed on a rewatch.
        let watched = self.by_wd.get(wd)?;
        if flags.contains(ReadFlags::IGNORED) {
            return Some(Trigger::Config { path: Some(watched.dir.clone()) });
        }
        let name = name.as_ref()?;
        let interest = &watched.interest;
        let matters = interest.names.contains(name) || (interest.dropins && (self.dropin_name)(name));
        matters.then(|| Trigger::Config { path: Some(watched.dir.join(name)) })
    }
}

/// The configuration's inotify source.
pub(crate) struct ConfigWatch {
    fd: AsyncFd<OwnedFd>,
    spec: ConfigWatchSpec,
    watches: Watches,
    /// Directories that could not be watched for another reason than being absent (said once
    /// until they can be).
    failed: BTreeSet<PathBuf>,
}

impl ConfigWatch {
    /// Opens an inotify instance of its own and watches what the loader reads under `spec`.
    /// Must be called inside a tokio runtime.
    pub fn open(spec: ConfigWatchSpec) -> Result<ConfigWatch, EventsError> {
        let fd = open_instance(DESCRIPTOR, EventsError::ConfigWatch)?;
        let watches = Watches { by_wd: BTreeMap::new(), dropin_name: spec.dropin_name };
        let mut watch = ConfigWatch { fd, spec, watches, failed: BTreeSet::new() };
        watch.rewatch();
        Ok(watch)
    }

    /// How many directories are watched.
    pub fn watched(&self) -> usize {
        self.watches.by_wd.len()
    }

    /// Establishes the watches from what the loader reads now: watches every wanted directory
    /// that exists (one descriptor per directory, what is wanted of it merged), and removes
    /// the watches no longer wanted.
    fn rewatch(&mut self) {
        let mut by_wd: BTreeMap<i32, Watched> = BTreeMap::new();
        for (dir, interest) in Wanted::of(&self.spec).0 {
            let wd = match inotify::add_watch(self.fd.get_ref(), &dir, dir_events()) {
                Ok(wd) => wd,
                // Absent, or not a directory: its parent's watch sees it made.
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => continue,
                Err(e) => {
                    if self.failed.insert(dir.clone()) {
                        tracing::warn!(
                            "cannot watch {} for configuration changes: {e}; changes there are applied by `irqwise reload`",
                            crate::text::printable(&dir.display().to_string())
                        );
                    }
                    continue;
                }
            };
            self.failed.remove(&dir);
            let watched = by_wd.entry(wd).or_insert_with(|| Watched { dir, interest: Interest::default() });
            watched.interest.names.extend(interest.names);
            watched.interest.dropins |= interest.dropins;
        }
        for wd in self.watches.by_wd.keys().filter(|wd| !by_wd.contains_key(wd)) {
            // Already gone when its directory was removed.
            let _ = inotify::remove_watch(self.fd.get_ref(), *wd);
        }
        self.watches.by_wd = by_wd;
    }

    /// The trigger of a batch of events, if any changes what the loader reads; the watches are
    /// then established again first.
    fn take(&mut self, events: &[Event]) -> Option<Trigger> {
        let trigger = events.iter().find_map(|e| self.watches.change(e))?;
        if let Trigger::Config { path } = &trigger {
            let what = path.as_ref().map_or_else(|| "events lost".into(), |p| p.display().to_string());
            tracing::debug!(
                "configuration changed ({}): watching again, then reloading",
                crate::text::printable(&what)
            );
        }
        self.rewatch();
        Some(trigger)
    }

    /// Forwards one trigger per batch of events that changes the configuration, until the
    /// receiver is dropped or the descriptor fails.
    pub async fn run(mut self, tx: mpsc::Sender<Trigger>) {
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 8192];
        loop {
            let (events, failed) = match read_events(&self.fd, &mut buf).await {
                Ok(read) => read,
                Err(e) => (Vec::new(), Some(e)),
            };
            if let Some(trigger) = self.take(&events) {
                if tx.send(trigger).await.is_err() {
                    return;
                }
            }
            if let Some(e) = failed {
                tracing::warn!(
                    "configuration watch stopped: {e}; configuration changes are applied by `irqwise reload` only"
                );
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn toml(name: &OsStr) -> bool {
        Path::new(name).extension().is_some_and(|e| e == "toml")
    }

    fn spec(base: &Path) -> ConfigWatchSpec {
        ConfigWatchSpec {
            main: base.join("etc/irqwise/irqwise.toml"),
            dropin_dirs: vec![base.join("etc/irqwise/conf.d")],
            dropin_name: toml,
        }
    }

    fn names(wanted: &Wanted, dir: &Path) -> Vec<String> {
        let interest = wanted.0.get(dir).cloned().unwrap_or_default();
        interest.names.iter().map(|n| n.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn a_configmap_layout_is_watched_through_its_links() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let etc = base.join("etc/irqwise");
        std::fs::create_dir_all(etc.join("..2026_01")).unwrap();
        std::fs::write(etc.join("..2026_01/irqwise.toml"), "").unwrap();
        symlink("..2026_01", etc.join("..data")).unwrap();
        symlink("..data/irqwise.toml", etc.join("irqwise.toml")).unwrap();
        let wanted = Wanted::of(&spec(&base));
        assert_eq!(names(&wanted, &etc), ["..2026_01", "..data", "conf.d", "irqwise.toml"]);
        assert_eq!(names(&wanted, &etc.join("..2026_01")), ["irqwise.toml"]);
        assert_eq!(names(&wanted, &base), ["etc"], "every directory of the path, up to /");
        assert!(wanted.0.contains_key(Path::new("/")));
        assert!(!wanted.0.contains_key(&etc.join("conf.d")), "absent: seen made in etc/irqwise");
    }

    #[test]
    fn a_drop_in_directory_link_watches_its_target_for_every_drop_in() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let etc = base.join("etc/irqwise");
        std::fs::create_dir_all(base.join("fleet")).unwrap();
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(base.join("fleet/.50-a.toml"), "").unwrap();
        std::fs::write(base.join("fleet/notes.txt"), "").unwrap();
        symlink("../../fleet", etc.join("conf.d")).unwrap();
        let wanted = Wanted::of(&spec(&base));
        let fleet = wanted.0.get(&base.join("fleet")).cloned().unwrap_or_default();
        assert!(fleet.dropins, "{wanted:?}");
        assert_eq!(names(&wanted, &base.join("fleet")), [".50-a.toml"], "what the rule names, dot or not");
        assert_eq!(names(&wanted, &etc), ["conf.d", "irqwise.toml"]);
        assert!(names(&wanted, &base).contains(&"fleet".to_string()), "the link's target's lookup");
    }

    #[test]
    fn a_link_loop_ends() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let etc = base.join("etc/irqwise");
        std::fs::create_dir_all(&etc).unwrap();
        symlink("b.toml", etc.join("irqwise.toml")).unwrap();
        symlink("irqwise.toml", etc.join("b.toml")).unwrap();
        let wanted = Wanted::of(&spec(&base));
        assert_eq!(names(&wanted, &etc), ["b.toml", "conf.d", "irqwise.toml"]);
    }

    #[test]
    fn an_overflow_is_a_change_of_everything_and_leftovers_are_none() {
        let watches = Watches { by_wd: BTreeMap::new(), dropin_name: toml };
        assert_eq!(watches.change(&(-1, ReadFlags::QUEUE_OVERFLOW, None)), Some(Trigger::Config { path: None }));
        assert_eq!(watches.change(&(7, ReadFlags::IGNORED, None)), None, "a descriptor removed on a rewatch");
    }

    #[test]
    fn only_the_names_looked_up_and_drop_ins_matter() {
        let interest =
            |names: &[&str], dropins| Interest { names: names.iter().map(OsString::from).collect(), dropins };
        let mut by_wd = BTreeMap::new();
        by_wd.insert(1, Watched { dir: "/etc/irqwise".into(), interest: interest(&["irqwise.toml", "conf.d"], false) });
        by_wd.insert(2, Watched { dir: "/etc/irqwise/conf.d".into(), interest: interest(&["..data"], true) });
        let watches = Watches { by_wd, dropin_name: toml };
        let change = |wd, name: &str| watches.change(&(wd, ReadFlags::CREATE, Some(OsString::from(name))));
        let at = |p: &str| Some(Trigger::Config { path: Some(PathBuf::from(p)) });
        assert_eq!(change(1, "conf.d"), at("/etc/irqwise/conf.d"));
        assert_eq!(change(1, ".irqwise.toml.swp"), None);
        assert_eq!(change(1, "other.toml"), None, "not a drop-in directory");
        assert_eq!(change(2, ".60-local.toml"), at("/etc/irqwise/conf.d/.60-local.toml"));
        assert_eq!(change(2, "..data"), at("/etc/irqwise/conf.d/..data"));
        assert_eq!(change(2, "..data_tmp"), None);
        assert_eq!(watches.change(&(2, ReadFlags::IGNORED, None)), at("/etc/irqwise/conf.d"), "gone");
    }

    #[tokio::test]
    async fn an_overflow_reloads_and_watches_again() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let etc = base.join("etc/irqwise");
        std::fs::create_dir_all(&etc).unwrap();
        let mut watch = ConfigWatch::open(spec(&base)).unwrap();
        let before = watch.watched();
        // Made while its creation's event was lost.
        std::fs::create_dir(etc.join("conf.d")).unwrap();
        let overflow = (-1, ReadFlags::QUEUE_OVERFLOW, None);
        assert_eq!(watch.take(&[overflow]), Some(Trigger::Config { path: None }));
        assert_eq!(watch.watched(), before + 1, "conf.d is watched now");
    }
}
