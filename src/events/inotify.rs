//! Files whose changes re-plan (irqbalance's banned lists, the cgroup isolated partitions, the
//! claims), watched with inotify.
//!
//! Guarantees: a file watched [`WatchHow::InDirectory`] is seen however it changes (written in
//! place, replaced by a rename as editors and `sed -i` do, created, deleted), also when its
//! directory appears only later (the parent is watched for it); a file watched
//! [`WatchHow::Itself`] is seen when the kernel reports a modification of it (kernfs files report
//! only what their owner notifies; the reconcile timer covers the rest); a cgroup tree watched
//! [`WatchHow::CgroupTree`] is seen as [`super::cgroup_tree`] says. Every change becomes one
//! [`Trigger::Isolation`]; a queue overflow becomes one too. (The configuration's files have a
//! watch of their own: [`super::config_watch`].)

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::mpsc;

use super::cgroup_tree::{self, is_partition, is_partition_file, PARTITION_FILE};
use super::{EventsError, Trigger};

/// How a file is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchHow {
    /// Through its directory: every way of changing it, and its creation.
    InDirectory,
    /// The file itself, when it exists (kernfs attributes, which the kernel never replaces).
    Itself,
    /// `path` is a directory: every file in it whose name does not start with a dot (a
    /// writer's temporary file), however it changes.
    EveryFile,
    /// `path` is the top of the cgroup v2 tree: every cgroup's partition file, and cgroups
    /// created later ([`super::cgroup_tree`]).
    CgroupTree,
}

/// A file whose changes should run a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchTarget {
    pub path: PathBuf,
    pub how: WatchHow,
}

/// What one watch descriptor stands for.
#[derive(Debug, Clone)]
enum Watch {
    /// A directory holding watched files, by name (`every`: all but dot files).
    Dir { dir: PathBuf, names: BTreeSet<OsString>, every: bool },
    /// The parent of watched directories that do not exist yet.
    Parent { children: BTreeSet<PathBuf> },
    /// A watched file itself.
    File { path: PathBuf },
    /// A cgroup directory: new cgroups and partition files appear in it.
    CgroupDir { dir: PathBuf },
    /// A cgroup's `cpuset.cpus.partition`, and whether it said the cgroup is a partition.
    Partition { path: PathBuf, partition: bool },
}

/// Changes inside a watched directory that may change a watched file: every way an entry can
/// change (a watched directory removed or unmounted says so itself, `IN_IGNORED`). The
/// configuration's watch ([`super::config_watch`]) uses the same.
pub(super) fn dir_events() -> WatchFlags {
    WatchFlags::CLOSE_WRITE
        | WatchFlags::MODIFY
        | WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::ATTRIB
        | WatchFlags::ONLYDIR
}

/// The inotify source.
pub(crate) struct FileWatch {
    fd: AsyncFd<OwnedFd>,
    watches: BTreeMap<i32, Watch>,
    /// Watched names by directory, for directories that appear later.
    wanted: BTreeMap<PathBuf, BTreeSet<OsString>>,
    /// Directories whose every file is watched.
    every: BTreeSet<PathBuf>,
    /// Watches on cgroup trees (directories and partition files), at most
    /// [`cgroup_tree::MAX_WATCHES`]; whether that limit was met (said once).
    cgroup_watches: usize,
    cgroup_full: bool,
}

