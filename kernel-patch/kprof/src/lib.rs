//! The kernel side of per-process profiling for Redox, as a host-testable crate.
//!
//! Everything lives in `src/kprof.rs`, which the kernel patch adds to the kernel as
//! `src/kprof.rs`, byte for byte (a test checks this). This root supplies what a crate root
//! needs and a module cannot say (`no_std`, the `alloc` crate), and [`HostKernel`] with the
//! shorthands below, which drive the profiler on the host the way the kernel glue does; they
//! are not part of the kernel.
//!
//! What userspace (`profd`) uses:
//! - [`parse_command`] / [`Command`]: the `sys:prof_ctl` grammar (to build or check commands);
//! - [`decode`] -> [`Snapshot`]: the `sys:prof_data` binary layout (documented on [`Snapshot`]);
//! - [`Snapshot::image_load_base`]: the load base of the profiled image, from its ELF.
//!
//! What the kernel uses: [`PROFILER`] ([`Profiler::sample_from`] from the timer tick and the
//! NMI, [`Profiler::note_switch`] from the scheduler, [`Profiler::ctl`], [`Profiler::data`]
//! and [`Profiler::exited`] from `sys:prof_ctl`, `sys:prof_data` and the exit hook, given
//! the kernel's [`KernelOps`]) and [`Snapshot::to_bytes`] for `sys:prof_data`.

#![no_std]
// The module is the kernel's, byte for byte, and written for the kernel's pinned nightly;
// lints that ask for newer std methods wait for the kernel's toolchain.
#![allow(clippy::manual_is_multiple_of)]
// Its unsafe blocks are explained in the kernel's style: one SAFETY note for a group of them.
#![allow(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

mod kprof;

pub use kprof::*;

/// Stand-in for the kernel's `USER_END_OFFSET` (its `src/arch/*/consts.rs`), from which
/// `kprof.rs` takes [`KERNEL_SPACE_START`]: x86_64's `256 * PML4_SIZE` (aarch64's and
/// riscv64's with 48-bit addresses are the same), or 32-bit x86's 2 GiB on a 32-bit target.
#[cfg(target_pointer_width = "64")]
const USER_END_OFFSET: usize = 0x0000_8000_0000_0000;
#[cfg(not(target_pointer_width = "64"))]
const USER_END_OFFSET: usize = 0x8000_0000;

/// A kernel for the host: every pid is a live process whose lowest executable mapping
/// starts at `exec_base` (default `Some(0)`: not known; `None`: no process is alive); an NMI
/// source that gives exactly the rate asked (as an HPET does at these rates), if `nmi`; the
/// timer's rate `timer_rate`. It has no hardware to arm, so nothing to disarm, and no other
/// CPU to answer while it waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostKernel {
    pub exec_base: Option<u64>,
    pub nmi: bool,
    pub timer_rate: u64,
}

impl Default for HostKernel {
    fn default() -> Self {
        HostKernel { exec_base: Some(0), nmi: true, timer_rate: 0 }
    }
}

impl KernelOps for HostKernel {
    fn arm_nmi(&mut self, rate: u64) -> Option<u64> {
        self.nmi.then_some(rate)
    }

    fn disarm_nmi(&mut self) {}

    fn timer_rate(&self) -> u64 {
        self.timer_rate
    }

    fn exec_base(&mut self, _pid: usize) -> Option<u64> {
        self.exec_base
    }

    fn wait(&self) {}

    fn spare_memory(&self) -> usize {
        usize::MAX
    }
}

/// Shorthands for host tests and tools: each is a `sys:prof_ctl` command, a `sys:prof_data`
/// read or the exit hook, through the kernel's own path with a [`HostKernel`].
impl Profiler {
    /// `start <pid> <capacity> [exec]` on the timer (rate 0, not known).
    pub fn start(&self, pid: usize, capacity: usize, from: CountFrom) -> Result<(), CtlError> {
        self.start_sampling(pid, capacity, from, Sampling { source: Source::Timer, rate: 0 })
    }

    /// `start` with `sampling`: an NMI source at its rate (`rate=`, so [`MIN_RATE`] ..=
    /// [`MAX_RATE`]), or the timer, whose rate the host kernel then reports as given.
    pub fn start_sampling(
        &self,
        pid: usize,
        capacity: usize,
        from: CountFrom,
        sampling: Sampling,
    ) -> Result<(), CtlError> {
        let exec = if from == CountFrom::Exec { " exec" } else { "" };
        let (rate, timer_rate) = match sampling.source {
            Source::NmiHpet => (alloc::format!(" rate={}", sampling.rate), 0),
            Source::Timer => (alloc::string::String::new(), sampling.rate),
        };
        let command = alloc::format!("start {pid} {capacity}{exec}{rate}");
        self.ctl(command.as_bytes(), &mut HostKernel { timer_rate, ..HostKernel::default() })
    }

    /// `stop`; true if a session was running (for single-threaded tests).
    pub fn stop(&self) -> bool {
        let was_running = self.state() == State::Running;
        self.ctl(b"stop", &mut HostKernel::default()).is_ok() && was_running
    }

    /// A `sys:prof_data` read, decoded.
    pub fn snapshot(&self) -> Result<Snapshot, CtlError> {
        self.data(&mut HostKernel::default())
    }

    /// The exit hook after the last context of `pid` has gone; true if that ended the session.
    pub fn process_exited(&self, pid: usize) -> bool {
        let was_profiling = self.is_profiling(pid);
        self.exited(pid, &mut HostKernel { exec_base: None, ..HostKernel::default() });
        was_profiling && self.status() == (State::Stopped, StopReason::Exit)
    }
}

impl Snapshot {
    /// Write bytes `offset..` of the encoding into `out`; returns how many were written (0 at
    /// or past the end, or without memory for the encoding), so a reader may use any buffer
    /// size and position.
    pub fn encode(&self, offset: usize, out: &mut [u8]) -> usize {
        let Ok(bytes) = self.to_bytes() else {
            return 0;
        };
        let len = bytes.len().saturating_sub(offset).min(out.len());
        if len > 0 {
            out[..len].copy_from_slice(&bytes[offset..offset + len]);
        }
        len
    }
}
