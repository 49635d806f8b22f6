//! The [`Sampler`] trait: what an OS backend provides to a profiling session.
//!
//! A backend counts the user-mode instruction pointers of one process and hands them over in
//! batches; the rules (ranges, bins, overflow, who may do what) stay in [`crate::session`].
//!
//! The backends are in `prof-samplers`: Linux's `perf_event_open(2)`, Redox's kernel
//! profiler's rings (`debug:profiling-N`).

use crate::error::ProfError;
use crate::image::ImageLayout;
use crate::sample::{CallStack, Sample};

/// Why a session stopped: `profile(0, ...)` or `stop`, the process's exit, or a bin counter
/// that would have overflowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// `stop`, or a start with pid 0.
    Request,
    /// The last context of the profiled process exited.
    Exit,
    /// A counter would have passed its limit; that tick was not counted.
    Overflow,
}

impl StopReason {
    /// The name `prof:status` shows (`reason=exit`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Request => "request",
            StopReason::Exit => "exit",
            StopReason::Overflow => "overflow",
        }
    }
}

/// When a session starts counting: `prof:ctl` says it with a final `exec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountFrom {
    /// At once: attaching to a running process.
    Now,
    /// From the process's next exec: a launcher starts the session on its child before the
    /// child execs the program, as perf's `enable_on_exec`.
    Exec,
}

/// Whether and how a backend records the call stack of each sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallGraph {
    /// One address per sample (the Minix profile).
    #[default]
    None,
    /// The frame-pointer chain, walked by the kernel (needs code built with frame pointers).
    FramePointers,
    /// A copy of the top `stack_size` bytes of the user stack and the registers, unwound
    /// with the objects' DWARF CFI (`.eh_frame`): works without frame pointers.
    Dwarf { stack_size: u32 },
}

/// Default bytes of user stack copied per sample in [`CallGraph::Dwarf`] (as `perf`'s).
pub const DEFAULT_STACK_SIZE: u32 = 16 * 1024;

/// Most bytes of user stack Linux copies per sample (`sample_stack_user`).
pub const MAX_STACK_SIZE: u32 = 65528;

/// A stack copy size Linux takes: a multiple of 8 from 8 to [`MAX_STACK_SIZE`].
pub fn is_valid_stack_size(bytes: u64) -> bool {
    (8..=u64::from(MAX_STACK_SIZE)).contains(&bytes) && bytes.is_multiple_of(8)
}

/// Where a blocked thread waited: the system call it was in (or why else it was off the CPU),
/// what it waited on where that is known (a file, a pipe, a socket, a child), and its user
/// stack at the call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WaitSite {
    /// The process whose thread waited: the program, or a child it started (`--children`).
    pub pid: u32,
    /// `read`, `futex`, `clock_nanosleep`, `syscall 451`; `not in a system call` (a page
    /// fault, a stop).
    pub call: String,
    pub target: Option<String>,
    pub stack: CallStack,
}

/// A look at a thread of the program at some time from `from` to `to` (ns of the switches'
/// clock): its scheduler statistics where read, and where it was blocked (`None`: it was on
/// a CPU or runnable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub tid: u32,
    pub from: u64,
    pub to: u64,
    pub sched: Option<crate::ledger::Sched>,
    pub site: Option<WaitSite>,
}

/// An executable mapping of some object (the program, ld.so, libc, the vdso) in the profiled
/// process, in runtime addresses, so samples outside the program can be attributed by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Mapping {
    pub start: u64,
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The path as the kernel gave it, for reports (not UTF-8: lossily).
    pub path: String,
    /// Where to read the object when `path` cannot say it exactly: the path's own bytes when
    /// they are not UTF-8, or, for a file deleted or replaced since it was mapped, a link of the
    /// process's that still opens it (`/proc/PID/exe`, `/proc/PID/map_files/…`).
    pub file: Option<std::path::PathBuf>,
    /// The object's GNU build-id, in hex: recorded when the run is saved (`profil --save`), so
    /// a report elsewhere reads the same build of it or none (`None`: not recorded, or the
    /// object has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
}

