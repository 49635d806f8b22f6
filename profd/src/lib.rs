//! profd: the Minix profiling rules and the profiling session, independent of the OS.
//!
//! * [`layout`] — the bin arithmetic of `profile(pid, start, end, interval)` (the 1024-bin rule).
//! * [`error`] — the error codes of the spec and their errno values.
//! * [`image`] — what the rules need to know about the profiled program's text.
//! * [`session`] — the state machine: one session at a time, stop on request / exit / overflow,
//!   the last profile kept until the next start.
//! * [`ledger`] — the program's threads by the clock: on a CPU, preempted, blocked.
//! * [`prof_data`] — the `struct prof_data` of `getprofile`, and its binary encoding.
//! * [`sampler`] — the [`sampler::Sampler`] trait the OS backends implement
//!   (Linux: `perf_event_open`, Redox: the kernel's `sys:prof_*`).
//! * [`scheme`] — the `prof:` scheme's files over a session; [`ctl`] its commands and
//!   [`formats`] its text files.
//! * [`file_bytes`] — an object file's bytes, mapped from disk; [`elf_headers`] — its
//!   headers alone.
//! * `vdso` (Linux) — the vdso's image, to name and unwind code in it.

pub mod ctl;
pub mod elf_headers;
pub mod error;
pub mod file_bytes;
pub mod formats;
pub mod image;
pub mod kernel_clock;
pub mod layout;
pub mod ledger;
pub mod prof_data;
pub mod sampler;
pub mod scheme;
pub mod session;
#[cfg(target_os = "linux")]
pub mod vdso;

pub use error::ProfError;
pub use image::{ImageLayout, TextSegment};
pub use layout::{BinLayout, MAX_BINS};
pub use prof_data::ProfData;
pub use sampler::{SampleBatch, Sampler};
pub use session::{Profd, SessionState, StartRequest, StopReason};
