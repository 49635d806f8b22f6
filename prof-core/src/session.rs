//! The profiling session: `profile(pid, start, end, interval)` and `getprofile()` as a state
//! machine over a [`Sampler`].
//!
//! * One session at a time: a start while one runs is EBUSY.
//! * `pid == 0` stops the running session (if any).
//! * A session stops on request, when the profiled process exits, or when a bin counter would
//!   overflow (the tick that would overflow is not counted, as in Minix's clock handler).
//! * The last session's data stays readable until the next start.
//! * Only root or the owner of the target may start; only root or the starter may stop or read.

use std::collections::BTreeMap;

use crate::error::ProfError;
use crate::image::{ImageLayout, TextSegment};
use crate::layout::BinLayout;
use crate::process::{add_one, ProcessSamples, StackTicks};
use crate::prof_data::ProfData;
use crate::sampler::{Account, ChildBatch, CountFrom, Mapping, SampleBatch, Sampler, Sampling};
use crate::sample::{CallStack, Sample, Sampled};

/// The arguments of `profile()`, and when counting begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartRequest {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    pub interval: u64,
    /// `Now` to profile a running process; `Exec` when the caller has just started `pid` and
    /// it has yet to exec the program (only the program's own run is counted).
    pub from: CountFrom,
    /// Samples per second asked of the backend (`None`: its default).
    pub rate: Option<u64>,
    /// Follow the processes `pid` starts, to any depth (`--children`), where the backend takes
    /// that per session (Redox; Linux's sampler is built for it).
    pub children: bool,
}

pub use crate::sampler::StopReason;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// No session was ever started.
    Idle,
    Running,
    Stopped(StopReason),
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Idle => "idle",
            SessionState::Running => "running",
            SessionState::Stopped(_) => "stopped",
        }
    }
}

/// A frame of a call stack, placed: in the program's text (link-time address) or elsewhere
/// (runtime address). The address is the frame's own (the sampled address, or a return
/// address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackFrame {
    Text(u64),
    Other(u64),
    /// In the kernel (at or above [`crate::sampler::KERNEL_SPACE_START`]).
    Kernel(u64),
}

/// Runtime frames (innermost first) placed: the kernel's, the program's text (as link-time
/// addresses, its image loaded at `load_base`), or other. A return address is placed by its
/// call instruction, just before it, so a call that ends the program's text still counts as
/// the program's.
pub fn place_frames(frames: &[u64], load_base: Option<u64>, text: &TextSegment) -> Vec<StackFrame> {
    let link_address = |runtime: u64| runtime.checked_sub(load_base?).filter(|&link| text.contains(link));
    let place = |(i, &a): (usize, &u64)| {
        let back = u64::from(i > 0);
        if a >= crate::sampler::KERNEL_SPACE_START {
            return StackFrame::Kernel(a);
        }
        link_address(a.wrapping_sub(back)).map_or(StackFrame::Other(a), |link| StackFrame::Text(link + back))
    };
    frames.iter().enumerate().map(place).collect()
}

/// One sample of the program's run in time order, as clients report it: ns from the program's
/// start (to the µs: what a saved run keeps), its thread, where it was, and its stack as a
/// place among the session's stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedSample {
    pub time: u64,
    pub tid: u32,
    pub at: Placed,
    pub stack: Option<u32>,
}

/// Where a sample of the run found its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// On a CPU at this frame (a kernel frame where the backend names kernel addresses).
    Cpu(StackFrame),
    /// On a CPU in the kernel at this address, which the backend does not name (the
    /// kernel's ticks, not its samples).
    Kernel(u64),
    /// Blocked at this wait site (numbered as the session numbers them).
    Blocked(u32),
}

/// ns to the µs below.
fn to_us(ns: u64) -> u64 {
    ns - ns % 1000
}

/// The samples in time order of a process other than the program (a followed child, a daemon,
/// any process of a system-wide run) from `origin` (ns), every user address a runtime one, each
/// stack by its place in `order`; the span to its last sample.
pub fn placed_process_timeline<'a>(p: &ProcessSamples, origin: u64, order: impl Iterator<Item = &'a StackTicks>) -> (u64, Vec<PlacedSample>) {
    let t = &p.timeline;
    let Some(last) = t.entries.iter().map(|e| e.time).max() else { return (0, Vec::new()) };
    place_timeline(t, order.map(|c| c.timed), (origin, last), runtime_frame)
}

/// A runtime address of a process other than the program, placed: the kernel's, or other.
fn runtime_frame(ip: u64) -> StackFrame {
    match ip >= crate::sampler::KERNEL_SPACE_START {
        true => StackFrame::Kernel(ip),
        false => StackFrame::Other(ip),
    }
}

/// `t`'s entries in time order from `span.0` (ns), each address placed by `place` and each
/// stack by its place in a list of stacks, given as each listed stack's number among `t`'s
/// (`None`: not one of them); and the span's length.
fn place_timeline(
    t: &crate::timeline::Timeline,
    listed: impl Iterator<Item = Option<u32>>,
    (begin, end): (u64, u64),
    place: impl Fn(u64) -> StackFrame,
) -> (u64, Vec<PlacedSample>) {
    let mut places: Vec<Option<u32>> = vec![None; t.stacks.len()];
    for (at, n) in (0u32..).zip(listed) {
        if let Some(slot) = n.and_then(|n| places.get_mut(n as usize)) {
            *slot = Some(at);
        }
    }
    let stack_of = |n: Option<u32>| places.get(n? as usize).copied().flatten();
    let samples = t
        .sorted()
        .iter()
        .map(|e| PlacedSample {
            time: to_us(e.time.saturating_sub(begin)),
            tid: e.tid,
            at: match e.at {
                Sampled::User(ip) | Sampled::Kernel { ip, named: true } => Placed::Cpu(place(ip)),
                Sampled::Kernel { ip, named: false } => Placed::Kernel(ip),
                Sampled::Blocked(site) => Placed::Blocked(site),
            },
            stack: stack_of(e.stack),
        })
        .collect();
    (to_us(end.saturating_sub(begin)), samples)
}

