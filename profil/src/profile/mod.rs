//! The result of one profiled run, whichever OS backend produced it: the run's model. Each
//! backend fills it from what it has: an embedded session ([`of_session`], Linux) or the
//! `prof:` scheme's files ([`of_scheme`], Redox); a saved run is a type of its own
//! (`saved::run`), made from this one.

use prof_core::formats::StackFrame;
use prof_core::sampler::{Mapping, Sampling};
use prof_core::{ProfData, StopReason};

pub use crate::frame::Frame;

pub mod of_scheme;
pub mod of_session;
pub mod redox_clock;

/// A recorded call stack and how many samples had it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stack {
    /// Innermost first: the sampled function, then its callers.
    pub frames: Vec<Frame>,
    /// The outermost callers are missing (the unwind stopped early).
    pub truncated: bool,
    pub count: u64,
}

impl Stack {
    /// A stack of placed frames (`Session::stack_frames`, `/scheme/prof/stacks`): each caller
    /// is named by its return address minus one.
    pub(crate) fn new(frames: Vec<StackFrame>, truncated: bool, count: u64) -> Stack {
        let frame = |(i, f): (usize, StackFrame)| {
            let back = u64::from(i > 0);
            match f {
                StackFrame::Text(a) => Frame::Program(a.wrapping_sub(back)),
                StackFrame::Other(a) => Frame::Foreign(a.wrapping_sub(back)),
                StackFrame::Kernel(a) => Frame::Kernel(a.wrapping_sub(back)),
            }
        };
        Stack { frames: frames.into_iter().enumerate().map(frame).collect(), truncated, count }
    }
}

/// Everything the reports are made from: the run as its renderers read it. Its parts are
/// private: a backend, a saved run or a filter builds them ([`Parts`]) and hands them over;
/// the sections and exports only read (the accessors below), and find their names in the
/// naming pass's tables ([`crate::naming`]), not here.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    parts: Parts,
}

/// A profile's parts, as a backend fills them (or a saved run, a filter, a test): the plain
/// record of the run that [`Profile`] keeps private.
#[derive(Debug, Clone, Default)]
pub struct Parts {
    /// The profiled process (0 where the backend does not say).
    pub pid: u32,
    /// The Minix bins.
    pub data: ProfData,
    /// Exact samples inside the program's text, link-time address -> ticks.
    pub image_samples: Vec<(u64, u64)>,
    /// Exact samples elsewhere (shared objects, vdso), runtime address -> ticks.
    pub foreign_samples: Vec<(u64, u64)>,
    /// Exact samples in the kernel, where the backend takes them (Redox with an NMI source).
    pub kernel_samples: Vec<(u64, u64)>,
    /// Executable mappings of the process, to name foreign samples.
    pub mappings: Vec<Mapping>,
    pub user_ticks: u64,
    /// `None` where the OS did not let us count kernel-mode ticks.
    pub kernel_ticks: Option<u64>,
    /// Samples the sampler had to drop.
    pub lost: u64,
    /// Whether call stacks were recorded (`-g`), and they.
    pub stacks_recorded: bool,
    pub stacks: Vec<Stack>,
    /// The program's samples by thread (Linux), by tid.
    pub by_thread: Vec<ThreadSamples>,
    /// The program's samples in time order, where the backend times them (Linux): a window
    /// of the run (`--time`), its phases (`--timeline`).
    pub timeline: crate::timeline::Timeline,
    pub stop_reason: Option<StopReason>,
    /// Programs the process exec'd after the profiled one (the bins are of the first): their
    /// files where known, else "another program".
    pub later_execs: Vec<String>,
    /// Samples of processes the program started, which the profile leaves out: (processes,
    /// samples).
    pub children: (u64, u64),
    /// The processes the program started, each profiled on its own (`--children`), by pid.
    pub processes: Vec<ChildProfile>,
    /// A system-wide run (`-a`): idle CPUs' samples. The run has no program then: its
    /// processes are every process that ran.
    pub idle_ticks: Option<u64>,
    /// The daemons that worked for the program and the account of the run's ticks, where the
    /// backend labels servers (Redox: `/scheme/prof/servers`).
    pub servers: Option<prof_core::formats::ServersReport>,
    /// The daemons that worked for the program (Redox), each a process of its own with its
    /// samples in time order, for the exports over time (the Firefox Profiler's tracks); the
    /// reports take the daemons from `servers`.
    pub daemons: Vec<ChildProfile>,
    pub source: Source,
    pub clock: Clock,
    /// Its requests with their latencies (`--requests`: Linux, its system calls; with
    /// `--children` also those of the processes it started, by pid), or why the backend
    /// could not record them.
    pub requests: Option<prof_core::requests::RequestLog>,
}

