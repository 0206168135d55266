//! The kernel's `lib/sort.c` heapsort (`sort_r()`, which `group_cpus_evenly()` calls through
//! `sort()`) in its three shipped variants.
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

/// One element: `val` is a u32 compared by 32-bit wrapping difference (lib/group_cpus.c's
/// `ncpus_cmp_func()` subtracts two unsigned counts and returns the result as `int`), so
/// `u32::MAX` (the "absent" sentinel) sorts below every real count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SortEntry {
    pub id: u32,
    pub val: u32,
}

/// The kernel comparator: `x.val - y.val` wrapped to 32 bits and read as signed.
fn cmp(x: &SortEntry, y: &SortEntry) -> i32 {
    x.val.wrapping_sub(y.val) as i32
}

/// How the descent picks between two children of equal key (`sort_r()`'s leaf search: `>= 0`
/// before v6.9, `> 0` after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChildRule {
    /// R1: the left child wins ties.
    LeftOnTie,
    /// R2: the right child wins ties.
    RightOnTie,
}

/// The kernel's bottom-up sift-down of `a[root]` within the heap `a[..n]` (the inner loop of
/// `sort_r()` in lib/sort.c).
/// Guarantees: only elements on one root-to-leaf path move; the path's order is kept.
fn sift_down(a: &mut [SortEntry], root: usize, n: usize, rule: ChildRule) {
    // Descend to a leaf, always following the winning child.
    let mut b = root;
    while 2 * b + 2 < n {
        let (c, d) = (2 * b + 1, 2 * b + 2);
        let left_wins = match rule {
            ChildRule::LeftOnTie => cmp(&a[c], &a[d]) >= 0,
            ChildRule::RightOnTie => cmp(&a[c], &a[d]) > 0,
        };
        b = if left_wins { c } else { d };
    }
    if 2 * b + 2 == n {
        b = 2 * b + 1;
    }
    // Climb back to where the root element belongs.
    while b != root && cmp(&a[root], &a[b]) >= 0 {
        b = (b - 1) / 2;
    }
    // Rotate the path: everything below `root` down to `t` moves up one level.
    let t = b;
    while b != root {
        b = (b - 1) / 2;
        a.swap(b, t);
    }
}

/// Sorts `entries` ascending by `val` exactly as the kernel's heapsort `variant` would, ties
/// included (the result is a permutation of the input; equal keys end in the kernel's order).
pub(crate) fn kernel_heapsort(entries: &mut [SortEntry], variant: SortVariant) {
    match variant {
        SortVariant::S1 => sort_s1(entries),
        SortVariant::S2 => sort_double_pop(entries, false),
        SortVariant::S3 => sort_double_pop(entries, true),
    }
}

/// S1 (v5.1 .. v6.8): one pop per iteration, left child wins ties.
fn sort_s1(a: &mut [SortEntry]) {
    let mut n = a.len();
    let mut root = n / 2;
    if root == 0 {
        return;
    }
    loop {
        if root > 0 {
            root -= 1;
        } else {
            n -= 1;
            if n == 0 {
                return;
            }
            a.swap(0, n);
        }
        sift_down(a, root, n, ChildRule::LeftOnTie);
    }
}

