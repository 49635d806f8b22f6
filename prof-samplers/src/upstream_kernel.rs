//! The Redox backend on an unpatched kernel: upstream's own profiler (the kernel's cargo feature
//! `profiling`), read through `debug:ctl-profiling` and `debug:profiling-N`, the records
//! decoded by [`prof_events::RingDecoder`].
//!
//! What that kernel tells, and so what this sampler can do:
//! * A kernel with our series (kernel-patch/events) writes typed records (`prof_events::layout`)
//!   when told `2`: each sample has its process's pid, and a program's samples are exactly its
//!   pid's; its switch records give the program's threads by the clock, and the stacks its
//!   threads wrote as they blocked name their waits ([`crate::program_records`]), served as
//!   `prof:clock`. A stock kernel refuses `2`, and this sampler takes upstream's records (`1`)
//!   instead:
//! * Upstream's record names the running context by its `debug_id`, never its pid; the kernel names a
//!   `debug_id` (the last name procmgr gave the context) through a call on a `profiling-N`
//!   file. A program's contexts are found so: when the session starts, the newest context
//!   that bears the name of the program's pid (`sys:context`) is the program (profil forked it
//!   just before; `debug_id`s only grow); a later context with the name the program has then
//!   is one of its threads. Another process of the same program started during the session
//!   would be counted with it.
//! * With one CPU, a kernel with our series samples at that CPU's timer tick (idle and kernel
//!   code with interrupts on included; the report's source is `timer`); a stock kernel gives
//!   no ring then.
//! * The profiling CPU (the last one) sends an NMI to the others at a rate of the kernel's
//!   (its local APIC timer's; about 954 a second in QEMU). A kernel with our series takes the
//!   rate asked (`-F`) where it could measure that timer against the HPET; a stock kernel
//!   refuses it, and its own rate it is. Kernel code running with interrupts enabled, the idle
//!   loop included, is not recorded.
//! * The user frames of a record are not the program's at 663e6641 (its `walk_ustack` reads
//!   each frame's page from its start): a stack here is the sampled address and, for a kernel sample,
//!   the kernel's frames and the system call's user address.
//! * The ring drops a record that does not fit, silently: the records it cut short are
//!   counted as lost.
//! * Records carry the TSC: measured against the monotonic clock at every session's start,
//!   it times the session ([`crate::record_span`]): the rate the NMIs came at and the span
//!   the records cover, which neither kernel says.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use prof_core::error::ProfError;
use prof_core::image::ImageLayout;
use prof_core::sampler::{CountFrom, SampleBatch, Sampler, Sampling};
use prof_core::session::StopReason;

use crate::program_records::{taken, ProgramRecords, TscClock};
use crate::record_span::SpanMeter;
use crate::context_table::{alive_in_context_table, name_in_context_table, owner_in_context_table, BOOTSTRAP};
use prof_events::layout::Source;
use prof_events::{Event, Ids, RingDecoder, Sample as Record};

/// The sampling source's name in reports: upstream's NMI IPI from a dedicated CPU.
pub const SOURCE: &str = prof_core::sampler::UPSTREAM_SOURCE;
/// ...and where the kernel samples at its timer tick (kernel-patch/events on one CPU).
pub const TICK_SOURCE: &str = "timer";
/// The name the kernel gives each CPU's idle context.
const IDLE_CONTEXT: &str = "[kmain]";

/// What `debug:ctl-profiling` is told: one switch for every CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recording {
    /// `0`.
    #[default]
    Off,
    /// `1`: upstream's records (kind 0), all a stock kernel writes.
    Upstream,
    /// `2`: typed records with each sample's pid (a kernel with our series); a stock kernel
    /// refuses it (EINVAL).
    Typed,
    /// `3`: typed records and a record at each system call's end (layout 1.1); a kernel of
    /// an earlier layout refuses it (EINVAL).
    Syscalls,
}

/// What `debug:ctl-profiling` is told: `MODE [' ' HZ]`. A kernel without rates refuses a
/// write longer than one byte (EINVAL).
pub fn ctl_text(mode: Recording, rate: Option<u64>) -> String {
    let mode = match mode {
        Recording::Off => '0',
        Recording::Upstream => '1',
        Recording::Typed => '2',
        Recording::Syscalls => '3',
    };
    match rate {
        Some(hz) => format!("{mode} {hz}"),
        None => mode.to_string(),
    }
}