impl Mapping {
    /// The file to read the mapped object from: [`Mapping::file`], else an absolute `path`.
    pub fn source(&self) -> Option<&std::path::Path> {
        self.file.as_deref().or_else(|| self.path.starts_with('/').then(|| std::path::Path::new(&self.path)))
    }

    /// The mapping of `mappings` (in the order they were made) that holds runtime address
    /// `addr`: the latest, since an address range can be unmapped and reused.
    pub fn at(mappings: &[Mapping], addr: u64) -> Option<&Mapping> {
        mappings.iter().rev().find(|m| m.start <= addr && addr - m.start < m.len)
    }
}

/// Ticks of the run outside the program's own, where the backend sees them (Redox: from the
/// kernel's scheme-request records): daemons working for the program, idle, the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    /// User-mode ticks of daemons while they worked for the program.
    pub server_user: u64,
    /// Their kernel-mode ticks.
    pub server_kernel: u64,
    /// Server user ticks whose sample the backend could not keep (its table was full).
    pub servers_dropped: u64,
    /// Ticks of idle contexts and kernel threads.
    pub idle: u64,
    /// Ticks of every other process.
    pub other: u64,
}

impl Account {
    pub fn add(&mut self, more: &Account) {
        self.server_user = self.server_user.saturating_add(more.server_user);
        self.server_kernel = self.server_kernel.saturating_add(more.server_kernel);
        self.servers_dropped = self.servers_dropped.saturating_add(more.servers_dropped);
        self.idle = self.idle.saturating_add(more.idle);
        self.other = self.other.saturating_add(more.other);
    }

    pub fn servers(&self) -> u64 {
        self.server_user.saturating_add(self.server_kernel)
    }
}

/// How a backend samples on Redox: its source (`nmi-ipi`, the kernel profiler's NMIs; `timer`,
/// its tick where one CPU has no NMI sender; `nmi-hpet` in runs saved under an earlier kernel
/// design) and the source's rate, samples per second and CPU (0: the kernel's own, which it
/// does not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Sampling {
    pub source: &'static str,
    pub rate: u64,
}

/// The session as the kernel's records time it (upstream's profiler: each record has the TSC):
/// the samples a second per CPU its source sent, from the gaps between a CPU's consecutive
/// records, and the span from the session's first record to its last, over which the rate
/// delivered is counted. 0: not known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordSpan {
    pub rate_sent: u64,
    pub span_ns: u64,
}

/// The sources a backend names ([`Sampling::source`]).
pub const SOURCES: [&str; 3] = ["timer", "nmi-hpet", UPSTREAM_SOURCE];

/// Upstream Redox's own profiler (a stock kernel): NMIs from a CPU of its own.
pub const UPSTREAM_SOURCE: &str = "nmi-ipi";

impl Sampling {
    /// Upstream's profiler on a stock kernel, at its own rate: what the kernel does not record
    /// (idle, the daemons' work for the program, pids) is not in the run.
    pub fn upstream() -> Sampling {
        Sampling { source: UPSTREAM_SOURCE, rate: 0 }
    }

    pub fn is_upstreams(&self) -> bool {
        self.source == UPSTREAM_SOURCE
    }
}

impl<'de> serde::Deserialize<'de> for Sampling {
    /// Read back with its source one of [`SOURCES`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Sampling, D::Error> {
        #[derive(serde::Deserialize)]
        struct Saved {
            source: String,
            rate: u64,
        }
        let saved = Saved::deserialize(d)?;
        let source = SOURCES
            .into_iter()
            .find(|&s| s == saved.source)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown sampling source {:?}", saved.source)))?;
        Ok(Sampling { source, rate: saved.rate })
    }
}

/// First address of the kernel's half of the address space: a sample or frame at or above it
/// is the kernel's (the kernel's own constant).
pub use prof_events::KERNEL_BASE as KERNEL_SPACE_START;

