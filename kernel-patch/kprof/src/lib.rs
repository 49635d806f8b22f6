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

extern crate alloc;

mod kprof;

pub use kprof::*;