/// The kernel files this sampler uses.
pub trait DebugFiles {
    /// Write `mode` (at `rate` NMIs a second, else the kernel's) to `debug:ctl-profiling`.
    fn set_profiling(&mut self, mode: Recording, rate: Option<u64>) -> io::Result<()>;
    /// How many `profiling-N` rings there are (the CPUs but the profiling one).
    fn rings(&self) -> usize;
    /// Read what ring `cpu` holds now into `buf` (a whole number of words); 0: nothing.
    fn read_ring(&mut self, cpu: usize, buf: &mut [u8]) -> io::Result<usize>;
    /// The name the kernel keeps for context `debug_id`, if it keeps one.
    fn context_name(&mut self, debug_id: u32) -> Option<String>;
    /// The `sys:context` table (pid, owner, state, name of every context).
    fn contexts(&mut self) -> io::Result<String>;
    /// The TSC (the records' clock) and the monotonic clock in ns, read together.
    fn clocks(&mut self) -> io::Result<(u64, u64)>;
    /// Let `time` pass between two readings of the clocks.
    fn pause(&mut self, time: std::time::Duration) {
        std::thread::sleep(time);
    }
}

/// How long apart the readings that measure the TSC's rate are, and how many such windows
/// there are: the rate is the median of theirs, since under QEMU's TCG the guest's monotonic
/// clock now and then loses a whole timer tick (~4 ms) against the TSC, which a single window
/// read as a rate 16 % off (docs/proof.md, "The records' clock").
const CALIBRATION: std::time::Duration = std::time::Duration::from_millis(20);
pub(crate) const CALIBRATION_WINDOWS: usize = 3;

/// Consecutive `debug_id`s without a name after which the scan for the newest stops (threads
/// that never got a name leave gaps).
const SCAN_GAP: u32 = 512;

/// Why a session's rings are not read: the kernel writes a layout newer than prof-events reads.
const NEWER_LAYOUT: &str = "reading debug:profiling-N: records of a newer layout version than this profd reads";

/// Bytes read from a ring at once (a whole number of words).
const READ_SIZE: usize = 64 << 10;

/// A ring's size at 663e6641: 16 Mi words.
const RING_BYTES: usize = 128 << 20;

/// What the session profiles.
#[derive(Debug)]
enum Target {
    /// Every context (`start all`), by `debug_id`; with typed records every process's
    /// requests (the session's `clock`, on every process).
    All { named: BTreeSet<u32> },
    Program(Program),
}

impl Target {
    fn is_program(&self) -> bool {
        matches!(self, Target::Program(_))
    }

    /// Its records on typed records, timed by `tsc`: the program's threads, its requests and
    /// its tree's, or every process's requests.
    fn records(&self, tsc: TscClock, syscalls: bool) -> ProgramRecords {
        match self {
            Target::Program(p) => ProgramRecords::new(p.pid, tsc, p.children, syscalls),
            Target::All { .. } => ProgramRecords::every_process(tsc, syscalls),
        }
    }
}

/// One program's session: its pid, and which contexts are its.
#[derive(Debug)]
struct Program {
    pid: u32,
    /// The pid's name when the session started (the launching profil's, before the exec).
    name0: String,
    /// The context found for the program at the start (`None`: none bore its name).
    first: Option<u32>,
    /// Contexts decided to be the program's, and not to be.
    contexts: BTreeSet<u32>,
    others: BTreeSet<u32>,
    /// Counting starts at the exec (profil's launch code before it is not the program's).
    from_exec: bool,
    /// When its exec was (TSC), where the records say (typed records).
    exec_at: Option<u64>,
    /// Daemons seen working for it, named once.
    daemons: BTreeSet<u32>,
    /// Follow its children (typed records).
    children: bool,
}

impl Program {
    /// Is the context `who` the program's? Where the record has the pid, it says. Otherwise
    /// its first context is; a later one is where it bears the program's name `now` when first
    /// seen (decided once).
    fn owns(&mut self, who: Ids, now: Option<&str>, files: &mut impl DebugFiles) -> bool {
        if let Some(pid) = who.pid {
            return pid == self.pid;
        }
        let id = who.thread;
        if self.contexts.contains(&id) {
            return true;
        }
        if self.others.contains(&id) || self.first.is_none_or(|f| id <= f) {
            return false;
        }
        let ours = now.is_some() && files.context_name(id).as_deref() == now;
        match ours {
            true => self.contexts.insert(id),
            false => self.others.insert(id),
        };
        ours
    }
}