impl FileWatch {
    /// Sets up the watches of `targets`; a target whose directory (and its parent) does not
    /// exist, or an `Itself` file that does not exist, is not watched. Must be called inside a
    /// tokio runtime.
    pub fn open(targets: &[WatchTarget]) -> Result<FileWatch, EventsError> {
        let fd = open_instance("the inotify descriptor", EventsError::Inotify)?;
        let mut watch = FileWatch {
            fd,
            watches: BTreeMap::new(),
            wanted: BTreeMap::new(),
            every: BTreeSet::new(),
            cgroup_watches: 0,
            cgroup_full: false,
        };
        for t in targets {
            match t.how {
                WatchHow::Itself => {
                    let flags = WatchFlags::MODIFY | WatchFlags::CLOSE_WRITE | WatchFlags::ATTRIB;
                    if let Ok(wd) = inotify::add_watch(watch.fd.get_ref(), &t.path, flags) {
                        watch.watches.insert(wd, Watch::File { path: t.path.clone() });
                    }
                }
                WatchHow::EveryFile => {
                    watch.wanted.entry(t.path.clone()).or_default();
                    watch.every.insert(t.path.clone());
                }
                WatchHow::CgroupTree => {
                    watch.watch_cgroups(&t.path);
                }
                WatchHow::InDirectory => {
                    let (Some(dir), Some(name)) = (t.path.parent(), t.path.file_name()) else { continue };
                    watch.wanted.entry(dir.to_path_buf()).or_default().insert(name.to_os_string());
                }
            }
        }
        for dir in watch.wanted.keys().cloned().collect::<Vec<_>>() {
            watch.watch_dir(&dir);
        }
        Ok(watch)
    }

    /// Watches `dir` for its wanted names, or its parent for `dir`'s creation. Whether `dir`
    /// itself is now watched.
    fn watch_dir(&mut self, dir: &Path) -> bool {
        let names = self.wanted.get(dir).cloned().unwrap_or_default();
        if let Ok(wd) = inotify::add_watch(self.fd.get_ref(), dir, dir_events()) {
            let every = self.every.contains(dir);
            self.watches.insert(wd, Watch::Dir { dir: dir.to_path_buf(), names, every });
            return true;
        }
        if let Some(parent) = dir.parent() {
            let flags = WatchFlags::CREATE | WatchFlags::MOVED_TO | WatchFlags::ONLYDIR | WatchFlags::MASK_ADD;
            if let Ok(wd) = inotify::add_watch(self.fd.get_ref(), parent, flags) {
                let entry = self.watches.entry(wd).or_insert_with(|| Watch::Parent { children: BTreeSet::new() });
                if let Watch::Parent { children } = entry {
                    children.insert(dir.to_path_buf());
                }
            }
        }
        false
    }

    /// Watches the cgroups of the tree under `top` (directories and partition files), as many
    /// as [`cgroup_tree::MAX_WATCHES`] allows; the partition files found saying their cgroup is a
    /// partition (a cgroup made a partition before its watch was added).
    fn watch_cgroups(&mut self, top: &Path) -> Vec<PathBuf> {
        let room = cgroup_tree::MAX_WATCHES.saturating_sub(self.cgroup_watches);
        // Each cgroup costs up to two watches.
        let (dirs, cut) = cgroup_tree::directories(top, room / 2);
        let mut partitions = Vec::new();
        for dir in dirs {
            // Arrivals only: a removed cgroup's partition file says its own removal, and a busy
            // node removes cgroups all day.
            let flags = WatchFlags::CREATE | WatchFlags::MOVED_TO | WatchFlags::ONLYDIR;
            let Ok(wd) = inotify::add_watch(self.fd.get_ref(), &dir, flags) else { continue };
            if self.watches.insert(wd, Watch::CgroupDir { dir: dir.clone() }).is_none() {
                self.cgroup_watches += 1;
            }
            let file = dir.join(PARTITION_FILE);
            if let Some(true) = self.watch_partition(&file) {
                partitions.push(file);
            }
        }
        if cut && !self.cgroup_full {
            self.cgroup_full = true;
            tracing::warn!(
                "the cgroup tree under {} has more cgroups than irqwise watches ({} watches): partitions made in the others are seen by the reconcile timer only",
                top.display(),
                cgroup_tree::MAX_WATCHES
            );
        }
        partitions
    }