/// How a run was recorded, beside its samples: a loaded run's report takes these from the
/// run (its saved file), not from the options of the profil reporting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recording {
    /// Call stacks recorded (`-g`), and how.
    pub call_graph: prof_core::sampler::CallGraph,
    /// The processes the program started followed (`--children`).
    pub children: bool,
}

/// How the samples were taken, where the backend says (Redox).
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The kernel's source and its rate.
    pub sampling: Option<Sampling>,
    /// The machine's CPUs, where that matters (Redox: its NMIs reach every CPU but the one
    /// that sends them).
    pub cpus: Option<u64>,
    /// The CPUs the kernel samples, a ring each, where profd says (Redox: every CPU but the
    /// one that sends upstream's NMIs).
    pub rings: Option<u64>,
    /// The session as the kernel's records time it (Redox, upstream's profiler): the rate its
    /// source sent and the span the records cover.
    pub record_span: Option<prof_core::sampler::RecordSpan>,
    /// The kernel's records name each sample's process (Redox, upstream's profiler with typed
    /// records): the clock, the daemons' work, a system-wide run by process.
    pub typed_records: bool,
    /// The kernel the run was recorded on (Linux): a saved run's kernel samples are named by
    /// default only on its boot ([`crate::kernel`]).
    pub kernel: Option<crate::kernel::KernelId>,
}

/// The run by the clock: its wall time, each thread's account, and where they waited.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// The session's wall time, as profil measured it (from the program's start, or the
    /// attach, to its end).
    pub elapsed: Option<std::time::Duration>,
    /// Each thread's time by the clock: on a CPU, preempted, blocked (Linux), by tid.
    pub threads: Vec<prof_core::ledger::ThreadTime>,
    /// The wait sites the off-CPU probes found, numbered as the threads' waits name them.
    pub wait_sites: Vec<WaitSite>,
    /// `--off-cpu` was on: how its probes looked, and what kept them from seeing, if anything.
    pub off_cpu: Option<OffCpu>,
    /// Redox: daemons' samples while they served a wait of the program, each under the wait
    /// site it served (the kernel's stitching, `served` lines of `/scheme/prof/clock`).
    pub served: Vec<ServedStack>,
}

/// One thread's samples: its tid, its name (`comm`, as the kernel had it when first
/// sampled), and its samples by address (placed as the flat profile's are).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadSamples {
    pub tid: u32,
    pub name: String,
    pub samples: Vec<(Frame, u64)>,
}

/// A daemon's samples at one stack (its own addresses) while it worked on the request a
/// thread of the program was blocked on at wait site `site` (an index of `wait_sites`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServedStack {
    pub site: u32,
    pub pid: u32,
    pub frames: Vec<u64>,
    pub truncated: bool,
    pub count: u64,
}

/// Where a thread of the program was blocked: the system call, what it waited on where known,
/// and its user stack there (`count` unused).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WaitSite {
    /// The process whose thread waited (the program's pid, or a child's with `--children`:
    /// its frames are then the child's runtime addresses, all `Frame::Foreign`).
    pub pid: u32,
    pub call: String,
    pub target: Option<String>,
    pub stack: Stack,
}

/// How the program's waits were found: looks at its blocked threads (Linux), or the kernel
/// timing every block (Redox, `kernel`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OffCpu {
    /// Looks a second at each thread: a wait shorter than `1 / rate` may be seen by none.
    pub rate: u64,
    /// Why they saw less than they should (no access to a thread), if they did.
    pub problem: Option<String>,
    /// The kernel timed every block at its user stack (Redox): no look, so every wait's count
    /// and mean are exact.
    #[serde(default)]
    pub kernel: bool,
}