struct Session {
    target: Target,
    decoders: Vec<RingDecoder>,
    /// The program's threads by the clock, where the records have switches (typed records).
    clock: Option<ProgramRecords>,
    /// The monotonic clock when the session began, for the first batch.
    began: Option<u64>,
    /// The kernel writes typed records (told `2` or `3`).
    typed: bool,
    /// ...and a record at each system call's end (told `3`).
    syscalls: bool,
    /// The rate the kernel took (a kernel with our series); `None`: its own.
    rate: Option<u64>,
    /// The records' clock (the TSC) against the monotonic clock, measured at the start; where
    /// the readings gave no rate, at the rate the kernel states from the last reading.
    tsc: Option<TscClock>,
    /// The last reading of the clocks at the start, where they gave no rate.
    unmeasured: Option<(u64, u64)>,
    /// The records' clock's rate as the kernel states it in the session's start records.
    clock_hz: Option<u64>,
    /// The rate sent and the session's span, from the records' times.
    meter: SpanMeter,
    /// The kernel samples at its timer tick (a machine with one CPU: none sends NMIs).
    ticked: bool,
    /// Whether a context with no pid is a CPU's idle context, as its name says, by debug id.
    idle: BTreeMap<u32, bool>,
    /// Records the rings cut short, as of the last batch.
    damaged: u64,
    ended: bool,
}

/// A [`Sampler`] over upstream's profiler.
pub struct UpstreamSampler<F: DebugFiles> {
    files: F,
    session: Option<Session>,
}

fn errno(what: &'static str, e: &io::Error) -> ProfError {
    ProfError::from_io(what, e)
}

impl<F: DebugFiles> UpstreamSampler<F> {
    pub fn new(files: F) -> UpstreamSampler<F> {
        UpstreamSampler { files, session: None }
    }

    pub fn files(&mut self) -> &mut F {
        &mut self.files
    }

    /// The newest context named `name`: `debug_id`s are scanned upward until [`SCAN_GAP`]
    /// without a name.
    fn newest_named(&mut self, name: &str) -> Option<u32> {
        let (mut id, mut gap, mut found) = (1u32, 0u32, None);
        while gap < SCAN_GAP && id < u32::MAX {
            match self.files.context_name(id) {
                Some(n) => {
                    gap = 0;
                    if n == name {
                        found = Some(id);
                    }
                }
                None => gap += 1,
            }
            id += 1;
        }
        found
    }

    /// Switch recording on in `mode`, at `rate` where the kernel takes one; the rate it took.
    fn switch_on(&mut self, mode: Recording, rate: Option<u64>) -> io::Result<Option<u64>> {
        if let Some(hz) = rate {
            match self.files.set_profiling(mode, Some(hz)) {
                Ok(()) => return Ok(Some(hz)),
                // A kernel without rates (EINVAL), or one that could not measure its timer
                // (EOPNOTSUPP): at its own rate.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {}
                Err(e) => return Err(e),
            }
        }
        self.files.set_profiling(mode, None).map(|()| None)
    }