    /// Watches a partition file; whether it says its cgroup is a partition (`None`: absent or
    /// not watchable).
    fn watch_partition(&mut self, file: &Path) -> Option<bool> {
        // MODIFY alone: the kernel's notification of a state change is one, and so is a write.
        let wd = inotify::add_watch(self.fd.get_ref(), file, WatchFlags::MODIFY).ok()?;
        let partition = is_partition(file);
        if self.watches.insert(wd, Watch::Partition { path: file.to_path_buf(), partition }).is_none() {
            self.cgroup_watches += 1;
        }
        Some(partition)
    }

    /// How many paths are watched (directories, parents waiting for one, files).
    pub fn watched(&self) -> usize {
        self.watches.len()
    }

    /// Forwards a trigger per relevant change until the receiver is dropped or the descriptor
    /// fails.
    pub async fn run(mut self, tx: mpsc::Sender<Trigger>) {
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 8192];
        loop {
            let (events, failed) = match read_events(&self.fd, &mut buf).await {
                Ok(read) => read,
                Err(e) => (Vec::new(), Some(e)),
            };
            for trigger in self.take(events) {
                if tx.send(trigger).await.is_err() {
                    return;
                }
            }
            if let Some(e) = failed {
                tracing::warn!("file watch stopped: {e}; isolation changes are seen by the reconcile timer only");
                return;
            }
        }
    }

    /// The triggers of a batch of events, adding the watches of directories that appeared and
    /// dropping those the kernel removed.
    fn take(&mut self, events: Vec<Event>) -> Vec<Trigger> {
        let mut triggers = Vec::new();
        for (wd, flags, name) in events {
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                triggers.push(Trigger::Isolation { path: None });
                continue;
            }
            let Some(watch) = self.watches.get(&wd).cloned() else { continue };
            if flags.contains(ReadFlags::IGNORED) {
                self.watches.remove(&wd);
                match watch {
                    // The directory went away: wait for it to come back.
                    Watch::Dir { dir, .. } => {
                        self.watch_dir(&dir);
                    }
                    Watch::CgroupDir { .. } => self.cgroup_watches = self.cgroup_watches.saturating_sub(1),
                    // A removed partition gives its CPUs back.
                    Watch::Partition { path, partition } => {
                        self.cgroup_watches = self.cgroup_watches.saturating_sub(1);
                        if partition {
                            triggers.push(Trigger::Isolation { path: Some(path) });
                        }
                    }
                    Watch::Parent { .. } | Watch::File { .. } => {}
                }
                continue;
            }
            match watch {
                Watch::Dir { dir, names, every } => {
                    let wanted = |n: &OsString| names.contains(n) || (every && !n.as_bytes().starts_with(b"."));
                    if let Some(name) = name.filter(wanted) {
                        triggers.push(Trigger::Isolation { path: Some(dir.join(name)) });
                    }
                }
                Watch::Parent { mut children } => {
                    let Some(child) = children.iter().find(|c| name.as_deref() == c.file_name()).cloned() else {
                        continue;
                    };
                    if !self.watch_dir(&child) {
                        continue;
                    }
                    children.remove(&child);
                    if children.is_empty() {
                        let _ = inotify::remove_watch(self.fd.get_ref(), wd);
                        self.watches.remove(&wd);
                    } else {
                        self.watches.insert(wd, Watch::Parent { children });
                    }
                    // Files may have been created in it before the watch was added.
                    triggers.push(Trigger::Isolation { path: Some(child) });
                }
                Watch::File { path } => triggers.push(Trigger::Isolation { path: Some(path) }),
                Watch::CgroupDir { dir } => {
                    let Some(name) = name else { continue };
                    let created = flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO);
                    if created && flags.contains(ReadFlags::ISDIR) {
                        let found = self.watch_cgroups(&dir.join(&name));
                        triggers.extend(found.into_iter().map(|p| Trigger::Isolation { path: Some(p) }));
                    } else if created && is_partition_file(&name) {
                        // `+cpuset` enabled above: the cgroup got its partition file now.
                        let file = dir.join(&name);
                        if self.watch_partition(&file) == Some(true) {
                            triggers.push(Trigger::Isolation { path: Some(file) });
                        }
                    }
                }
                Watch::Partition { path, partition } => {
                    let now = is_partition(&path);
                    self.watches.insert(wd, Watch::Partition { path: path.clone(), partition: now });
                    // A member that stays a member changed nothing.
                    if now || partition {
                        triggers.push(Trigger::Isolation { path: Some(path) });
                    }
                }
            }
        }
        triggers
    }
}