/// A process the program started (directly or not), followed with `--children`.
#[derive(Debug, Clone)]
pub struct ChildProfile {
    pub pid: u32,
    /// The process that started it, where that was seen.
    pub parent: Option<u32>,
    /// Its program: the file it exec'd (as mapped), else its parent's (a forked copy).
    pub program: String,
    /// Its own profile: no bins, every sample a runtime address among its `mappings`.
    pub profile: Profile,
    /// It was still running when the session ended (the program exited before it): what it
    /// did after that is not in its profile.
    pub running: bool,
}

impl From<Parts> for Profile {
    fn from(parts: Parts) -> Profile {
        Profile { parts }
    }
}

impl Profile {
    /// Its parts, to be rebuilt (a filter, a window of the run, a saved run's conversion).
    pub fn into_parts(self) -> Parts {
        self.parts
    }

    /// Every part, read: for the saved format, which keeps them all (`saved::run`).
    pub fn parts(&self) -> &Parts {
        &self.parts
    }

    /// Its parts, to be changed in place where a step of the run's making owns the profile
    /// (the backends' finishing touches, the filters): never a renderer's.
    pub fn parts_mut(&mut self) -> &mut Parts {
        &mut self.parts
    }

    pub fn pid(&self) -> u32 {
        self.parts.pid
    }
    pub fn data(&self) -> &ProfData {
        &self.parts.data
    }
    pub fn image_samples(&self) -> &[(u64, u64)] {
        &self.parts.image_samples
    }
    pub fn foreign_samples(&self) -> &[(u64, u64)] {
        &self.parts.foreign_samples
    }
    pub fn kernel_samples(&self) -> &[(u64, u64)] {
        &self.parts.kernel_samples
    }
    pub fn mappings(&self) -> &[Mapping] {
        &self.parts.mappings
    }
    pub fn user_ticks(&self) -> u64 {
        self.parts.user_ticks
    }
    pub fn kernel_ticks(&self) -> Option<u64> {
        self.parts.kernel_ticks
    }
    /// Its own samples, user and kernel.
    pub fn ticks(&self) -> u64 {
        self.parts.user_ticks.saturating_add(self.parts.kernel_ticks.unwrap_or(0))
    }
    pub fn lost(&self) -> u64 {
        self.parts.lost
    }
    pub fn stacks_recorded(&self) -> bool {
        self.parts.stacks_recorded
    }
    pub fn stacks(&self) -> &[Stack] {
        &self.parts.stacks
    }
    pub fn by_thread(&self) -> &[ThreadSamples] {
        &self.parts.by_thread
    }
    pub fn timeline(&self) -> &crate::timeline::Timeline {
        &self.parts.timeline
    }
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.parts.stop_reason
    }
    pub fn later_execs(&self) -> &[String] {
        &self.parts.later_execs
    }
    pub fn children(&self) -> (u64, u64) {
        self.parts.children
    }
    pub fn processes(&self) -> &[ChildProfile] {
        &self.parts.processes
    }
    pub fn idle_ticks(&self) -> Option<u64> {
        self.parts.idle_ticks
    }
    pub fn servers(&self) -> Option<&prof_core::formats::ServersReport> {
        self.parts.servers.as_ref()
    }
    pub fn daemons(&self) -> &[ChildProfile] {
        &self.parts.daemons
    }
    pub fn source(&self) -> &Source {
        &self.parts.source
    }
    pub fn clock(&self) -> &Clock {
        &self.parts.clock
    }
    pub fn requests(&self) -> Option<&prof_core::requests::RequestLog> {
        self.parts.requests.as_ref()
    }

    /// The samples a second and CPU the source delivered: every tick of the run (the
    /// program's, the daemons', idle's and other processes': the account closes over them) over
    /// the session's wall time and CPUs. Where the backend accounts the whole run (Redox).
    pub fn achieved_rate(&self) -> Option<f64> {
        let cpus = self.sampled_cpus()?;
        // Over the span the records cover, where they have times: profil's wall time also
        // holds the fork before the program and the reap after it, the session not.
        let span = match self.source().record_span {
            Some(r) if r.rate_sent > 0 => r.span_ns as f64 / 1e9,
            // Too few records to time the source (a program of a few ms): no rate to tell.
            Some(_) => return None,
            None => self.clock().elapsed?.as_secs_f64(),
        };
        let seconds = span * cpus as f64;
        // The processes it started (`--children`), or every process of a system-wide run.
        let processes = self.processes().iter().fold(0u64, |n, c| n.saturating_add(c.profile.ticks()));
        let all = match self.idle_ticks() {
            Some(idle) => [processes, idle].into_iter().fold(0u64, u64::saturating_add),
            None => {
                let a = self.servers()?.account;
                [self.ticks(), a.servers(), a.idle, a.other, processes].into_iter().fold(0u64, u64::saturating_add)
            }
        };
        (seconds > 0.0).then(|| all as f64 / seconds)
    }

    /// The program's profile and each process it started (`--children`, or `-a`'s), the
    /// program first: every process of the run.
    pub fn with_processes(&self) -> impl Iterator<Item = &Profile> {
        std::iter::once(self).chain(self.processes().iter().map(|c| &c.profile))
    }

    /// The run's span in time order, ns from the program's start: to the end of its last
    /// process (a child may outlive the program).
    pub fn run_span(&self) -> u64 {
        self.with_processes().map(|p| p.timeline().span).max().unwrap_or(0)
    }

    /// Whether any process of the run has its samples in time order.
    pub fn has_times(&self) -> bool {
        self.with_processes().any(|p| !p.timeline().is_empty())
    }

    /// The CPUs sampled: those the kernel has a ring for, where profd says; else every CPU
    /// but, on upstream's profiler, the one that sends its NMIs (which has no ring).
    pub fn sampled_cpus(&self) -> Option<u64> {
        match self.source().sampling.is_some_and(|s| s.is_upstreams()) {
            _ if self.source().rings.is_some() => self.source().rings,
            true => Some(self.source().cpus?.saturating_sub(1)),
            false => self.source().cpus,
        }
    }

    /// Is this a system-wide run's (`-a`): no program, every process among `processes`?
    pub fn is_system_wide(&self) -> bool {
        self.idle_ticks().is_some()
    }

    /// What the ids of its `processes` are: pids ([`PID`]), or, where they come from
    /// upstream's records without types (a stock kernel's `-a`: they name the running
    /// context, a thread, by its debug id, never its process), contexts' debug ids
    /// ([`CONTEXT`]).
    pub fn process_id_word(&self) -> &'static str {
        let upstream = self.source().sampling.is_some_and(|s| s.is_upstreams());
        match upstream && !self.source().typed_records {
            true => CONTEXT,
            false => PID,
        }
    }

}