    fn begin(&mut self, target: Target, rate: Option<u64>) -> Result<(), ProfError> {
        let rings = self.files.rings();
        if rings == 0 {
            // A kernel with one CPU: the profiling CPU would be the only one.
            return Err(ProfError::failed_at("upstream's profiler has no ring here (it needs two CPUs or more)"));
        }
        // What the rings hold from before is not this session's: a ring's whole size at most
        // (128 MiB), read away.
        let mut buf = vec![0u8; READ_SIZE];
        for cpu in 0..rings {
            for _ in 0..RING_BYTES / READ_SIZE {
                if self.files.read_ring(cpu, &mut buf).map_err(|e| errno("reading debug:profiling-N", &e))? == 0 {
                    break;
                }
            }
        }
        // Typed records where the kernel writes them (each sample's pid, the switches), else
        // upstream's. A program's session also asks for the system calls' records (the
        // program's requests timed from its calls' entries to their returns, as its own clock
        // sees them); `-a` does not (every process's calls: records nobody reads).
        let modes: &[Recording] = match target {
            Target::Program(_) => &[Recording::Syscalls, Recording::Typed, Recording::Upstream],
            Target::All { .. } => &[Recording::Typed, Recording::Upstream],
        };
        let mut took = Err(io::Error::from_raw_os_error(libc::EINVAL));
        for &mode in modes {
            took = self.switch_on(mode, rate).map(|hz| (mode, hz));
            if took.is_ok() {
                break;
            }
        }
        let (mode, rate) = took.map_err(|e| errno("writing debug:ctl-profiling", &e))?;
        let (typed, syscalls) = (mode != Recording::Upstream, mode == Recording::Syscalls);
        // The TSC's rate, measured now: the records' times become the monotonic clock's (the
        // ledger's, the session's span, the rate sent).
        let mut readings: Vec<(u64, u64)> = self.files.clocks().ok().into_iter().collect();
        for _ in 0..CALIBRATION_WINDOWS {
            self.files.pause(CALIBRATION);
            readings.extend(self.files.clocks().ok());
        }
        // The kernel's start records state the TSC's rate too (where it measured it against
        // the HPET), but the programs' own timings are the monotonic clock's, which in QEMU runs
        // a few percent off the TSC: the measurement converts, the kernel's rate is the fallback.
        let tsc = TscClock::from_windows(&readings);
        let unmeasured = readings.last().copied().filter(|_| tsc.is_none());
        let clock = tsc.filter(|_| typed).map(|tsc| target.records(tsc, syscalls));
        let began = tsc.filter(|_| clock.is_some() && target.is_program()).map(|tsc| tsc.ns);
        let decoders = (0..rings).map(|cpu| RingDecoder::new(cpu as u32)).collect();
        let meter = SpanMeter::default();
        let (ticked, idle) = (false, BTreeMap::new());
        self.session = Some(Session {
            target,
            decoders,
            clock,
            began,
            typed,
            syscalls,
            rate,
            tsc,
            unmeasured,
            clock_hz: None,
            meter,
            ticked,
            idle,
            damaged: 0,
            ended: false,
        });
        Ok(())
    }
}

/// A process's name: pid 0's are the user contexts without a pid (the bootstrap's process and
/// namespace managers); another's, as procmgr named it in the session (`recorded`), else as
/// `sys:context` (`table`) names it now.
fn process_name(pid: u32, recorded: Option<&str>, table: &str) -> Option<String> {
    match pid {
        0 => Some(BOOTSTRAP.to_string()),
        _ => recorded.map(str::to_string).or_else(|| name_in_context_table(table, pid)),
    }
}

/// One of the program's samples, into `batch` (the context is the thread); in time order too
/// where the records' TSC can be read as the monotonic clock (`tsc`).
fn count_programs(batch: &mut SampleBatch, r: &Record, tsc: Option<&TscClock>) {
    batch.samples.push(taken(r, tsc, true));
}

impl<F: DebugFiles> Sampler for UpstreamSampler<F> {
    fn process_owner(&mut self, pid: u32) -> Result<u32, ProfError> {
        let table = self.files.contexts().map_err(|e| errno("reading sys:context", &e))?;
        owner_in_context_table(&table, pid).ok_or(ProfError::NoProcess)
    }

    fn start(&mut self, pid: u32, _image: &ImageLayout, from: CountFrom, rate: Option<u64>, children: bool) -> Result<(), ProfError> {
        let table = self.files.contexts().map_err(|e| errno("reading sys:context", &e))?;
        let name0 = name_in_context_table(&table, pid).ok_or(ProfError::NoProcess)?;
        let first = self.newest_named(&name0);
        let contexts = first.into_iter().collect();
        let from_exec = from == CountFrom::Exec;
        let program = Program { pid, name0, first, contexts, others: BTreeSet::new(), from_exec, exec_at: None, daemons: BTreeSet::new(), children };
        self.begin(Target::Program(program), rate)
    }

    fn start_all(&mut self, rate: Option<u64>) -> Result<(), ProfError> {
        self.begin(Target::All { named: BTreeSet::new() }, rate)
    }