/// uid 0 may do anything.
pub const ROOT_UID: u32 = 0;

/// A daemon that worked for the profiled program (Redox): its executable and its samples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerProfile {
    /// Its executable's path as the kernel names the process (`[exited]` if it was gone).
    pub path: String,
    /// Its samples while working for the program, each with its stack (or PC alone).
    pub samples: ProcessSamples,
    /// The requests of the program's it worked on, whole, where the backend times them.
    pub served: Vec<crate::timeline::ServedSpan>,
}

impl ServerProfile {
    /// The requests of the program's it worked on, whole, from `origin` (ns, the session's
    /// [`Session::origin`]) as [`Session::placed_waits`] times the waits, in the order they began.
    pub fn placed_served(&self, origin: u64) -> Vec<crate::timeline::ServedSpan> {
        let mut served: Vec<crate::timeline::ServedSpan> = self
            .served
            .iter()
            .map(|w| crate::timeline::ServedSpan { from: to_us(w.from.saturating_sub(origin)), to: to_us(w.to.saturating_sub(origin)), ..*w })
            .collect();
        served.sort_by_key(|w| (w.from, w.tid));
        served
    }

    pub fn ticks(&self) -> u64 {
        self.samples.stacks.values().fold(0, |n, c| n.saturating_add(c.ticks))
    }

    /// One of its samples: by its stack (or PC alone), and in time order where timed.
    fn add(&mut self, mut sample: Sample) {
        if let (None, Some(ip)) = (&sample.stack, sample.at.ip()) {
            sample.stack = Some(CallStack { frames: vec![ip], truncated: true });
        }
        self.samples.add(sample);
    }
}

/// A process the program started (directly or not), as far as the session followed it
/// (`--children`): not binned (the Minix profile is of one process), its samples exact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildProcess {
    /// The process that started it, where its start was seen.
    pub parent: Option<u32>,
    /// Its name after its last exec (the kernel's `comm`), if it exec'd: then `mappings` are
    /// all it has, else it also has what it inherited.
    pub exec: Option<String>,
    pub samples: ProcessSamples,
    /// The executable mappings it made itself.
    pub mappings: Vec<Mapping>,
    /// Its exit was seen: a process without one was still running when the session ended.
    pub exited: bool,
}

impl ChildProcess {
    /// Add what a batch saw of it. At each exec, the samples it had (the forked copy's run of
    /// its parent's code, or an earlier image's) lose their addresses: they are counted, as
    /// `[unknown]`, but never read in the image it now runs (on Redox every static program is
    /// linked at the same addresses); it is named by the image it runs last, which a chain
    /// of execs (a version manager's shims) hands its work to.
    pub fn add(&mut self, c: ChildBatch) {
        self.parent = self.parent.or(c.parent);
        if c.exec.is_some() {
            self.samples.forget_addresses();
            self.exec = c.exec;
        }
        for sample in c.samples {
            self.samples.add(sample);
        }
        self.mappings.extend(c.mappings);
        self.exited |= c.exited;
    }

    /// Its samples in time order from `origin` (ns, the session's [`Session::origin`], so the
    /// processes line up), as [`Session::placed_timeline`] places the program's, every user
    /// address a runtime one, each stack by its place in `order` (values of its `stacks`); the
    /// span to its last sample.
    pub fn placed_timeline<'a>(&self, origin: u64, order: impl Iterator<Item = &'a StackTicks>) -> (u64, Vec<PlacedSample>) {
        placed_process_timeline(&self.samples, origin, order)
    }
}

/// One session's profile: the Minix bins plus the exact samples behind them.
#[derive(Debug, Clone)]
pub struct Session {
    pub pid: u32,
    /// uid of whoever started the session.
    pub starter_uid: u32,
    pub text: TextSegment,
    pub layout: BinLayout,
    pub data: ProfData,
    /// Runtime load base of the image, once known.
    pub load_base: Option<u64>,
    /// The program's samples, exact: by address, ticks, stacks, in time order.
    pub program: ProcessSamples,
    /// Exact kernel-mode samples, where the backend sees them: kernel address -> ticks.
    pub kernel_samples: BTreeMap<u64, u64>,
    /// How the backend samples, once it said.
    pub sampling: Option<Sampling>,
    /// The session as its records time it, where the backend's records have times.
    pub record_span: Option<crate::sampler::RecordSpan>,
    /// The CPUs the backend reads samples from, where it says ([`crate::sampler::SampleBatch::rings`]).
    pub rings: Option<u64>,
    /// The records' clock's rate as the kernel stated it ([`crate::sampler::SampleBatch::clock_hz`]).
    pub clock_hz: Option<u64>,
    /// Samples of processes the program started, by pid: not in the profile.
    pub children: BTreeMap<u32, u64>,
    /// Those processes' own profiles, where the backend follows them (`--children`).
    pub processes: BTreeMap<u32, ChildProcess>,
    pub lost: u64,
    /// Executable mappings of the process (program and shared objects).
    pub mappings: Vec<Mapping>,
    /// Execs of the process after the profiled program's (the bins stay of the first); the
    /// new images are among `mappings`.
    pub later_execs: u32,
    /// The backend's records are typed ([`crate::sampler::SampleBatch::typed_records`]).
    pub typed_records: bool,
    /// Processes the program started that the backend could not follow (`--children`).
    pub children_missed: u64,
    /// Daemons that worked for the program, by pid, and the ticks outside the program.
    pub servers: BTreeMap<u32, ServerProfile>,
    pub account: Account,
    pub state: SessionState,
    /// The program's threads by the clock, their waits, the daemons' work under them.
    pub clock: crate::program_clock::ProgramClock,
    /// Redox: the kernel's own clock account of the program's threads, the latest read.
    pub kernel_clock: Option<crate::kernel_clock::ClockReport>,
    /// The program's samples by thread (Linux): tid -> runtime address -> samples; names.
    pub thread_samples: BTreeMap<u32, BTreeMap<u64, u64>>,
    pub thread_names: BTreeMap<u32, String>,
    /// The requests of the program (and of the processes it started, where they are
    /// followed), where the backend records them.
    pub requests: Option<crate::requests::RequestLog>,
}

