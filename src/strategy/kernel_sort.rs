//! The kernel's `lib/sort.c` heapsort in its three shipped variants (spec §1).
//!
//! The sort is unstable and tie order decides which equal-size node or cluster gets the lower
//! group numbers, so each variant is reproduced step for step.

/// Which `lib/sort.c` the kernel has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortVariant {
    /// v5.1 .. v6.8: bottom-up heapsort, left child wins ties.
    S1,
    /// v6.9 .. v6.10: double pop, right child wins ties.
    S2,
    /// v6.11 and later: S2 plus the final 2-3 element special case.
    S3,
}

/// One element: `val` is a u32 compared by 32-bit wrapping difference (spec §1.1), so
/// `u32::MAX` (the "absent" sentinel) sorts below every real count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortEntry {
    pub id: u32,
    pub val: u32,
}

/// Sorts `entries` ascending by `val` exactly as the kernel's heapsort `variant` would.
pub fn kernel_heapsort(entries: &mut [SortEntry], variant: SortVariant) {
    let _ = (entries, variant);
    todo!("kernel heapsort")
}
