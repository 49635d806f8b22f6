//! Linux: the profd core embedded in profil, sampling with `perf_event_open`.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use prof_samplers::perf_event::{PerfConfig, PerfEventSampler};
use prof_core::{ImageLayout, Profd, ProfError, SessionState, StartRequest};

use crate::cli::Args;
use crate::profile::Profile;

/// How long an interrupted program may take to exit before its session is stopped.
const INTERRUPT_GRACE: Duration = Duration::from_millis(500);

pub struct Profiler {
    profd: Profd<PerfEventSampler>,
    uid: u32,
    /// `--off-cpu`: the probes' rate.
    off_cpu: Option<u64>,
}

impl Profiler {
    /// The sampler as the options ask: `-F`, `-g`, `--children`, `--off-cpu`, and `--kernel`
    /// (keep the kernel-mode samples' addresses where they will be named: by default, where
    /// `/proc/kallsyms` shows them).
    pub fn new(program: &Path, args: &Args) -> io::Result<Profiler> {
        // --requests where the kernel refuses the system calls' tracepoints: what the off-CPU
        // looks see stands in for them (the Requests section says so).
        let off_cpu = args.off_cpu || (args.requests && prof_samplers::syscalls::available().is_err());
        let config = PerfConfig {
            frequency_hz: args.frequency_hz,
            program: program.to_path_buf(),
            call_graph: args.call_graph,
            children: args.children,
            kernel_samples: args.kernel.for_live().file.is_some(),
            off_cpu,
            requests: args.requests.then_some(prof_samplers::syscalls::SyscallTracer::open),
        };
        let sampler = PerfEventSampler::new(config)?;
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        Ok(Profiler { profd: Profd::new(sampler), uid, off_cpu: off_cpu.then_some(args.frequency_hz) })
    }

    /// `profile(pid, start, end, interval)`.
    pub fn start(&mut self, req: StartRequest, image: &ImageLayout) -> Result<(), ProfError> {
        self.profd.profile(self.uid, req, image)
    }

    /// Collect samples until the session ends (the program exits, or a counter overflows).
    /// After Ctrl-C (or SIGTERM, SIGHUP) the program has a moment to exit; if it is still
    /// running then, the session is stopped (reason request) and the report is of what ran.
    /// With a `deadline` (`-t`), the session is stopped then. An attached process is not
    /// profil's to stop: Ctrl-C ends its session at once.
    pub fn wait_for_end(&mut self, attached: bool, deadline: Option<Instant>) -> Result<(), ProfError> {
        while self.profd.state() == SessionState::Running && crate::interrupt::caught().is_none() {
            let timeout_ms = match deadline {
                None => -1,
                Some(d) if Instant::now() >= d => break,
                Some(d) => d.saturating_duration_since(Instant::now()).as_millis().min(1000) as i32 + 1,
            };
            self.profd.sampler().wait(timeout_ms).map_err(|e| ProfError::failed("poll", &e))?;
            self.profd.pump()?;
        }
        // Interrupted: give the program a moment to exit (a deadline stops at once).
        let interrupted = crate::interrupt::caught().is_some() && !attached;
        let grace = Instant::now() + if interrupted { INTERRUPT_GRACE } else { Duration::ZERO };
        while self.profd.state() == SessionState::Running && Instant::now() < grace {
            self.profd.sampler().wait(10).map_err(|e| ProfError::failed("poll", &e))?;
            self.profd.pump()?;
        }
        self.profd.stop(self.uid)
    }

    /// CPU time profil spent unwinding stacks while the program ran (`-g` dwarf).
    pub fn unwind_time(&self) -> Duration {
        self.profd.sampler().unwind_time()
    }

    /// `getprofile()` and the exact samples behind it; `program` names the profiled program.
    pub fn profile(&mut self, program: &str) -> Result<Profile, ProfError> {
        let counts_kernel = self.profd.sampler().counts_kernel().unwrap_or(false);
        let session = self.profd.session(self.uid)?.ok_or(ProfError::failed_at("no session to read"))?;
        let mut p = Profile::from_session(session, program, counts_kernel, self.profd.sampler().records_stacks());
        // The kernel it ran on: a saved run's kernel samples are named by this boot's alone.
        p.parts_mut().source.kernel = crate::kernel::running();
        p.parts_mut().clock.off_cpu = self.off_cpu.map(|rate| crate::profile::OffCpu { rate, problem: session.clock.probe_problem.clone(), kernel: false });
        // Without --off-cpu no switch is recorded: the threads' accounts would read "on a
        // CPU" throughout.
        if p.clock().off_cpu.is_none() {
            p.parts_mut().clock.threads.clear();
        }
        // A thread no look saw (it began and ended between two) ran at least what its ticks
        // stand for: a tick per 1 / rate s of CPU time.
        if let Some(rate) = self.off_cpu.filter(|&r| r > 0) {
            let parts = p.parts_mut();
            for t in parts.clock.threads.iter_mut().filter(|t| t.unknown > 0) {
                let ticks = parts.by_thread.iter().find(|b| b.tid == t.tid).map_or(0, |b| b.samples.iter().map(|s| s.1).sum::<u64>());
                t.ran_at_least(ticks.saturating_mul(1_000_000_000) / rate);
            }
        }
        Ok(p)
    }
}