impl Session {
    /// The program's threads by the clock as `prof:clock` says them, built from the ledger the
    /// backend's switch records filled (Redox's typed records), in the kernel account's words:
    /// a site's `call` is the kernel's reason word (`scheme-call`, `futex`, ...) and its
    /// `target` a scheme call's scheme; the daemons' samples under each site, each scheme's
    /// daemon. `None` without threads.
    pub fn clock_from_records(&self) -> Option<crate::kernel_clock::ClockReport> {
        use crate::kernel_clock::{ClockReport, ClockServed, ClockSite, ClockThread, SchemeDaemon};
        let (begin, end) = self.clock.span?;
        let mut report = ClockReport {
            state: self.state.as_str().to_string(),
            pid: u64::from(self.pid),
            begin,
            end,
            at: end,
            ..Default::default()
        };
        for t in &self.clock.ledger.accounts(begin, end) {
            let blocks = t.waits.iter().fold(0u64, |n, w| n.saturating_add(w.count));
            let (start, finish) = self.clock.ledger.span(t.tid, begin, end);
            report.threads.push(ClockThread {
                tid: u64::from(t.tid),
                begin: start,
                end: finish,
                on_cpu: t.on_cpu(),
                preempted: t.preempted,
                blocked: t.blocked,
                blocks,
            });
            for w in t.waits.iter().filter(|w| w.site != crate::ledger::UNSEEN) {
                let Some(site) = self.clock.wait_sites.get(w.site as usize) else { continue };
                report.sites.push(ClockSite {
                    id: u64::from(w.site),
                    tid: u64::from(t.tid),
                    reason: site.call.clone(),
                    scheme: site.target.as_deref().and_then(|t| t.parse().ok()).unwrap_or(0),
                    count: w.count,
                    ns: w.ns,
                    truncated: site.stack.truncated,
                    frames: site.stack.frames.clone(),
                });
            }
        }
        for (&scheme, &daemon) in &self.clock.scheme_daemons {
            let name = self.servers.get(&daemon).map(|s| s.path.clone()).filter(|p| !p.is_empty());
            report.schemes.push(SchemeDaemon { scheme, daemon: u64::from(daemon), name });
        }
        for ((site, daemon, stack), &count) in &self.clock.served {
            report.served.push(ClockServed {
                site: u64::from(*site),
                daemon: u64::from(*daemon),
                count,
                truncated: stack.truncated,
                frames: stack.frames.clone(),
            });
        }
        (!report.threads.is_empty()).then_some(report)
    }

    /// The executable mappings process `pid` had: the program's, or a child's (`--children`,
    /// see [`crate::sampler::process_mappings`]).
    pub fn mappings_of(&self, pid: u32) -> Vec<Mapping> {
        crate::sampler::process_mappings(pid, self.pid, &self.mappings, |p| {
            self.processes.get(&p).map(|c| (c.parent, c.exec.is_some(), c.mappings.as_slice()))
        })
    }

    /// Ticks counted in the bins.
    pub fn ticks_in_bins(&self) -> u64 {
        self.data.total()
    }

    /// The link-time address of a runtime address inside the program's text, if it is one.
    pub fn link_address(&self, runtime: u64) -> Option<u64> {
        let link = runtime.checked_sub(self.load_base?)?;
        self.text.contains(link).then_some(link)
    }

    /// Samples inside the program's text, as link-time addresses.
    pub fn image_samples(&self) -> Vec<(u64, u64)> {
        self.program.user.iter().filter_map(|(&a, &n)| Some((self.link_address(a)?, n))).collect()
    }

    /// Samples outside the program's text (shared objects, vdso), as runtime addresses.
    pub fn foreign_samples(&self) -> Vec<(u64, u64)> {
        self.program.user.iter().filter(|(&a, _)| self.link_address(a).is_none()).map(|(&a, &n)| (a, n)).collect()
    }

    /// The frames of `stack`, placed. A return address is placed by its call instruction, just
    /// before it, so a call that ends the program's text still counts as the program's.
    pub fn stack_frames(&self, stack: &CallStack) -> Vec<StackFrame> {
        place_frames(&stack.frames, self.load_base, &self.text)
    }

