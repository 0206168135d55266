//! The allocator's arenas: one for the whole daemon.
//!
//! glibc gives each thread that allocates an arena of its own and keeps what was freed in it.
//! Discovery reads sysfs on up to [`crate::sysfs::MAX_READERS`] short-lived threads every pass,
//! so a long-running daemon would carry one arena per reader for nothing: measured in the QEMU
//! guest (8 CPUs), `M_ARENA_MAX = 1` leaves 60-250 kB less resident after a few passes.
//! Allocation itself is not the daemon's cost (its passes are system calls), so sharing one arena
//! costs nothing measurable.

/// Limits glibc's malloc to one arena. Call before any thread starts. A no-op with other C
/// libraries; glibc's refusal (it never refuses this parameter) is ignored: it changes no
/// behaviour, only memory use.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt takes two integers and only changes malloc's tuning; M_ARENA_MAX is a
        // parameter glibc accepts at any time.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    }
}

/// Gives back to the system what the pass just ended freed: glibc keeps freed heap pages for
/// reuse, so without this the daemon's resident size between passes is its largest pass's peak
/// (on an 8,192-CPU machine the peak is the sample and plan being built, several times what it
/// keeps). Costs one walk of the free lists after each pass (tens of microseconds).
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes an integer and only releases free heap memory; it is safe to
        // call at any time from any thread.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::malloc_trim(0) };
    }
}
