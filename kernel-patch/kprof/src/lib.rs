//! The kernel side of per-process profiling for Redox, as a host-testable crate.
//!
//! `src/kprof/` is the kernel's module `kprof`, byte for byte: the kernel patch adds those
//! files as `src/kprof/` (a test checks it), and they hold only what the kernel runs (the
//! session, its tables, the stack walks, the `sys:prof_ctl` grammar and the `sys:prof_data`
//! encoder). The rest of this crate is the host's: this root (what a crate root must say, and
//! a stand-in for the one kernel constant the module reads), [`decode`](crate::decode()) (the
//! `sys:prof_data` reader `profd` and the selftest use), and [`HostKernel`] with shorthands
//! that drive the profiler the way the kernel glue does.
//!
//! What userspace (`profd`) uses:
//! - [`parse_command`] / [`Command`]: the `sys:prof_ctl` grammar (to build or check commands);
//! - [`decode`](crate::decode()) -> [`Snapshot`]: the `sys:prof_data` binary layout
//!   (documented on [`Snapshot`]);
//! - [`Snapshot::image_load_base`]: the load base of the profiled image, from its ELF.
//!
//! What the kernel uses: [`PROFILER`] ([`Profiler::sample_from`] from the timer tick and the
//! NMI, the `note_switch*` hooks from the scheduler, [`Profiler::ctl`], [`Profiler::data`]
//! and [`Profiler::exited`] from `sys:prof_ctl`, `sys:prof_data` and the exit hook, given
//! the kernel's [`KernelOps`]) and [`Snapshot::to_bytes`] for `sys:prof_data`.

#![no_std]
// The module is the kernel's, byte for byte, and written for the kernel's pinned nightly;
// lints that ask for newer std methods wait for the kernel's toolchain.
#![allow(clippy::manual_is_multiple_of)]
// Its unsafe blocks are explained in the kernel's style: one SAFETY note for a group of them.
#![allow(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

mod decode;
mod host;
mod kprof;

pub use decode::*;
pub use host::*;
pub use kprof::*;

/// Stand-in for the kernel's `USER_END_OFFSET` (its `src/arch/*/consts.rs`), from which
/// `kprof` takes [`KERNEL_SPACE_START`]: x86_64's `256 * PML4_SIZE` (aarch64's and
/// riscv64's with 48-bit addresses are the same), or 32-bit x86's 2 GiB on a 32-bit target.
#[cfg(target_pointer_width = "64")]
const USER_END_OFFSET: usize = 0x0000_8000_0000_0000;
#[cfg(not(target_pointer_width = "64"))]
const USER_END_OFFSET: usize = 0x8000_0000;