    /// The program's samples in time order as a client reports them ([`PlacedSample`]), each
    /// stack by its place in `order` (the values of the session's `stacks`, in the order the client
    /// lists them), and the program's span, ns: its main thread from its exec (or the session's
    /// start) to its exit, stretched over every sample.
    pub fn placed_timeline<'a>(&self, order: impl Iterator<Item = &'a StackTicks>) -> (u64, Vec<PlacedSample>) {
        let Some((begin, end)) = self.program_span() else { return (0, Vec::new()) };
        place_timeline(&self.program.timeline, order.map(|c| c.timed), (begin, end), |ip| place_frames(&[ip], self.load_base, &self.text)[0])
    }

    /// The program's whole waits (where the backend times them) from the program's start, as
    /// [`Session::placed_timeline`] times its samples: (tid, from, to, site), ns to the µs, in
    /// the order they began.
    pub fn placed_waits(&self) -> Vec<crate::timeline::WaitSpan> {
        let origin = self.origin().unwrap_or(0);
        let mut waits: Vec<crate::timeline::WaitSpan> = self
            .program
            .timeline
            .waits
            .iter()
            .map(|w| crate::timeline::WaitSpan { from: to_us(w.from.saturating_sub(origin)), to: to_us(w.to.saturating_sub(origin)), ..*w })
            .collect();
        waits.sort_by_key(|w| (w.from, w.tid));
        waits
    }

    /// Where every process's times are counted from: the program's start, else (a program
    /// never sampled: a shell that ran the rest) the session's, else the first sample of any.
    pub fn origin(&self) -> Option<u64> {
        let children = self.processes.values().map(|c| &c.samples.timeline);
        let first_of_all = || children.chain(self.servers.values().map(|s| &s.samples.timeline)).flat_map(|t| t.entries.iter().map(|e| e.time)).min();
        self.program_span().map(|s| s.0).or(self.clock.span.map(|c| c.0)).or_else(first_of_all)
    }

    /// The program's span by the backend's clock: its main thread from its exec (or the
    /// session's start) to its exit, stretched over every sample of its timeline; `None`
    /// without one.
    fn program_span(&self) -> Option<(u64, u64)> {
        let first = self.program.timeline.entries.iter().map(|e| e.time).min()?;
        let last = self.program.timeline.entries.iter().map(|e| e.time).max()?;
        let (begin, end) = match self.clock.span {
            Some((b, e)) => self.clock.ledger.span(self.pid, b, e),
            None => (first, last),
        };
        Some((begin.min(first), end.max(last)))
    }

    /// Take what a batch saw outside the program: each daemon's (or, `-a`, each process's)
    /// name, samples and whole requests served (their waits numbered as the program's clock
    /// numbers them), each scheme's daemon, the account.
    fn add_servers(&mut self, b: crate::sampler::ServersBatch) {
        for (pid, path) in b.names {
            self.servers.entry(pid).or_default().path = path;
        }
        for (pid, sample) in b.samples {
            self.servers.entry(pid).or_default().add(sample);
        }
        for (pid, tid, from, to, for_tid, site) in b.served {
            let site = site.map(|site| self.clock.wait_site_index(site));
            self.servers.entry(pid).or_default().served.push(crate::timeline::ServedSpan { tid, from, to, for_tid, site });
        }
        self.clock.scheme_daemons.extend(b.schemes);
        self.account.add(&b.account);
    }

    /// Fold one of the program's samples into the aggregates: the bins (a user one), the
    /// kernel's samples, its thread's, the program's own ([`ProcessSamples::add`]). `false`: a
    /// bin would pass `limit`, and nothing of the sample was counted.
    fn add_sample(&mut self, sample: Sample, limit: u64) -> bool {
        match sample.at {
            Sampled::User(ip) => {
                if self.bin(ip, 1, limit) == 0 {
                    return false;
                }
            }
            Sampled::Kernel { ip, named: true } => add_one(&mut self.kernel_samples, ip),
            Sampled::Kernel { .. } => {}
            Sampled::Blocked(_) => return true,
        }
        if let Some(ip) = sample.at.ip() {
            add_one(self.thread_samples.entry(sample.tid).or_default(), ip);
        }
        self.program.add(sample);
        true
    }

    /// Count up to `n` ticks at runtime address `ip` in its bin, where it has one: how many
    /// were counted (`n` outside the bins; fewer where the bin reached `limit`: Minix's clock
    /// handler counts no tick that would overflow).
    fn bin(&mut self, ip: u64, n: u64, limit: u64) -> u64 {
        let Some(b) = self.bin_of_runtime(ip) else { return n };
        let counted = n.min(limit - self.data.bin[b]);
        self.data.bin[b] += counted;
        counted
    }

    /// Bin again the user samples counted so far by address (`earlier`), as after a new load
    /// base; `true` where a bin would overflow (that tick and everything after it is not
    /// counted).
    fn rebin(&mut self, earlier: &[(u64, u64)], limit: u64) -> bool {
        for &(ip, n) in earlier {
            let counted = self.bin(ip, n, limit);
            if counted > 0 {
                *self.program.user.entry(ip).or_insert(0) += counted;
                self.program.user_ticks += counted;
            }
            if counted < n {
                return true;
            }
        }
        false
    }

    fn bin_of_runtime(&self, runtime: u64) -> Option<usize> {
        self.layout.bin_of(self.link_address(runtime)?)
    }
}

/// The profiling service: the rules of `profile()` / `getprofile()` over a backend.
pub struct Profd<S: Sampler> {
    sampler: S,
    session: Option<Session>,
    counter_limit: u64,
}

impl<S: Sampler> Profd<S> {
    pub fn new(sampler: S) -> Self {
        Profd { sampler, session: None, counter_limit: u64::MAX }
    }

    /// Use a smaller bin counter maximum (tests of the overflow stop).
    pub fn with_counter_limit(mut self, limit: u64) -> Self {
        self.counter_limit = limit;
        self
    }

    pub fn sampler(&self) -> &S {
        &self.sampler
    }

    pub fn sampler_mut(&mut self) -> &mut S {
        &mut self.sampler
    }

    /// `profile(pid, start, end, interval)` for a program laid out as `image`.
    pub fn profile(&mut self, caller_uid: u32, req: StartRequest, image: &ImageLayout) -> Result<(), ProfError> {
        if req.pid == 0 {
            return self.stop(caller_uid);
        }
        let owner = self.sampler.process_owner(req.pid)?;
        if caller_uid != ROOT_UID && caller_uid != owner {
            return Err(ProfError::Permission);
        }
        let layout = BinLayout::new(image.text, req.start, req.end, req.interval)?;
        // A session whose process has exited is over even if nobody has read it since: learn
        // that from the backend before calling the profiler busy.
        self.pump()?;
        if self.state() == SessionState::Running {
            return Err(ProfError::Busy);
        }
        self.sampler.start(req.pid, image, req.from, req.rate, req.children)?;
        self.session = Some(Session::new(req.pid, caller_uid, image.text, layout));
        Ok(())
    }

    /// `start all`: profile every process (root only). The session has no program and no
    /// bins: each process's samples are among its servers, by pid.
    pub fn profile_all(&mut self, caller_uid: u32, rate: Option<u64>) -> Result<(), ProfError> {
        if caller_uid != ROOT_UID {
            return Err(ProfError::Permission);
        }
        self.pump()?;
        if self.state() == SessionState::Running {
            return Err(ProfError::Busy);
        }
        self.sampler.start_all(rate)?;
        let text = TextSegment { start: 0, end: 1 };
        let layout = BinLayout::new(text, 0, 0, 0)?;
        self.session = Some(Session::new(0, caller_uid, text, layout));
        Ok(())
    }
}

