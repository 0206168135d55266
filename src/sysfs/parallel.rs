//! Reading many small files on several threads.

/// At most this many threads read files at once in [`read_in_parallel`].
pub const MAX_READERS: usize = 8;

/// `read(item)` for every item, in order, spread over up to [`MAX_READERS`] threads (never more
/// than the CPUs available or one per item), the calling thread being one of them.
///
/// For discovery's thousands of tiny sysfs/procfs reads, whose cost is the system calls: on a big
/// machine several threads finish them several times sooner. Guarantees: the result is exactly
/// `items.iter().map(read).collect()`; `read` must not depend on the order of calls. A thread the
/// system refuses to start only means fewer helpers (the caller alone, at worst).
pub(crate) fn read_in_parallel<T: Sync, R: Send>(items: &[T], read: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let workers = MAX_READERS.min(cpus).min(items.len());
    if workers <= 1 {
        return items.iter().map(read).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Takes the next unread item until none is left; what this worker read, with indexes.
    let work = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            mine.push((i, read(item)));
        }
        mine
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..workers)
            .map_while(|_| std::thread::Builder::new().name("irqwise-read".into()).spawn_scoped(scope, work).ok())
            .collect();
        let mut all = work();
        for helper in helpers {
            // A helper only panics if `read` does; pass that panic on unchanged.
            all.extend(helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        all
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_in_parallel_keeps_order_and_every_item() {
        let items: Vec<u32> = (0..1000).collect();
        let squares = read_in_parallel(&items, |&i| u64::from(i) * u64::from(i));
        assert_eq!(squares, items.iter().map(|&i| u64::from(i) * u64::from(i)).collect::<Vec<_>>());
        assert!(read_in_parallel(&[] as &[u32], |&i| i).is_empty());
    }
}