/// S2 (v6.9 .. v6.10) and, with `final_tail`, S3 (v6.11+): double pop, right child wins ties.
fn sort_double_pop(a: &mut [SortEntry], final_tail: bool) {
    let mut n = a.len();
    let mut root = n / 2;
    let mut shift = 0u32;
    if root == 0 {
        return;
    }
    loop {
        if root > 0 {
            root -= 1 << shift;
        } else if n > 3 {
            n -= 1;
            a.swap(0, n);
            shift = u32::from(cmp(&a[1], &a[2]) <= 0);
            root = 1 << shift;
            n -= 1;
            a.swap(root, n);
        } else if !final_tail && n > 1 {
            n -= 1;
            a.swap(0, n);
        } else {
            break;
        }
        sift_down(a, root, n, ChildRule::RightOnTie);
    }
    if final_tail {
        n -= 1;
        a.swap(0, n);
        if n == 2 && cmp(&a[0], &a[1]) > 0 {
            a.swap(0, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sorts `m` equal keys and returns the original positions in sorted order.
    fn equal_keys_order(m: usize, variant: SortVariant) -> Vec<u32> {
        let mut v: Vec<SortEntry> = (0..m as u32).map(|id| SortEntry { id, val: 7 }).collect();
        kernel_heapsort(&mut v, variant);
        v.iter().map(|e| e.id).collect()
    }

    /// The order S1 leaves `m` equal keys in (worked out from `sort_r()`): `1, 2, ..., m-1, 0`.
    fn closed_s1(m: u32) -> Vec<u32> {
        if m == 1 {
            return vec![0];
        }
        (1..m).chain([0]).collect()
    }

    /// The order S2 leaves `m` equal keys in: `m=2: 1 0`; `m=3: 1 2 0`; `m>=4: 1, 3, 4, ..., m-1, 2, 0`.
    fn closed_s2(m: u32) -> Vec<u32> {
        match m {
            1 => vec![0],
            2 => vec![1, 0],
            3 => vec![1, 2, 0],
            _ => [1].into_iter().chain(3..m).chain([2, 0]).collect(),
        }
    }

    /// The order S3 leaves `m` equal keys in: even `m` as S2; odd `m>=5`: `3, 1, 4, ..., m-1, 2, 0`;
    /// `m=3: 2 1 0`.
    fn closed_s3(m: u32) -> Vec<u32> {
        match m {
            1 => vec![0],
            3 => vec![2, 1, 0],
            _ if m.is_multiple_of(2) => closed_s2(m),
            _ => [3, 1].into_iter().chain(4..m).chain([2, 0]).collect(),
        }
    }

    #[test]
    fn all_equal_keys_follow_the_closed_forms() {
        for m in 1..=12u32 {
            assert_eq!(equal_keys_order(m as usize, SortVariant::S1), closed_s1(m), "S1 m={m}");
            assert_eq!(equal_keys_order(m as usize, SortVariant::S2), closed_s2(m), "S2 m={m}");
            assert_eq!(equal_keys_order(m as usize, SortVariant::S3), closed_s3(m), "S3 m={m}");
        }
    }

    #[test]
    fn child_rule_decides_ties_below_a_smaller_root() {
        // vals (0, 1, 1), traced by hand through `sort_r()`. The first sift-down from the
        // root meets two equal children: R1 descends left and rotates [1, 0, 2], R2 descends
        // right and rotates [2, 1, 0]. S1 then pops to [0, 2, 1]; S2's single pops and S3's
        // final 2-3 step both end at [0, 1, 2].
        let input = || [SortEntry { id: 0, val: 0 }, SortEntry { id: 1, val: 1 }, SortEntry { id: 2, val: 1 }];
        for (variant, want) in
            [(SortVariant::S1, [0, 2, 1]), (SortVariant::S2, [0, 1, 2]), (SortVariant::S3, [0, 1, 2])]
        {
            let mut v = input();
            kernel_heapsort(&mut v, variant);
            assert_eq!(v.map(|e| e.id), want, "{variant:?}");
        }
    }

    #[test]
    fn empty_input_is_fine() {
        for variant in [SortVariant::S1, SortVariant::S2, SortVariant::S3] {
            kernel_heapsort(&mut [], variant);
        }
    }

    #[test]
    fn sentinel_sorts_as_minus_one() {
        for variant in [SortVariant::S1, SortVariant::S2, SortVariant::S3] {
            let mut v = [
                SortEntry { id: 0, val: 5 },
                SortEntry { id: 1, val: u32::MAX },
                SortEntry { id: 2, val: 0 },
                SortEntry { id: 3, val: u32::MAX },
            ];
            kernel_heapsort(&mut v, variant);
            let vals: Vec<u32> = v.iter().map(|e| e.val).collect();
            assert_eq!(vals, [u32::MAX, u32::MAX, 0, 5], "{variant:?}");
        }
    }

    fn variant() -> impl Strategy<Value = SortVariant> {
        prop_oneof![Just(SortVariant::S1), Just(SortVariant::S2), Just(SortVariant::S3)]
    }

    proptest! {
        #[test]
        fn sorts_ascending_and_permutes(vals in prop::collection::vec(0u32..6, 0..40), v in variant()) {
            let input: Vec<SortEntry> =
                vals.iter().enumerate().map(|(i, &val)| SortEntry { id: i as u32, val }).collect();
            let mut out = input.clone();
            kernel_heapsort(&mut out, v);
            prop_assert!(out.windows(2).all(|w| w[0].val <= w[1].val), "not sorted: {:?}", out);
            let mut ids: Vec<u32> = out.iter().map(|e| e.id).collect();
            ids.sort_unstable();
            prop_assert_eq!(ids, (0..input.len() as u32).collect::<Vec<_>>());
            prop_assert!(out.iter().all(|e| input[e.id as usize] == *e));
        }
    }
}