impl Session {
    /// A session of `pid` (0: every process) just started by `starter_uid`.
    fn new(pid: u32, starter_uid: u32, text: TextSegment, layout: BinLayout) -> Session {
        Session {
            pid,
            starter_uid,
            text,
            layout,
            data: ProfData::new(&layout),
            load_base: None,
            program: ProcessSamples::default(),
            kernel_samples: BTreeMap::new(),
            sampling: None,
            record_span: None,
            rings: None,
            clock_hz: None,
            children: BTreeMap::new(),
            processes: BTreeMap::new(),
            lost: 0,
            mappings: Vec::new(),
            later_execs: 0,
            typed_records: false,
            children_missed: 0,
            servers: BTreeMap::new(),
            account: Account::default(),
            state: SessionState::Running,
            clock: Default::default(),
            kernel_clock: None,
            thread_samples: BTreeMap::new(),
            thread_names: BTreeMap::new(),
            requests: None,
        }
    }
}

impl<S: Sampler> Profd<S> {

    /// `profile(0, ...)`: stop the running session, if any.  Never fails for root or the
    /// session's starter; anyone else gets EPERM rather than a silent no-op.
    pub fn stop(&mut self, caller_uid: u32) -> Result<(), ProfError> {
        if self.state() != SessionState::Running {
            return Ok(());
        }
        self.check_owner(caller_uid)?;
        // Keep what was counted up to the stop.
        self.pump()?;
        self.finish(StopReason::Request);
        Ok(())
    }

    /// Pull what the backend counted into the session; ends it on exit or overflow.
    pub fn pump(&mut self) -> Result<(), ProfError> {
        if self.state() != SessionState::Running {
            return Ok(());
        }
        let batch = self.sampler.collect()?;
        if let Some(reason) = self.ingest(batch) {
            self.finish(reason);
        }
        Ok(())
    }

    pub fn state(&self) -> SessionState {
        self.session.as_ref().map_or(SessionState::Idle, |s| s.state)
    }

    /// The current or last session, for root or its starter.
    pub fn session(&self, caller_uid: u32) -> Result<Option<&Session>, ProfError> {
        if self.session.is_some() {
            self.check_owner(caller_uid)?;
        }
        Ok(self.session.as_ref())
    }

    /// The current or last session without a permission check (for the public status line).
    pub fn last_session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// `getprofile()`: the bins of the current or last session (all zero if none ever ran).
    pub fn prof_data(&self, caller_uid: u32) -> Result<ProfData, ProfError> {
        Ok(self.session(caller_uid)?.map(|s| s.data.clone()).unwrap_or_default())
    }

    fn check_owner(&self, caller_uid: u32) -> Result<(), ProfError> {
        match &self.session {
            Some(s) if caller_uid != ROOT_UID && caller_uid != s.starter_uid => Err(ProfError::Permission),
            _ => Ok(()),
        }
    }

    fn finish(&mut self, reason: StopReason) {
        self.sampler.stop();
        if let Some(s) = self.session.as_mut() {
            s.state = SessionState::Stopped(reason);
        }
    }