/// The rates (per second and CPU) a session may ask for: what the Redox kernel's NMIs take
/// (kernel-patch/events 0007, `HZ_RANGE`).
pub const MIN_RATE: u64 = 100;
pub const MAX_RATE: u64 = 10_000;

/// What a backend counted since the previous batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleBatch {
    /// The program's samples in the order sampled (user and kernel mode, every thread): the
    /// session's bins, exact samples, stacks, threads and timeline are their sums.
    pub samples: Vec<Sample>,
    /// The backend's sampling, where it reports one.
    pub sampling: Option<Sampling>,
    /// Samples of processes the program started (Linux: they inherit its events), by pid,
    /// which the profile leaves out (it is of one process): counted so the report can say so.
    pub children: Vec<(u32, u64)>,
    /// What was seen of each of those processes, where the session follows them
    /// (`--children`; Linux).
    pub child_processes: Vec<ChildBatch>,
    /// Readings of the backend's clock (ns: at the start; at each batch, before its records
    /// were read, so every switch stamped earlier is in it or an earlier batch): the session
    /// spans the first to the last.
    pub clock: Vec<u64>,
    /// The program's threads by that clock.
    pub threads: ThreadsBatch,
    /// Redox: the kernel's clock account of the program's threads as of this batch (it
    /// replaces an earlier one), where the kernel keeps one.
    pub kernel_clock: Option<crate::kernel_clock::ClockReport>,
    /// Each of the program's threads' name (`comm`) when first seen.
    pub thread_names: Vec<(u32, String)>,
    /// Samples the backend had to drop (ring buffer or table full).
    pub lost: u64,
    /// The runtime load base of the profiled image as the backend now knows it (a later
    /// value replaces an earlier one: the process exec'd).
    pub load_base: Option<u64>,
    /// Executable mappings seen in this batch.
    pub mappings: Vec<Mapping>,
    /// Execs of the profiled process after the one profiled (its bins are of the first).
    pub later_execs: u32,
    /// The session so far as the records time it (a later value replaces an earlier one).
    pub record_span: Option<RecordSpan>,
    /// The CPUs whose samples the backend reads (Redox: the kernel's `profiling-N` rings, one
    /// a CPU but the one that sends upstream's NMIs), where it says.
    pub rings: Option<u64>,
    /// The rate of the records' clock in counts a second, as the kernel stated it (Redox: its
    /// start records, kernel-patch/events), where it knows it.
    pub clock_hz: Option<u64>,
    /// The kernel's records name each sample's process (Redox's typed records): a system-wide
    /// run's rows are processes, not threads.
    pub typed_records: bool,
    /// Processes the program started that the backend could not follow (Redox: its table of
    /// followed processes was full), as of this batch (it replaces an earlier count).
    pub children_missed: Option<u64>,
    /// The daemons that worked for the program (Redox), or (`start all`, `-a`) every process,
    /// and the ticks outside the program.
    pub servers: ServersBatch,
    /// The program's requests (system calls, scheme requests) ended in this batch, where the
    /// backend records them.
    pub requests: crate::requests::RequestsBatch,
    /// The backend's session ended (the process exited, the kernel's counter would have
    /// overflowed, or someone stopped it underneath us); this batch holds everything counted.
    pub ended: Option<StopReason>,
}

/// What a batch saw outside the program: the daemons that worked for it (Redox's typed
/// records), or every process of a system-wide run, and where the other ticks went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServersBatch {
    /// Their samples: (the daemon's pid, or the row's, sample).
    pub samples: Vec<(u32, Sample)>,
    /// The executable of each first seen in `samples` (pid, path).
    pub names: Vec<(u32, String)>,
    /// Requests of the program's a daemon's thread worked on, whole (Redox: taken to answered):
    /// (the daemon's pid, its thread, from, to, the program's thread, where that one waited).
    pub served: Vec<(u32, u32, u64, u64, u32, Option<WaitSite>)>,
    /// The daemon of each scheme seen taking the program's requests: (scheme id, daemon pid).
    pub schemes: Vec<(u64, u32)>,
    /// The ticks outside the program counted in this batch.
    pub account: Account,
}

