//! The host's side of the kernel: [`HostKernel`], a stand-in for the kernel glue's
//! `KernelOps`, and shorthands that drive a [`Profiler`] as the glue does (a `sys:prof_ctl`
//! command, a `sys:prof_data` read, the exit hook, a timer sample). For tests and tools; not
//! part of the kernel patch.

use crate::{
    CountFrom, CtlError, KernelOps, NmiClaim, Profiler, Sampling, Snapshot, Source, StackBuf, State,
    StopReason,
};

/// A kernel for the host: every pid is a live process whose lowest executable mapping
/// starts at `exec_base` (default `Some(0)`: not known; `None`: no process is alive); an NMI
/// source that gives exactly the rate asked (as an HPET does at these rates), if `nmi`; the
/// timer's rate `timer_rate`; a monotonic clock that reads `now` (ns). It has no hardware to
/// arm, so nothing to disarm, and no other CPU to answer while it waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostKernel {
    pub exec_base: Option<u64>,
    pub nmi: bool,
    pub timer_rate: u64,
    pub now: u64,
}

impl Default for HostKernel {
    fn default() -> Self {
        HostKernel { exec_base: Some(0), nmi: true, timer_rate: 0, now: 0 }
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

    fn now(&mut self) -> u64 {
        self.now
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
        let bytes = self.data(&mut HostKernel::default())?.to_bytes()?;
        Ok(crate::decode(&bytes).expect("the kernel's encoding decodes"))
    }

    /// A timer tick on `cpu`, interrupted at `pc` (in user mode if `user`).
    pub fn sample(&self, cpu: usize, user: bool, pc: u64) {
        self.sample_from(Source::Timer, cpu, user, pc, None);
    }

    /// A timer tick with the call stack the glue walked (its first frame is `pc`).
    pub fn sample_stack(&self, cpu: usize, user: bool, pc: u64, stack: Option<&StackBuf>) {
        self.sample_from(Source::Timer, cpu, user, pc, stack);
    }

    /// The exit hook after the last context of `pid` has gone; true if that ended the session.
    pub fn process_exited(&self, pid: usize) -> bool {
        let was_profiling = self.is_profiling(pid);
        self.exited(pid, &mut HostKernel { exec_base: None, ..HostKernel::default() });
        was_profiling && self.status() == (State::Stopped, Some(StopReason::Exit))
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

impl NmiClaim {
    /// The fires of the NMI source seen so far (its generations).
    pub fn generation(&self) -> u64 {
        self.generation.load(core::sync::atomic::Ordering::Relaxed)
    }
}