    /// Count a batch; returns why the session must stop, if it must.
    fn ingest(&mut self, batch: SampleBatch) -> Option<StopReason> {
        let limit = self.counter_limit;
        let s = self.session.as_mut()?;
        if batch.sampling.is_some() {
            s.sampling = batch.sampling;
        }
        if batch.record_span.is_some() {
            s.record_span = batch.record_span;
        }
        if batch.rings.is_some() {
            s.rings = batch.rings;
        }
        if batch.clock_hz.is_some() {
            s.clock_hz = batch.clock_hz;
        }
        for (pid, n) in batch.children {
            let c = s.children.entry(pid).or_insert(0);
            *c = c.saturating_add(n);
        }
        for c in batch.child_processes {
            s.processes.entry(c.pid).or_default().add(c);
        }
        s.lost += batch.lost;
        if batch.kernel_clock.is_some() {
            s.kernel_clock = batch.kernel_clock;
        }
        s.thread_names.extend(batch.thread_names);
        if let Some(source) = batch.requests.source {
            s.requests.get_or_insert_with(|| crate::requests::RequestLog::new(source)).take(batch.requests);
        }
        s.mappings.extend(batch.mappings);
        s.later_execs += batch.later_execs;
        s.typed_records |= batch.typed_records;
        if let Some(missed) = batch.children_missed {
            s.children_missed = missed;
        }
        s.clock.add(batch.threads, &batch.clock, &mut s.program.timeline);
        if batch.load_base.is_some() && batch.load_base != s.load_base {
            s.load_base = batch.load_base;
            // Samples that arrived before the base was known (or changed: an exec) are
            // binned again under the new one.
            s.data = ProfData::new(&s.layout);
            let earlier: Vec<(u64, u64)> = std::mem::take(&mut s.program.user).into_iter().collect();
            s.program.user_ticks = 0;
            if s.rebin(&earlier, limit) {
                return Some(StopReason::Overflow);
            }
        }
        for sample in batch.samples {
            if !s.add_sample(sample, limit) {
                // The tick that would overflow is not counted, nor anything after it.
                return Some(StopReason::Overflow);
            }
        }
        s.add_servers(batch.servers);
        batch.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::LoadSegment;
    use crate::sample::user_runs;
    use std::collections::VecDeque;

    /// A scripted backend: processes are (pid, uid) pairs; batches are queued by the test.
    #[derive(Default)]
    struct FakeSampler {
        processes: Vec<(u32, u32)>,
        batches: VecDeque<SampleBatch>,
        running: Option<u32>,
        busy_elsewhere: bool,
        starts: u32,
        stops: u32,
    }

    impl Sampler for FakeSampler {
        fn process_owner(&mut self, pid: u32) -> Result<u32, ProfError> {
            self.processes.iter().find(|p| p.0 == pid).map(|p| p.1).ok_or(ProfError::NoProcess)
        }
        fn start(&mut self, pid: u32, _: &ImageLayout, _: CountFrom, _: Option<u64>, _: bool) -> Result<(), ProfError> {
            if self.busy_elsewhere {
                return Err(ProfError::Busy);
            }
            self.running = Some(pid);
            self.starts += 1;
            Ok(())
        }
        fn collect(&mut self) -> Result<SampleBatch, ProfError> {
            Ok(self.batches.pop_front().unwrap_or_default())
        }
        fn stop(&mut self) {
            self.running = None;
            self.stops += 1;
        }
    }

    const BASE: u64 = 0x5555_0000_0000;

    fn image() -> ImageLayout {
        ImageLayout {
            text: TextSegment { start: 0x1000, end: 0x2000 },
            exec_segments: vec![LoadSegment { vaddr: 0x1000, memsz: 0x1000, offset: 0x1000 }],
        }
    }

    fn profd() -> Profd<FakeSampler> {
        let sampler = FakeSampler { processes: vec![(10, 1000), (11, 1001)], ..Default::default() };
        Profd::new(sampler)
    }

    fn req(pid: u32, start: u64, end: u64, interval: u64) -> StartRequest {
        StartRequest { pid, start, end, interval, from: CountFrom::Now, rate: None, children: false }
    }

    fn batch(user: &[(u64, u64)]) -> SampleBatch {
        SampleBatch { samples: user_runs(user), load_base: Some(BASE), ..Default::default() }
    }

    /// A batch of user samples of thread 10, each `(time, stack)` at its stack's first frame.
    fn stacked(samples: &[(Option<u64>, &CallStack)]) -> SampleBatch {
        let samples = samples.iter().map(|&(time, st)| Sample::user(time, 10, st.frames[0], Some(st.clone()))).collect();
        SampleBatch { samples, load_base: Some(BASE), ..Default::default() }
    }

    #[test]
    fn starts_and_bins_link_time_addresses() {
        let mut p = profd();
        p.profile(1000, req(10, 0x1000, 0x1400, 0x100), &image()).unwrap();
        assert_eq!(p.state(), SessionState::Running);
        p.sampler_mut().batches.push_back(batch(&[(BASE + 0x1000, 2), (BASE + 0x12ff, 1), (BASE + 0x1300, 4)]));
        p.pump().unwrap();
        let d = p.prof_data(1000).unwrap();
        assert_eq!((d.start_addr, d.end_addr, d.nr_bins, d.bin_sz), (0x1000, 0x1400, 4, 0x100));
        assert_eq!(&d.bin[..4], &[2, 0, 1, 4]);
    }

    #[test]
    fn samples_outside_range_are_kept_exactly_but_not_binned() {
        let mut p = profd();
        p.profile(1000, req(10, 0x1000, 0x1100, 0), &image()).unwrap();
        p.sampler_mut().batches.push_back(batch(&[(BASE + 0x1050, 1), (BASE + 0x1800, 3), (0x7fff_0000_1234, 5)]));
        p.pump().unwrap();
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!(s.ticks_in_bins(), 1);
        assert_eq!(s.program.user_ticks, 9);
        assert_eq!(s.image_samples(), vec![(0x1050, 1), (0x1800, 3)]);
        assert_eq!(s.foreign_samples(), vec![(0x7fff_0000_1234, 5)]);
    }

    #[test]
    fn samples_before_the_load_base_is_known_are_binned_later() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        p.sampler_mut().batches.push_back(SampleBatch { samples: user_runs(&[(BASE + 0x1010, 3)]), ..Default::default() });
        p.sampler_mut().batches.push_back(batch(&[(BASE + 0x1010, 1)]));
        p.pump().unwrap();
        assert_eq!(p.prof_data(1000).unwrap().total(), 0);
        p.pump().unwrap();
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!((s.ticks_in_bins(), s.program.user_ticks), (4, 4));
    }

    #[test]
    fn pid_zero_stops_and_never_fails() {
        let mut p = profd();
        assert_eq!(p.profile(1000, req(0, 0, 0, 0), &image()), Ok(()));
        assert_eq!(p.state(), SessionState::Idle);
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        assert_eq!(p.profile(1000, req(0, 5, 1, 7), &image()), Ok(()));
        assert_eq!(p.state(), SessionState::Stopped(StopReason::Request));
        assert_eq!(p.profile(1000, req(0, 0, 0, 0), &image()), Ok(()));
        assert_eq!(p.sampler().stops, 1);
    }

