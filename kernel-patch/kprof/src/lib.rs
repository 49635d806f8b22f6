//! The kernel side of per-process profiling for Redox, as a host-testable crate.
//!
//! Everything lives in `src/kprof.rs`, which the kernel patch adds to the kernel as
//! `src/kprof.rs`, byte for byte (a test checks this). This root only supplies what a crate
//! root needs and a module cannot say: `no_std` and the `alloc` crate.
//!
//! What userspace (`profd`) uses:
//! - [`parse_command`] / [`Command`]: the `sys:prof_ctl` grammar (to build or check commands);
//! - [`decode`] -> [`Snapshot`]: the `sys:prof_data` binary layout (documented on [`Snapshot`]);
//! - [`Snapshot::image_load_base`]: the load base of the profiled image, from its ELF.
//!
//! What the kernel uses: [`PROFILER`] ([`Profiler::sample`] from the timer tick,
//! [`Profiler::note_switch`] from the scheduler, the control methods from `sys:prof_ctl`) and
//! [`Snapshot::to_bytes`] for `sys:prof_data`.

#![no_std]
// The module is the kernel's, byte for byte, and written for the kernel's pinned nightly;
// lints that ask for newer std methods wait for the kernel's toolchain.
#![allow(clippy::manual_is_multiple_of)]
// Its unsafe blocks are explained in the kernel's style: one SAFETY note for a group of them.
#![allow(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

mod kprof;

pub use kprof::*;