    fn collect(&mut self) -> Result<SampleBatch, ProfError> {
        let mut batch = SampleBatch::default();
        let Some(s) = self.session.as_mut() else { return Ok(batch) };
        if s.ended {
            return Ok(batch);
        }
        batch.typed_records = s.typed;
        if let (Some(_), Some(tsc), true) = (&s.clock, s.tsc, s.target.is_program()) {
            // Read before the rings: every switch stamped earlier is in this batch or before.
            // In the records' clock (the TSC at the rate measured at the start), as the
            // switches are: the monotonic clock of a guest under a busy host runs slow (it
            // loses ticks), so a thread blocked most of the run was blocked longer than that
            // clock's span, and its time on a CPU came out none.
            batch.clock.extend(s.began.take());
            if let Ok((now, _)) = self.files.clocks() {
                batch.clock.push(tsc.ns(now));
            }
        }
        let events = read_rings(&mut self.files, &mut s.decoders)?;
        s.note_kernel_clock();
        if s.clock.is_some() && s.target.is_program() {
            batch.clock.extend(s.began.take());
        }
        batch.clock_hz = s.clock_hz;
        s.note_sources(&events, &mut self.files);
        // Without readings of the clocks (an arch whose counter profd does not read), the
        // kernel's rate still times the records among themselves.
        let rate_only = s.clock_hz.map(|hz| TscClock { tsc: 0, ns: 0, ns_per_tick: 1e9 / hz as f64 });
        batch.record_span = s.tsc.or(rate_only).and_then(|tsc| s.meter.record_span(&tsc));
        let source = if s.ticked { TICK_SOURCE } else { SOURCE };
        batch.sampling = Some(Sampling { source, rate: s.rate.unwrap_or(0) });
        batch.rings = Some(s.decoders.len() as u64);
        let damaged: u64 = s.decoders.iter().map(|d| d.counts.damaged + d.counts.lost).sum();
        batch.lost = damaged.saturating_sub(s.damaged);
        s.damaged = damaged;
        let seen = Seen { events: &events, idle: &s.idle, tsc: s.tsc, typed: s.typed };
        match &mut s.target {
            Target::All { named } => {
                seen.every_process(named, &mut self.files, &mut batch);
                if let Some(view) = s.clock.as_mut() {
                    seen.every_request(view, &mut batch);
                }
            }
            Target::Program(program) => seen.program(program, s.clock.as_mut(), &mut self.files, &mut batch)?,
        }
        if batch.ended.is_some() {
            s.ended = true;
            let _ = self.files.set_profiling(Recording::Off, None);
        }
        Ok(batch)
    }

    fn stop(&mut self) {
        // A session that ended by itself switched profiling off already.
        if self.session.take().is_some_and(|s| !s.ended) {
            let _ = self.files.set_profiling(Recording::Off, None);
        }
    }
}

/// Every ring read to its end, or a ring's size of it (the next batch takes the rest), into
/// events.
fn read_rings(files: &mut impl DebugFiles, decoders: &mut [RingDecoder]) -> Result<Vec<Event>, ProfError> {
    let mut events = Vec::new();
    let mut buf = vec![0u8; READ_SIZE];
    for (cpu, decoder) in decoders.iter_mut().enumerate() {
        for _ in 0..RING_BYTES / READ_SIZE {
            let n = files.read_ring(cpu, &mut buf).map_err(|e| errno("reading debug:profiling-N", &e))?;
            if n == 0 {
                break;
            }
            // A ring of a newer record layout (its start record's major version) is not read.
            decoder.push(&buf[..n], &mut events).map_err(|_| ProfError::failed_at(NEWER_LAYOUT))?;
        }
    }
    Ok(events)
}

/// Where the CPUs were: a batch's samples, but the ones of where a thread blocked (the
/// clock's).
fn cpu_samples(events: &[Event]) -> impl Iterator<Item = &Record> {
    events.iter().filter_map(|e| match e {
        Event::Sample(s) if !ProgramRecords::is_block(s) => Some(s),
        _ => None,
    })
}

/// A kernel sample of a context without a pid may be a CPU's idle context, which only the
/// tick samples (the NMIs skip code with interrupts on).
fn may_be_idle(r: &Record) -> bool {
    r.kernel && r.who.pid.unwrap_or(0) == 0
}

impl Session {
    /// The records' clock's rate as the session's start records state it (the first ring's
    /// that does); where the readings at the start gave no rate, the records' clock at the
    /// kernel's rate from the last reading, and the program's threads by it from then.
    fn note_kernel_clock(&mut self) {
        if self.clock_hz.is_none() {
            self.clock_hz = self.decoders.iter().find_map(|d| d.start()?.clock_hz);
        }
        let (None, Some(hz), Some((tsc, ns))) = (self.tsc, self.clock_hz, self.unmeasured) else { return };
        let clock = TscClock { tsc, ns, ns_per_tick: 1e9 / hz as f64 };
        self.tsc = Some(clock);
        if self.typed {
            self.clock = Some(self.target.records(clock, self.syscalls));
            self.began = self.target.is_program().then_some(ns);
        }
    }