    #[test]
    fn second_start_is_ebusy_and_first_continues() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        assert_eq!(p.profile(1001, req(11, 0, 0, 0), &image()), Err(ProfError::Busy));
        assert_eq!(p.sampler().running, Some(10));
        assert_eq!(p.session(1000).unwrap().unwrap().pid, 10);
    }

    #[test]
    fn busy_in_another_process_is_ebusy() {
        let mut p = profd();
        p.sampler_mut().busy_elsewhere = true;
        assert_eq!(p.profile(1000, req(10, 0, 0, 0), &image()), Err(ProfError::Busy));
        assert_eq!(p.state(), SessionState::Idle);
    }

    #[test]
    fn unknown_pid_is_esrch() {
        assert_eq!(profd().profile(0, req(99, 0, 0, 0), &image()), Err(ProfError::NoProcess));
    }

    #[test]
    fn bad_ranges_are_efault_and_start_nothing() {
        let mut p = profd();
        for r in [req(10, 0x1300, 0x1020, 0), req(10, 0x800, 0x1100, 0), req(10, 0x1000, 0x2000, 3)] {
            assert_eq!(p.profile(1000, r, &image()), Err(ProfError::AddressRange));
        }
        assert_eq!(p.sampler().starts, 0);
    }

    #[test]
    fn only_root_or_owner_may_start() {
        let mut p = profd();
        assert_eq!(p.profile(1001, req(10, 0, 0, 0), &image()), Err(ProfError::Permission));
        assert_eq!(p.profile(ROOT_UID, req(10, 0, 0, 0), &image()), Ok(()));
    }

    #[test]
    fn only_root_or_starter_may_stop_or_read() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        assert_eq!(p.stop(1001), Err(ProfError::Permission));
        assert_eq!(p.profile(1001, req(0, 0, 0, 0), &image()), Err(ProfError::Permission));
        assert_eq!(p.prof_data(1001).map(|_| ()), Err(ProfError::Permission));
        assert!(p.prof_data(ROOT_UID).is_ok());
        assert_eq!(p.stop(ROOT_UID), Ok(()));
        assert_eq!(p.state(), SessionState::Stopped(StopReason::Request));
    }

    #[test]
    fn exit_stops_with_reason_exit_and_keeps_the_last_batch() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        let mut last = batch(&[(BASE + 0x1000, 7)]);
        last.ended = Some(StopReason::Exit);
        p.sampler_mut().batches.push_back(last);
        p.pump().unwrap();
        assert_eq!(p.state(), SessionState::Stopped(StopReason::Exit));
        assert_eq!(p.prof_data(1000).unwrap().total(), 7);
        assert_eq!(p.sampler().running, None);
    }

    #[test]
    fn overflow_stops_and_does_not_count_the_overflowing_tick() {
        let mut p = profd().with_counter_limit(5);
        p.profile(1000, req(10, 0x1000, 0x1100, 0x80), &image()).unwrap();
        // Bin 0 takes 4, then 2 more would make 6 > 5: one is counted, then the session stops;
        // the sample after it is not counted at all.
        p.sampler_mut().batches.push_back(batch(&[(BASE + 0x1000, 4), (BASE + 0x1001, 2), (BASE + 0x1080, 1)]));
        p.pump().unwrap();
        assert_eq!(p.state(), SessionState::Stopped(StopReason::Overflow));
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!(&s.data.bin[..2], &[5, 0]);
        assert_eq!(s.program.user_ticks, 5);
        // Nothing is counted after the stop.
        p.sampler_mut().batches.push_back(batch(&[(BASE + 0x1080, 1)]));
        p.pump().unwrap();
        assert_eq!(p.prof_data(1000).unwrap().total(), 5);
    }

    #[test]
    fn a_new_load_base_rebins_everything() {
        let mut p = profd();
        p.profile(1000, req(10, 0x1000, 0x1100, 0x80), &image()).unwrap();
        p.sampler_mut().batches.push_back(batch(&[(BASE + 0x1000, 2)]));
        p.pump().unwrap();
        let other = 0x7000_0000_0000;
        p.sampler_mut().batches.push_back(SampleBatch {
            samples: user_runs(&[(other + 0x1080, 3)]),
            load_base: Some(other),
            ..Default::default()
        });
        p.pump().unwrap();
        let s = p.session(1000).unwrap().unwrap();
        // Under the new base the old samples are outside the text; the new ones land in bin 1.
        assert_eq!(&s.data.bin[..2], &[0, 3]);
        assert_eq!(s.program.user_ticks, 5);
    }

    #[test]
    fn stacks_are_counted_across_batches() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        let a = CallStack { frames: vec![BASE + 0x1000, BASE + 0x1805], truncated: false };
        let b = CallStack { frames: vec![BASE + 0x1000], truncated: true };
        let first = stacked(&[(None, &a), (None, &b), (None, &a)]);
        let second = stacked(&[(None, &a)]);
        p.sampler_mut().batches.extend([first, second]);
        p.pump().unwrap();
        p.pump().unwrap();
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!(s.program.stacks.iter().map(|(k, n)| (k.clone(), n.ticks)).collect::<Vec<_>>(), vec![(b, 1), (a, 3)]);
    }

    #[test]
    fn the_timeline_names_each_stack_by_its_place_among_the_sessions() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        let (a, b) = (CallStack { frames: vec![BASE + 0x1800, BASE + 0x1000], truncated: false }, CallStack { frames: vec![BASE + 0x1000], truncated: false });
        // `a` is seen first (the timeline's stack 0) but sorts after `b` among the session's.
        let first = stacked(&[(Some(100), &a)]);
        let second = stacked(&[(Some(300), &a), (Some(200), &b)]);
        // A stack the session counted before any sample of it was timed is named once one is.
        let c = CallStack { frames: vec![BASE + 0x1c00], truncated: true };
        let untimed = stacked(&[(None, &c)]);
        let timed_later = stacked(&[(Some(400), &c)]);
        p.sampler_mut().batches.extend([first, second, untimed, timed_later]);
        for _ in 0..4 {
            p.pump().unwrap();
        }
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!(s.program.stacks.keys().cloned().collect::<Vec<_>>(), [b.clone(), a.clone(), c.clone()]);
        assert_eq!(s.program.stacks.values().map(|c| c.ticks).collect::<Vec<_>>(), [1, 2, 2]);
        let (_, placed) = s.placed_timeline(s.program.stacks.values());
        assert_eq!(placed.iter().map(|p| p.stack).collect::<Vec<_>>(), [Some(1), Some(0), Some(1), Some(2)]);
        // Listed in another order (profd's, most ticks first), the places follow the list.
        let listed = [&s.program.stacks[&a], &s.program.stacks[&c], &s.program.stacks[&b]];
        let (_, placed) = s.placed_timeline(listed.into_iter());
        assert_eq!(placed.iter().map(|p| p.stack).collect::<Vec<_>>(), [Some(0), Some(2), Some(0), Some(1)]);
    }

    /// Every aggregate is a sum of the one stream of samples: the bins and exact samples of
    /// the user ones, the kernel's ticks (its named samples by address), each thread's, each
    /// stack's, the timeline; a bin's overflow cuts them all at the same sample.
    #[test]
    fn the_aggregates_are_sums_of_one_stream_cut_together_at_an_overflow() {
        let mut p = profd().with_counter_limit(2);
        p.profile(1000, req(10, 0x1000, 0x1100, 0x100), &image()).unwrap();
        let kernel = 0xffff_ffff_8000_1000;
        let st = |ip| CallStack { frames: vec![ip, BASE + 0x1800], truncated: false };
        let samples = vec![
            Sample::user(Some(10), 10, BASE + 0x1010, Some(st(BASE + 0x1010))),
            Sample::kernel(Some(20), 11, kernel, true, Some(st(kernel))),
            Sample::kernel(Some(30), 11, kernel + 8, false, None),
            Sample::user(Some(40), 11, BASE + 0x1010, Some(st(BASE + 0x1010))),
            Sample::user(Some(50), 10, BASE + 0x1900, None),
            // The third in bin 0: it would pass the limit, so neither it nor what follows counts.
            Sample::user(Some(60), 10, BASE + 0x1020, Some(st(BASE + 0x1020))),
            Sample::kernel(Some(70), 10, kernel, true, Some(st(kernel))),
        ];
        p.sampler_mut().batches.push_back(SampleBatch { samples, load_base: Some(BASE), ..Default::default() });
        p.pump().unwrap();
        assert_eq!(p.state(), SessionState::Stopped(StopReason::Overflow));
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!((s.data.bin[0], s.program.user_ticks, s.program.kernel_ticks), (2, 3, 2));
        assert_eq!(s.program.user, BTreeMap::from([(BASE + 0x1010, 2), (BASE + 0x1900, 1)]));
        assert_eq!(s.kernel_samples, BTreeMap::from([(kernel, 1)]));
        assert_eq!(s.thread_samples[&10], BTreeMap::from([(BASE + 0x1010, 1), (BASE + 0x1900, 1)]));
        assert_eq!(s.thread_samples[&11], BTreeMap::from([(kernel, 1), (kernel + 8, 1), (BASE + 0x1010, 1)]));
        let stacks: Vec<(u64, u64, Option<u32>)> = s.program.stacks.iter().map(|(k, c)| (k.frames[0], c.ticks, c.timed)).collect();
        assert_eq!(stacks, [(BASE + 0x1010, 2, Some(0)), (kernel, 1, Some(1))]);
        assert_eq!(s.program.timeline.entries.iter().map(|e| e.time).collect::<Vec<_>>(), [10, 20, 30, 40, 50]);
    }

    #[test]
    fn last_profile_readable_until_next_start() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        p.sampler_mut().batches.push_back(batch(&[(BASE + 0x1000, 3)]));
        p.stop(1000).unwrap();
        assert_eq!(p.prof_data(1000).unwrap().total(), 3);
        assert_eq!(p.prof_data(1000).unwrap().total(), 3);
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        assert_eq!(p.prof_data(1000).unwrap().total(), 0);
    }

    #[test]
    fn stop_drains_what_was_counted() {
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        let mut b = batch(&[(BASE + 0x1000, 2)]);
        b.samples.extend((0..4).map(|i| Sample::kernel(None, 10, 0xffff_ffff_8000_0000 + i, false, None)));
        b.lost = 1;
        p.sampler_mut().batches.push_back(b);
        p.stop(1000).unwrap();
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!((s.program.user_ticks, s.program.kernel_ticks, s.lost), (2, 4, 1));
    }

    /// `--children`: a child's parts of several batches add up to its profile, out of the
    /// program's bins, and its mappings are what it inherited plus its own.
    #[test]
    fn child_processes_add_up_apart_from_the_program() {
        use crate::sampler::ChildBatch;
        let mut p = profd();
        p.profile(1000, req(10, 0, 0, 0), &image()).unwrap();
        let program_map = Mapping { start: BASE, len: 0x2000, path: "/bin/prog".into(), ..Default::default() };
        let lib = Mapping { start: 0x7000_0000, len: 0x1000, path: "/lib/x.so".into(), ..Default::default() };
        let mut b = batch(&[(BASE + 0x1000, 2)]);
        b.mappings = vec![program_map.clone()];
        b.children = vec![(11, 5)];
        b.child_processes = vec![ChildBatch {
            pid: 11,
            parent: Some(10),
            samples: [BASE + 0x1000, BASE + 0x1000, BASE + 0x1000, 0x7000_0010]
                .into_iter()
                .enumerate()
                .map(|(i, ip)| Sample::user(Some(i as u64), 11, ip, (i < 3).then(|| CallStack { frames: vec![ip], truncated: false })))
                .chain([Sample::kernel(Some(9), 11, 0xffff_ffff_8000_0000, false, None)])
                .collect(),
            mappings: vec![lib.clone()],
            ..Default::default()
        }];
        p.sampler_mut().batches.push_back(b);
        let mut later = SampleBatch { children: vec![(11, 2)], ..Default::default() };
        later.child_processes = vec![ChildBatch { pid: 11, samples: user_runs(&[(BASE + 0x1000, 2)]), ..Default::default() }];
        p.sampler_mut().batches.push_back(later);
        p.pump().unwrap();
        p.stop(1000).unwrap();
        let s = p.session(1000).unwrap().unwrap();
        assert_eq!((s.program.user_ticks, s.ticks_in_bins()), (2, 2));
        let c = &s.processes[&11];
        assert_eq!((c.parent, c.samples.user_ticks, c.samples.kernel_ticks), (Some(10), 6, 1));
        assert_eq!(c.samples.user, BTreeMap::from([(BASE + 0x1000, 5), (0x7000_0010, 1)]));
        assert_eq!(c.samples.stacks.values().map(|c| c.ticks).sum::<u64>(), 3);
        assert_eq!(c.samples.timeline.entries.len(), 5);
        assert_eq!(s.mappings_of(11), vec![program_map.clone(), lib]);
        assert_eq!(s.mappings_of(10), vec![program_map]);
        assert_eq!(s.children[&11], 7);
    }
}
