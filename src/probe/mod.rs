//! Probes of the running kernel's behaviour, from what it states itself rather than from its
//! version number: its BTF ([`btf`], `/sys/kernel/btf/vmlinux`: the enums, structs and functions
//! it was built with) and its NIC drivers' modules ([`elf`], [`decompress`]: the symbols each
//! imports). [`discover`] reads them below a root into a [`crate::kernel::facts::KernelFacts`],
//! each fact with its source; [`view`] shows them.
//!
//! The parsers are pure (bytes in, answers out) and bounded against hostile input; each probe
//! that cannot tell says `unknown`, and the version rules stand in.

pub mod btf;
pub mod decompress;
pub mod discover;
pub mod elf;
pub mod view;

#[cfg(test)]
pub(crate) mod tests {
    /// A test that cannot run here (a tool or file this machine lacks): said, or a failure under
    /// `IRQWISE_TEST_NO_SKIP=1` (CI), as `tests/common/skip.rs` does for the test binaries.
    pub(crate) fn skip_or_fail(why: &str) {
        let test = std::thread::current().name().unwrap_or("?").to_string();
        assert!(
            std::env::var("IRQWISE_TEST_NO_SKIP").as_deref() != Ok("1"),
            "{test} cannot run here ({why}), and IRQWISE_TEST_NO_SKIP=1 forbids skipping it"
        );
        eprintln!("SKIP {test}: {why}");
    }
}