    /// The rate and span the records show, whether the tick samples, and which contexts
    /// without a pid are a CPU's idle context (their name says, asked once).
    fn note_sources(&mut self, events: &[Event], files: &mut impl DebugFiles) {
        for r in cpu_samples(events) {
            self.meter.push(r.cpu, r.time);
            self.ticked |= r.source == Some(Source::Tick);
            if may_be_idle(r) && !self.idle.contains_key(&r.who.thread) {
                let idle = files.context_name(r.who.thread).as_deref() == Some(IDLE_CONTEXT);
                self.idle.insert(r.who.thread, idle);
            }
        }
    }
}

/// One batch's events, and what the session knows to read them.
struct Seen<'a> {
    events: &'a [Event],
    idle: &'a BTreeMap<u32, bool>,
    tsc: Option<TscClock>,
    typed: bool,
}

impl Seen<'_> {
    fn is_idle(&self, r: &Record) -> bool {
        may_be_idle(r) && self.idle.get(&r.who.thread) == Some(&true)
    }

    /// `start all`: a row a process (typed records name each sample's), named as procmgr
    /// named it in the session, else as it is named now (pid 0: the contexts without one);
    /// upstream's records name a context (a thread) by its debug_id.
    fn every_process(&self, named: &mut BTreeSet<u32>, files: &mut impl DebugFiles, batch: &mut SampleBatch) {
        let mut names: BTreeMap<u32, String> = BTreeMap::new();
        for e in self.events {
            if let Event::Name { who: Ids { pid: Some(pid), .. }, name, .. } = e {
                names.insert(*pid, name.clone());
            }
        }
        let table = match self.typed {
            true => files.contexts().unwrap_or_default(),
            false => String::new(),
        };
        for r in cpu_samples(self.events) {
            if self.is_idle(r) {
                batch.servers.account.idle += 1;
                continue;
            }
            let row = r.who.pid.unwrap_or(r.who.thread);
            let name = named.insert(row).then(|| match r.who.pid {
                Some(pid) => process_name(pid, names.get(&pid).map(String::as_str), &table),
                None => files.context_name(r.who.thread),
            });
            if let Some(name) = name {
                let name = name.unwrap_or_else(|| format!("[context {}]", r.who.thread));
                batch.servers.names.push((row, name));
            }
            match r.kernel {
                true => batch.servers.account.server_kernel += 1,
                false => batch.servers.account.server_user += 1,
            }
            batch.servers.samples.push((row, taken(r, self.tsc.as_ref(), true)));
        }
    }

    /// `start all` on typed records: every process's requests, in time order, as a program's
    /// are timed (its callers' side, its daemon's split, the chains, its site).
    fn every_request(&self, view: &mut ProgramRecords, batch: &mut SampleBatch) {
        for e in self.in_time_order(view, batch) {
            view.event(e, batch);
        }
    }

    /// The batch's events in time order for `view`, which times every request the records
    /// show (a typed session has them all), the batch's scheme calls taken first.
    fn in_time_order(&self, view: &mut ProgramRecords, batch: &mut SampleBatch) -> Vec<&Event> {
        batch.requests.source = Some(prof_core::requests::RequestSource::SchemeRequests);
        batch.requests.sides_in_calls = view.records_system_calls();
        view.calls_in(self.events);
        let mut ordered: Vec<&Event> = self.events.iter().collect();
        ordered.sort_by_key(|e| e.time());
        ordered
    }

    /// One program's session: its samples from its exec, the rest accounted for (idle, the
    /// daemons working for it, its children, the others), and its end.
    fn program(&self, program: &mut Program, clock: Option<&mut ProgramRecords>, files: &mut impl DebugFiles, batch: &mut SampleBatch) -> Result<(), ProfError> {
        let events = self.events;
        // Its exec: the record of it (typed records), else its name's change. The name now
        // (after its exec) is also what the threads it starts bear.
        let execs = |pid| {
            events.iter().filter_map(move |e| match e {
                Event::Exec { who, time, .. } if who.pid == Some(pid) => Some(*time),
                _ => None,
            })
        };
        let now = match self.typed {
            true => None,
            false => program.first.and_then(|id| files.context_name(id)),
        };
        if self.typed {
            let first = program.exec_at.is_none();
            program.exec_at = program.exec_at.or(execs(program.pid).min());
            let later = execs(program.pid).count().saturating_sub(usize::from(first && program.exec_at.is_some()));
            batch.later_execs += u32::try_from(later).unwrap_or(u32::MAX);
        }
        let exec_done = match self.typed {
            true => program.exec_at.is_some(),
            false => now.as_deref().is_some_and(|n| n != program.name0),
        };
        // Before its exec the program runs profil's code (the launch): not its own.
        let (from_exec, exec_at) = (program.from_exec, program.exec_at);
        let counted = move |time: u64| !from_exec || exec_at.map_or(exec_done, |at| time >= at);
        // Redox programs are static, run at their link addresses: the kernel tells no
        // mapping here, and needs none.
        if exec_done || !program.from_exec {
            batch.load_base = Some(0);
        }
        // The context table: the names of daemons and children, and whether the program lives.
        let table = files.contexts().map_err(|e| errno("reading sys:context", &e))?;
        let mut clock = clock;
        match clock.as_deref_mut() {
            Some(view) => self.program_in_time_order(program, view, counted, &table, batch),
            None => {
                for r in cpu_samples(events) {
                    if self.is_idle(r) {
                        batch.servers.account.idle += 1;
                    } else if !program.owns(r.who, now.as_deref(), files) {
                        batch.servers.account.other += 1;
                    } else if counted(r.time) {
                        count_programs(batch, r, self.tsc.as_ref());
                    }
                }
            }
        }
        if !alive_in_context_table(&table, program.pid) {
            batch.ended = Some(StopReason::Exit);
            // The tree's requests taken and not answered: the program ended in them.
            if let Some(view) = clock {
                view.unanswered(batch);
            }
        }
        Ok(())
    }

    /// Typed records: every CPU's events in time order, the program's samples its own (after a
    /// later exec, the image it became), a child's its, a daemon's working for it the
    /// daemons', the rest the others'; the other events the clock's.
    fn program_in_time_order(&self, program: &mut Program, view: &mut ProgramRecords, counted: impl Fn(u64) -> bool, table: &str, batch: &mut SampleBatch) {
        for e in self.in_time_order(view, batch) {
            if let Event::Exec { who, time, .. } = e {
                if who.pid == Some(program.pid) && program.exec_at.is_some_and(|at| *time > at) {
                    view.program_became(*time);
                }
            }
            match e {
                Event::Sample(r) if !ProgramRecords::is_block(r) => {
                    if r.who.pid == Some(program.pid) {
                        if !view.became_sample(r, batch) && counted(r.time) {
                            count_programs(batch, r, self.tsc.as_ref());
                        }
                    } else if self.is_idle(r) {
                        batch.servers.account.idle += 1;
                    } else if !(counted(r.time) && (view.child_sample(r, batch) || view.serve(r, batch))) {
                        batch.servers.account.other += 1;
                    }
                }
                _ if counted(e.time()) => view.event(e, batch),
                _ => {}
            }
        }
        view.name_execs(batch, |pid| name_in_context_table(table, pid));
        // Every daemon the session lists is named: one sampled working for the program, and
        // one that took its requests (the scheme's daemon) or served one whole, unsampled.
        // And the daemons of the requests timed (a child's, a link of a chain).
        let timed = batch.requests.done.iter().map(|r| &r.key).chain(batch.requests.nested.iter().map(|n| &n.1));
        let timed = timed.filter_map(|k| k.as_scheme()).map(|k| k.1).filter(|&pid| pid != 0);
        let served = batch.servers.served.iter().map(|s| s.0).chain(batch.servers.schemes.iter().map(|s| s.1)).chain(timed);
        let new: Vec<u32> = batch.servers.samples.iter().map(|s| s.0).chain(served).filter(|&pid| program.daemons.insert(pid)).collect();
        for pid in new {
            let name = process_name(pid, view.name_of(pid), table);
            batch.servers.names.push((pid, name.unwrap_or_else(|| "[exited]".to_string())));
        }
    }
}

