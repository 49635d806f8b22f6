//! prof-events: what a profiled system did, as events, before anything counts them.
//!
//! * [`layout`]: the records the Redox kernel's profiler writes into its per-CPU rings (the
//!   kernel's own module, core only, meant for `redox_syscall`);
//! * [`Event`]: one model of what happened (a sample, a context switch and why, a lost count,
//!   a thread named, an exec, a new thread, an exit, a scheme request), which the Redox rings
//!   and Linux's perf rings both become;
//! * [`RingDecoder`]: one CPU's ring, as reads of `debug:profiling-N` give it, into events:
//!   the records of upstream's profiler (kind 0) and every kind of [`layout`];
//! * [`record_words`]: events back into records, for host tests and fakes of the kernel.

pub mod layout;
mod decode;
mod encode;
mod event;

pub use decode::{Counts, RingDecoder, KERNEL_BASE, UPSTREAM_MAX_WORDS};
pub use encode::{record_words, ring_bytes};
pub use event::{Event, Ids, Sample, Switch};