/// A later exec whose file is not among the mappings.
pub const ANOTHER_PROGRAM: &str = "another program";

/// A process (or a daemon) as the report names it, by what is known of it: its program's
/// short `name` and its pid (`ramfs [pid 7]`); without a name, pid 0 is the bootstrap's
/// managers, which have no pid of their own (`[bootstrap] [pid 0]`), another its pid alone
/// (`[pid 7]`), never an empty name.
pub fn process_label(name: &str, pid: u32) -> String {
    row_label(name, pid, PID)
}

/// The word a process's id is: its pid.
pub const PID: &str = "pid";
/// The word a row's id is where the rows are upstream's contexts, by debug id (a stock
/// kernel's `-a`): not a pid.
pub const CONTEXT: &str = "context";

/// A row of a run's processes as the report names it: [`process_label`], or, where the rows
/// are contexts (`word` [`CONTEXT`]), by the context's debug id (`fib [context 24]`,
/// `[context 24]`).
pub fn row_label(name: &str, id: u32, word: &str) -> String {
    match (name, id) {
        ("", 0) if word == PID => format!("{} [pid 0]", prof_samplers::context_table::BOOTSTRAP),
        ("", id) => format!("[{word} {id}]"),
        (name, id) => format!("{name} [{word} {id}]"),
    }
}