/// One inotify event: the watch descriptor, what happened, the name in a watched directory.
pub(super) type Event = (i32, ReadFlags, Option<OsString>);

/// A new inotify instance (non-blocking, close-on-exec) registered with the tokio reactor as
/// `what`; `init_failed` says why the kernel gave none. Must be called inside a tokio runtime.
pub(super) fn open_instance(
    what: &'static str,
    init_failed: fn(std::io::Error) -> EventsError,
) -> Result<AsyncFd<OwnedFd>, EventsError> {
    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).map_err(|e| init_failed(e.into()))?;
    // SAFETY: the descriptor is an OwnedFd moved into the AsyncFd, which owns it: it stays
    // open, and `as_raw_fd` returns the same descriptor, until the AsyncFd drops.
    #[allow(unsafe_code)]
    let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
        .map_err(|e| EventsError::Register { what, source: e.into_parts().1 })?;
    Ok(fd)
}

/// Waits until `fd` is readable, then reads every event queued, in the kernel's order; with
/// them, the error that ended the read if it was not "nothing more" (the watch is then broken).
pub(super) async fn read_events(
    fd: &AsyncFd<OwnedFd>,
    buf: &mut [MaybeUninit<u8>],
) -> std::io::Result<(Vec<Event>, Option<std::io::Error>)> {
    let mut guard = fd.readable().await?;
    let mut events = Vec::new();
    let mut reader = inotify::Reader::new(guard.get_inner(), buf);
    let failed = loop {
        match reader.next() {
            Ok(e) => {
                let name = e.file_name().map(|n| std::ffi::OsStr::from_bytes(n.to_bytes()).to_os_string());
                events.push((e.wd(), e.events(), name));
            }
            Err(Errno::AGAIN) => break None,
            Err(Errno::INTR) => {}
            Err(e) => break Some(e.into()),
        }
    };
    guard.clear_ready();
    Ok((events, failed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn next(rx: &mut mpsc::Receiver<Trigger>) -> Option<Trigger> {
        tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.ok().flatten()
    }

    #[tokio::test]
    async fn edits_renames_and_late_directories_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().join("etc");
        std::fs::create_dir_all(etc.join("default")).unwrap();
        let default = etc.join("default/irqbalance");
        let sysconfig = etc.join("sysconfig/irqbalance");
        let targets = [
            WatchTarget { path: default.clone(), how: WatchHow::InDirectory },
            WatchTarget { path: sysconfig.clone(), how: WatchHow::InDirectory },
        ];
        let watch = FileWatch::open(&targets).unwrap();
        assert_eq!(watch.watched(), 2, "etc/default, and etc for sysconfig");
        let (tx, mut rx) = mpsc::channel(16);
        let task = tokio::spawn(watch.run(tx));

        std::fs::write(etc.join("default/other"), "x").unwrap();
        std::fs::write(&default, "IRQBALANCE_BANNED_CPULIST=2\n").unwrap();
        assert_eq!(
            next(&mut rx).await,
            Some(Trigger::Isolation { path: Some(default.clone()) }),
            "other files are not news"
        );
        while tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_ok() {}

        std::fs::write(etc.join("default/.irqbalance.tmp"), "IRQBALANCE_BANNED_CPULIST=3\n").unwrap();
        std::fs::rename(etc.join("default/.irqbalance.tmp"), &default).unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(default.clone()) }), "a rename onto it");
        while tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_ok() {}

        std::fs::create_dir(etc.join("sysconfig")).unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(etc.join("sysconfig")) }));
        std::fs::write(&sysconfig, "IRQBALANCE_BANNED_CPUS=0c\n").unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(sysconfig.clone()) }));
        task.abort();
    }

    #[tokio::test]
    async fn every_file_of_a_directory_is_seen_but_dot_files() {
        let dir = tempfile::tempdir().unwrap();
        let claims = dir.path().join("run/irqwise/claims");
        std::fs::create_dir_all(&claims).unwrap();
        let watch = FileWatch::open(&[WatchTarget { path: claims.clone(), how: WatchHow::EveryFile }]).unwrap();
        let (tx, mut rx) = mpsc::channel(16);
        let task = tokio::spawn(watch.run(tx));
        std::fs::write(claims.join(".web.123"), "cpus=4\n").unwrap();
        std::fs::rename(claims.join(".web.123"), claims.join("web")).unwrap();
        assert_eq!(
            next(&mut rx).await,
            Some(Trigger::Isolation { path: Some(claims.join("web")) }),
            "not the temp file"
        );
        while tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_ok() {}
        std::fs::remove_file(claims.join("web")).unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(claims.join("web")) }), "a removal");
        task.abort();
    }

    #[tokio::test]
    async fn partitions_made_changed_and_removed_anywhere_in_the_cgroup_tree_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("sys/fs/cgroup");
        let part = |cg: &str| top.join(cg).join(PARTITION_FILE);
        for cg in ["a", "b/c"] {
            std::fs::create_dir_all(top.join(cg)).unwrap();
            std::fs::write(part(cg), "member\n").unwrap();
        }
        let watch = FileWatch::open(&[WatchTarget { path: top.clone(), how: WatchHow::CgroupTree }]).unwrap();
        assert_eq!(watch.watched(), 6, "four directories, two partition files");
        let (tx, mut rx) = mpsc::channel(64);
        let task = tokio::spawn(watch.run(tx));
        let quiet = |rx: &mut mpsc::Receiver<Trigger>| std::iter::from_fn(|| rx.try_recv().ok()).collect::<Vec<_>>();

        std::fs::write(part("b/c"), "isolated\n").unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(part("b/c")) }), "a deep partition");
        while tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_ok() {}
        std::fs::write(part("b/c"), "member\n").unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(part("b/c")) }), "back to member");
        while tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_ok() {}
        std::fs::write(part("a"), "member\n").unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(quiet(&mut rx), [], "a member written as a member changed nothing");

        // A cgroup created later and made a partition, then removed with its partition.
        std::fs::create_dir_all(top.join("d/e")).unwrap();
        std::fs::write(part("d/e"), "isolated\n").unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(part("d/e")) }), "a new partition");
        while tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_ok() {}
        std::fs::remove_file(part("d/e")).unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(part("d/e")) }), "its removal");
        task.abort();
    }

    #[tokio::test]
    async fn a_file_watched_itself_reports_writes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cpuset.cpus.isolated");
        std::fs::write(&file, "\n").unwrap();
        let targets = [
            WatchTarget { path: file.clone(), how: WatchHow::Itself },
            WatchTarget { path: dir.path().join("absent"), how: WatchHow::Itself },
        ];
        let watch = FileWatch::open(&targets).unwrap();
        assert_eq!(watch.watched(), 1, "an absent kernfs file is not watched");
        let (tx, mut rx) = mpsc::channel(16);
        let task = tokio::spawn(watch.run(tx));
        std::fs::write(&file, "10-11\n").unwrap();
        assert_eq!(next(&mut rx).await, Some(Trigger::Isolation { path: Some(file) }));
        task.abort();
    }
}
