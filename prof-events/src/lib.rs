//! prof-events: what a profiled system did, as events, before anything counts them.
//!
//! * [`layout`]: the records the Redox kernel's profiler writes into its per-CPU rings (the
//!   kernel's own module, core only, the writer's half: `redox_syscall::profiling` once the
//!   patch in kernel-patch/redox_syscall lands);
//! * [`Event`]: one model of what happened (a sample, a context switch and why, a lost count,
//!   a thread named, an exec, a new thread, a scheme request, a session's start on a CPU),
//!   which the Redox rings and Linux's perf rings both become;
//! * [`RingDecoder`]: one CPU's ring, as reads of `debug:profiling-N` give it, into events:
//!   the records of upstream's profiler (kind 0) and every kind of [`layout`], with the
//!   reader's half of the layout ([`Header`], [`kind_of`], [`reason_of`], the version check);
//! * [`record_words`]: events back into records, for host tests and fakes of the kernel.

pub mod layout;
mod decode;
mod encode;
mod event;

pub use decode::{kind_of, min_words, reason_of, Counts, Header, NewerLayout, RingDecoder, KERNEL_BASE, MARKER_MASK, UPSTREAM_MAX_WORDS};
pub use encode::{record_words, ring_bytes};
pub use event::{Event, Ids, Sample, Start, Switch, Version};