/// How the program ended, as `wait` reported it; or, for a process profil attached to (not
/// its child, so no status), whether it had exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExitKind {
    Exited(i32),
    Signaled(i32),
    Attached { pid: u32, exited: bool },
}

/// A finished run: the profile and what the reports and exports say about the run itself.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The program as named on the command line.
    pub program: String,
    /// Its arguments.
    pub arguments: Vec<String>,
    pub frequency_hz: u64,
    pub profile: Profile,
    pub exit: ExitKind,
    /// The program is a `#!` script, run by these (the last one's text gives the bins).
    pub interpreters: Vec<String>,
}

/// A run of fib with a little of everything a report shows: bins, samples in the program and
/// a library, stacks, a daemon that worked for it (Redox), a thread by the clock and a wait
/// (the golden files' run).
#[cfg(test)]
pub(crate) fn example() -> Profile {
    use prof_core::image::TextSegment;
    use prof_core::{BinLayout, StopReason};
    let text = TextSegment { start: 0x1000, end: 0x3000 };
    let mut data = ProfData::new(&BinLayout::new(text, 0x1000, 0x1400, 0x100).unwrap());
    data.bin[0] = 6;
    Profile::from(Parts {
        data,
        image_samples: vec![(0x1000, 5), (0x10ff, 1), (0x2010, 3)],
        foreign_samples: vec![(0x7f00_0000_1010, 2)],
        kernel_samples: Vec::new(),
        children: (0, 0),
        mappings: vec![Mapping {
            start: 0x7f00_0000_1000,
            len: 0x1000,
            pgoff: 0,
            path: "/no/such/libc.so.6".into(),
            file: None,
            build_id: None,
        }],
        user_ticks: 11,
        kernel_ticks: Some(4),
        lost: 0,
        stop_reason: Some(StopReason::Exit),
        later_execs: Vec::new(),
        stacks_recorded: true,
        stacks: vec![
            Stack { frames: vec![Frame::Program(0x1000), Frame::Program(0x2010)], truncated: false, count: 6 },
            Stack { frames: vec![Frame::Program(0x2010)], truncated: true, count: 3 },
            Stack { frames: vec![Frame::Foreign(0x7f00_0000_1010), Frame::Program(0x2010)], truncated: false, count: 2 },
        ],
        // A daemon that worked for it (Redox), whose executable cannot be read here.
        servers: Some(prof_core::formats::ServersReport {
            own_user: 11,
            own_kernel: 4,
            account: prof_core::sampler::Account { server_user: 7, server_kernel: 1, servers_dropped: 0, idle: 3, other: 2 },
            servers: vec![prof_core::formats::ServerEntry {
                pid: 7,
                ticks: 7,
                path: "/no/such/ramfs".into(),
                stacks: vec![(vec![0x40_2010, 0x40_3005], false, 5), (vec![0x40_2020], true, 2)],
            }],
        }),
        pid: 42,
        processes: Vec::new(),
        by_thread: Vec::new(),
        idle_ticks: None,
        daemons: Vec::new(),
        timeline: Default::default(),
        source: Source::default(),
        clock: Clock {
            elapsed: Some(std::time::Duration::from_millis(1250)),
            threads: vec![prof_core::ledger::ThreadTime {
                tid: 42,
                wall: 1_250_000_000,
                preempted: 5_000_000,
                blocked: 1_000_000_000,
                waits: vec![
                    prof_core::ledger::Wait { site: 0, ns: 900_000_000, count: 3 },
                    prof_core::ledger::Wait { site: prof_core::ledger::UNSEEN, ns: 100_000_000, count: 40 },
                ],
                unknown: 0,
            }],
            // --off-cpu: three reads of a pipe, from fib by way of libc's read.
            wait_sites: vec![WaitSite {
                pid: 42,
                call: "read".into(),
                target: Some("pipe:[7]".into()),
                stack: Stack { frames: vec![Frame::Foreign(0x7f00_0000_1010), Frame::Program(0x1010)], truncated: false, count: 0 },
            }],
            off_cpu: Some(OffCpu { rate: 1000, problem: None, kernel: false }),
            served: Vec::new(),
        },
        requests: None,
    })
}

