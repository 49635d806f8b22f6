//! Per-process profiling: the session, its tables and the `sys:prof_*` ABI.
//!
//! These files are compiled twice, byte for byte: as the module `kprof` of the Redox kernel
//! (the kernel patch adds them as `src/kprof/`) and as the body of the host crate `kprof`,
//! which tests them and gives userspace the `sys:prof_data` layout. So they use `core` and
//! `alloc` only and know nothing of kernel types; the kernel glue (`src/scheme/sys/prof.rs`)
//! feeds them CPU numbers, pids and interrupted instruction pointers, and does what needs the
//! kernel through [`KernelOps`]. Only what the kernel runs is here: the decoder and the host's
//! shorthands are the host crate's own.
//!
//! - `session`: [`Profiler`] (one global instance, [`PROFILER`]): one session at a time, its
//!   state, pid, counters, the exact-PC table and the server labels. The sampling hooks call
//!   [`Profiler::sample_from`], lock-free and allocation-free; with no session a hook costs
//!   one relaxed atomic load ([`Profiler::is_on`]). A session started [`CountFrom::Exec`]
//!   counts nothing until its process execs, so a launcher's exec code (userspace on Redox)
//!   never lands in the profile. The control operations ([`Profiler::ctl`],
//!   [`Profiler::data`], [`Profiler::exited`]) are one critical section each.
//! - `walk`: each counted sample's frame-pointer chain ([`walk_frame_pointers`],
//!   [`walk_kernel_frame_pointers`]), given readers of memory by the glue.
//! - `stacks`: the stack tables ([`StackStore`]), sized at start, of packed stacks
//!   ([`PackedStack`]).
//! - `ctl`: [`parse_command`], the text commands written to `sys:prof_ctl`.
//! - `data`: [`Snapshot`], what `sys:prof_data` returns, and its encoder.
//! - `clock`: the session's threads by the clock ([`Profiler::note_switch_out`],
//!   [`Profiler::note_switch_in`] from the scheduler): on a CPU, preempted, blocked, and the
//!   wait sites of their blocks with their times; [`ClockSnapshot`] for `sys:prof_clock`.
//! - `tree`: the processes a `children` session follows (its process's descendants, each by
//!   image: [`owner_key`]), learnt from the address-space hook ([`Profiler::note_new_image`]).
//! - `nmi`: which NMIs are the NMI source's ([`NmiClaim`], exact, from the HPET's interrupt
//!   status), and its rules for the comparator and the I/O APIC input ([`nmi_input`]).

// The clock (its hooks: the scheduler's switches, scheme calls, `sys:prof_clock`).
mod clock;
mod ctl;
mod data;
mod session;
// The kernel samples (and so fills stack tables) only in its x86 timer handlers and its x86_64
// NMI handler, and walks stacks only on x86_64: elsewhere it compiles these without calling
// them.
#[cfg_attr(
    not(any(target_arch = "x86", target_arch = "x86_64")),
    allow(dead_code)
)]
mod stacks;
mod tree;
// The NMI source (its claim and its hardware rules) is x86_64's only.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
mod nmi;
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
mod walk;

pub use clock::*;
pub use ctl::*;
pub use data::*;
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_imports))]
pub use nmi::*;
pub use session::*;
pub use stacks::*;
pub use tree::*;
pub use walk::*;

/// The profiler the kernel uses.
pub static PROFILER: Profiler = Profiler::new(COUNTER_LIMIT);