#[cfg(target_os = "redox")]
pub use debug_files::RealDebugFiles;

/// Upstream's files on Redox, all opened at once (profd then enters the null namespace).
#[cfg(target_os = "redox")]
mod debug_files {
    use std::io;

    use libredox::flag::{O_DIRECTORY, O_RDONLY, O_WRONLY};
    use libredox::Fd;

    use super::{DebugFiles, Recording};

    fn io_err(e: libredox::error::Error) -> io::Error {
        io::Error::from_raw_os_error(e.errno())
    }

    /// The whole of entry `name` of the scheme whose root is `root` (a `sys:` file's content
    /// is made once per open, so each read opens it afresh).
    fn read_entry(root: &Fd, name: &str) -> io::Result<Vec<u8>> {
        let fd = root.openat(name, O_RDONLY, 0).map_err(io_err)?;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match fd.read(&mut buf).map_err(io_err)? {
                0 => return Ok(out),
                n => out.extend_from_slice(&buf[..n]),
            }
        }
    }

    pub struct RealDebugFiles {
        ctl: Fd,
        rings: Vec<Fd>,
        sys: Fd,
    }

    impl RealDebugFiles {
        /// `debug:ctl-profiling`, every `profiling-N` there is, and `sys:` for `context` (root
        /// only: the debug scheme refuses anyone else).
        pub fn open() -> io::Result<RealDebugFiles> {
            // By their whole paths: the debug scheme opens its files from its root capability
            // alone, which `/scheme/debug` opened as a directory is not.
            let ctl = Fd::open("/scheme/debug/ctl-profiling", O_WRONLY, 0).map_err(io_err)?;
            let rings: Vec<Fd> =
                (0..).map_while(|n| Fd::open(&format!("/scheme/debug/profiling-{n}"), O_RDONLY, 0).ok()).collect();
            let sys = Fd::open("/scheme/sys", O_RDONLY | O_DIRECTORY, 0).map_err(io_err)?;
            Ok(RealDebugFiles { ctl, rings, sys })
        }
    }

    impl DebugFiles for RealDebugFiles {
        fn set_profiling(&mut self, mode: Recording, rate: Option<u64>) -> io::Result<()> {
            self.ctl.write(super::ctl_text(mode, rate).as_bytes()).map(|_| ()).map_err(io_err)
        }
        fn rings(&self) -> usize {
            self.rings.len()
        }
        fn read_ring(&mut self, cpu: usize, buf: &mut [u8]) -> io::Result<usize> {
            let whole = buf.len() / 8 * 8;
            self.rings[cpu].read(&mut buf[..whole]).map_err(io_err)
        }
        fn context_name(&mut self, debug_id: u32) -> Option<String> {
            let mut name = [0u8; 32];
            let ring = self.rings.first()?;
            let n = ring.call_ro(&mut name, syscall::CallFlags::empty(), &[u64::from(debug_id)]).ok()?;
            Some(String::from_utf8_lossy(&name[..n.min(name.len())]).into_owned())
        }
        fn contexts(&mut self) -> io::Result<String> {
            read_entry(&self.sys, "context").map(|b| String::from_utf8_lossy(&b).into_owned())
        }
        #[cfg(target_arch = "x86_64")]
        fn clocks(&mut self) -> io::Result<(u64, u64)> {
            let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: rdtsc reads a counter; clock_gettime writes the timespec.
            let (tsc, r) = unsafe { (core::arch::x86_64::_rdtsc(), libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t)) };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok((tsc, t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64))
        }
        #[cfg(not(target_arch = "x86_64"))]
        fn clocks(&mut self) -> io::Result<(u64, u64)> {
            Err(io::ErrorKind::Unsupported.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ctl_text, Recording};

    /// What the kernel's `debug:ctl-profiling` parses (kernel-patch/events, `rate::parse_ctl`):
    /// one byte as upstream's, or the mode, a space and the rate in decimal.
    #[test]
    fn the_ctl_text_is_the_mode_then_the_rate() {
        assert_eq!(ctl_text(Recording::Off, None), "0");
        assert_eq!(ctl_text(Recording::Upstream, None), "1");
        assert_eq!(ctl_text(Recording::Typed, None), "2");
        assert_eq!(ctl_text(Recording::Syscalls, Some(1000)), "3 1000");
        assert_eq!(ctl_text(Recording::Typed, Some(4000)), "2 4000");
        assert_eq!(ctl_text(Recording::Upstream, Some(100)), "1 100");
    }
}