/// What a batch saw of the program's threads by the clock (Linux: its switch records and
/// `--off-cpu`'s looks; Redox: the typed switch records), which the session's ledger takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadsBatch {
    /// Their switches, starts and ends (tid, ns).
    pub switches: Vec<crate::ledger::Switch>,
    pub starts: Vec<(u32, u64)>,
    pub ends: Vec<(u32, u64)>,
    /// Probes of blocked threads (`--off-cpu`), and the time up to which every probe has come
    /// (the ledger settles no later than that); why probing stopped, if it did.
    pub probes: Vec<Probe>,
    pub probed_until: Option<u64>,
    pub probe_problem: Option<String>,
    /// Where threads blocked, taken as they blocked (a backend that records every switch:
    /// Redox's typed records): each names the blocked period it begins.
    pub blocked_at: Vec<Probe>,
    /// Whole waits, where the backend times both ends (Redox: the switch out that blocked and
    /// the switch back in): (tid, from, to, where), ns.
    pub wait_spans: Vec<(u32, u64, u64, WaitSite)>,
    /// Daemons' samples taken while a thread of the program was blocked on the request the
    /// daemon worked on: (the program's wait, daemon pid, stack, ticks), where the backend
    /// tells it (Redox's typed records).
    pub served: Vec<(WaitSite, u32, CallStack, u64)>,
}

/// What a backend saw in one batch of one process the program started (directly or not),
/// when the session follows them: its part, as the program's own is the rest of the batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildBatch {
    pub pid: u32,
    /// The process that started it, where its start was seen in this batch.
    pub parent: Option<u32>,
    /// Its name after an exec (the kernel's `comm`, 15 bytes at most), where it exec'd in this
    /// batch: its own mappings then replace the ones it inherited.
    pub exec: Option<String>,
    /// Its samples in the order sampled (a kernel sample is a tick of the process: its
    /// kernel addresses are not named).
    pub samples: Vec<Sample>,
    /// Executable mappings it made itself (the ones it inherited are its parent's).
    pub mappings: Vec<Mapping>,
    /// It exited in this batch.
    pub exited: bool,
}

/// The processes that made process `pid`'s address space, `pid` first: then the process that
/// started it, and so on up to the program `program_pid` (not included), ending at the first
/// that exec'd (what it had before is gone) or whose start was not seen (then the program
/// started it). `of` says a process's parent and whether it exec'd; `None`: not a child.
pub fn lineage(pid: u32, program_pid: u32, of: impl Fn(u32) -> Option<(Option<u32>, bool)>) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut at = pid;
    // Bounded: the records that say who started whom are not trusted to have no cycle.
    while at != program_pid && chain.len() < 64 {
        let Some((parent, exec)) = of(at) else { break };
        chain.push(at);
        if exec {
            break;
        }
        at = parent.unwrap_or(program_pid);
    }
    chain
}

/// The executable mappings process `pid` has, the program being `program_pid` with
/// `program_mappings`: a child's (see `of`: its parent, whether it exec'd, the mappings it
/// made) are what it inherited from the process that started it (a child whose start was
/// not seen inherited the program's) followed by its own, or, once it exec'd, its own only
/// ([`lineage`]). The latest mapping of an address is the one in force.
pub fn process_mappings<'a>(
    pid: u32,
    program_pid: u32,
    program_mappings: &'a [Mapping],
    of: impl Fn(u32) -> Option<(Option<u32>, bool, &'a [Mapping])>,
) -> Vec<Mapping> {
    let chain = lineage(pid, program_pid, |p| of(p).map(|(parent, exec, _)| (parent, exec)));
    let exec = chain.last().and_then(|&p| of(p)).is_some_and(|(_, exec, _)| exec);
    let mut out = if exec { Vec::new() } else { program_mappings.to_vec() };
    for own in chain.iter().rev().filter_map(|&p| of(p)).map(|(_, _, own)| own) {
        out.extend(own.iter().cloned());
    }
    out
}

