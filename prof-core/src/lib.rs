//! prof-core: the Minix profiling rules and the profiling session, independent of the OS.
//! Each OS's sampler is in `prof-samplers`, object files are read by `prof-objects`; the Redox
//! daemon `profd` serves a session as the `prof:` scheme's files, and `profil` embeds the
//! session on Linux.
//!
//! * [`layout`] — the bin arithmetic of `profile(pid, start, end, interval)` (the 1024-bin rule).
//! * [`error`] — the error codes of the spec and their errno values.
//! * [`image`] — what the rules need to know about the profiled program's text.
//! * [`session`] — the state machine: one session at a time, stop on request / exit / overflow,
//!   the last profile kept until the next start.
//! * [`ledger`] — the program's threads by the clock: on a CPU, preempted, blocked.
//! * [`process`] — one process's samples summed (the program's, a child's, one of `-a`'s).
//! * [`prof_data`] — the `struct prof_data` of `getprofile`, and its binary encoding.
//! * [`sample`] — a sample, the one event of a process's time on a CPU every backend hands
//!   over; the session's aggregates are sums of them.
//! * [`sampler`] — the [`sampler::Sampler`] trait the OS backends implement, and what they
//!   hand over ([`sampler::SampleBatch`]).
//! * [`ctl`] — the `prof:` scheme's commands, [`formats`] its text files and [`kernel_clock`]
//!   the clock accounts it serves (the files themselves: `profd`'s `scheme`).
//! * [`system`] — a system-wide run's record: every process, the kernel, idle (`profil -a`).
//! * [`requests`] — requests and their latencies (system calls, scheme requests), per what
//!   they went to, in bounded memory; [`requests_file`] Redox's as `prof:requests` serves them.
//! * [`timeline`] — the program's samples in time order (a window of the run, its phases).

pub mod ctl;
pub mod error;
pub mod formats;
pub mod image;
pub mod kernel_clock;
pub mod layout;
pub mod ledger;
pub mod process;
pub mod requests;
pub mod requests_file;
pub mod program_clock;
pub mod prof_data;
pub mod sample;
pub mod sampler;
pub mod session;
pub mod system;
pub mod timeline;

pub use error::ProfError;
pub use image::{ImageLayout, TextSegment};
pub use layout::{BinLayout, MAX_BINS};
pub use prof_data::ProfData;
pub use sampler::{SampleBatch, Sampler};
pub use session::{Profd, SessionState, StartRequest, StopReason};