/// An OS backend that samples one process at a time.
pub trait Sampler {
    /// The uid owning live process `pid`; `Err(NoProcess)` if there is none.
    fn process_owner(&mut self, pid: u32) -> Result<u32, ProfError>;

    /// Start counting `pid`, an instance of `image`, now or from its next exec, at `rate`
    /// samples a second, and with `children` the processes it starts too (their samples come
    /// in [`SampleBatch::child_processes`]), where the backend takes those per session (Redox;
    /// Linux has its own from its configuration).  `Err(Busy)` if the backend (possibly in
    /// another process) is already sampling.
    fn start(&mut self, pid: u32, image: &ImageLayout, from: CountFrom, rate: Option<u64>, children: bool)
        -> Result<(), ProfError>;

    /// Start counting every process (`start all`): each one's samples come as a daemon's do,
    /// in [`SampleBatch::servers`] under its pid. `Err(Invalid)` where the backend cannot (the
    /// Linux embedding has its own system-wide sampler, outside the session).
    fn start_all(&mut self, rate: Option<u64>) -> Result<(), ProfError> {
        let _ = rate;
        Err(ProfError::Invalid)
    }

    /// Everything counted since the last call; does not block.
    fn collect(&mut self) -> Result<SampleBatch, ProfError>;

    /// Stop counting.  Idempotent; releases the backend for the next session.
    fn stop(&mut self);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, path: &str) -> Mapping {
        Mapping { start, len: 0x1000, path: path.into(), ..Default::default() }
    }

    /// Parents, execs and own mappings of a tree under program 1: 2 forked from 1, 3 forked
    /// from 2 then exec'd, 4 forked from 3, 5 whose start was not seen, 6 and 7 in a cycle.
    #[test]
    fn a_child_has_what_it_inherited_then_its_own_until_it_execs() {
        let program = vec![m(0x1000, "/bin/sh"), m(0x7000, "/lib/libc.so.6")];
        let own = |pid: u32| -> Vec<Mapping> {
            match pid {
                2 => vec![m(0x9000, "/lib/dlopened.so")],
                3 => vec![m(0x2000, "/bin/busy"), m(0x8000, "/lib/libc.so.6")],
                4 => vec![m(0xa000, "/lib/late.so")],
                _ => Vec::new(),
            }
        };
        let table: Vec<(u32, Option<u32>, bool, Vec<Mapping>)> = vec![
            (2, Some(1), false, own(2)),
            (3, Some(2), true, own(3)),
            (4, Some(3), false, own(4)),
            (5, None, false, own(5)),
            (6, Some(7), false, Vec::new()),
            (7, Some(6), false, Vec::new()),
        ];
        let of = |pid: u32| table.iter().find(|t| t.0 == pid).map(|t| (t.1, t.2, t.3.as_slice()));
        let paths = |pid: u32| -> Vec<String> {
            process_mappings(pid, 1, &program, of).into_iter().map(|m| m.path).collect()
        };
        assert_eq!(paths(1), ["/bin/sh", "/lib/libc.so.6"]);
        assert_eq!(paths(2), ["/bin/sh", "/lib/libc.so.6", "/lib/dlopened.so"]);
        // Exec'd: its own only, none of sh's or of its parent's dlopen.
        assert_eq!(paths(3), ["/bin/busy", "/lib/libc.so.6"]);
        // A fork of the exec'd one inherits what that one had, then adds its own.
        assert_eq!(paths(4), ["/bin/busy", "/lib/libc.so.6", "/lib/late.so"]);
        // Start not seen: as if the program started it.
        assert_eq!(paths(5), ["/bin/sh", "/lib/libc.so.6"]);
        // A cycle in untrusted records ends; an unknown pid has the program's.
        assert_eq!(paths(6), ["/bin/sh", "/lib/libc.so.6"]);
        assert_eq!(paths(99), ["/bin/sh", "/lib/libc.so.6"]);
    }
}
