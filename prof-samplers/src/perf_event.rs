//! The Linux backend: `perf_event_open(2)` sampling one child process.
//!
//! * A software `cpu-clock` event with a fixed period (1 ms = 1 kHz by default), opened
//!   disabled with `enable_on_exec`, so counting starts at the first instruction of the new
//!   program and nothing of `profil`'s own pre-exec code is sampled.
//! * User and kernel samples are told apart by the record's cpumode; where the kernel forbids
//!   kernel sampling (`perf_event_paranoid` >= 2 for non-root), only user mode is sampled and
//!   the kernel-tick count is reported as unavailable.
//! * One event per CPU, each with `inherit`, so every thread the program creates is counted
//!   (the kernel refuses a ring buffer on an inherited per-task event; per-CPU ones are what
//!   `perf record` uses too).
//! * Attaching to a running process ([`CountFrom::Now`]): as `perf record -p`, one event per
//!   thread that already exists and per CPU (inheriting, so threads created later are counted
//!   too), each CPU's events writing into one ring; the mappings that exist already, which no
//!   mmap record will announce, are read from `/proc/PID/maps`.
//! * The load base comes from the `PERF_RECORD_MMAP2` record of the program's executable
//!   segment: the kernel's own account of where it mapped the file.
//! * Call stacks ([`CallGraph`]): the kernel's frame-pointer walk (`PERF_SAMPLE_CALLCHAIN`,
//!   user frames only), or a copy of the user stack and registers (`PERF_SAMPLE_STACK_USER`,
//!   `PERF_SAMPLE_REGS_USER`) unwound here as it arrives, with the DWARF CFI of the objects
//!   the mmap records name ([`crate::unwind`]); the rings are then larger.
//! * Exit is a readable pidfd; [`PerfEventSampler::wait`] blocks in `poll(2)`, no busy polling.
//! * One session per machine: the session holds the abstract unix socket `@profd.session`,
//!   which the kernel releases even if `profil` is killed; a second bind is EBUSY.

use linux_perf_event_reader::{
    ContextSwitchRecord, CpuMode, Endianness, EventRecord, Mmap2FileId, PerfEventAttr, RawData, RawEventRecord, RecordParseInfo, RecordType,
    TaskWasPreempted,
};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use perf_event_open_sys as sys;
use sys::bindings as b;

use prof_core::error::ProfError;
use prof_core::image::ImageLayout;
use prof_core::ledger::Switch;
use crate::proc_maps::executable_mapping;
use crate::unwind::{StackUnwinder, UserRegs};
use prof_core::sampler::{CallGraph, CountFrom, Mapping, SampleBatch, Sampler, MAX_STACK_SIZE};
use prof_core::session::StopReason;
use prof_core::sample::{CallStack, Sample};

/// The environment variable that names a session lock. On Linux nothing is shared between
/// profils (each samples its own processes through its own perf events), so runs do not
/// exclude each other unless they name the same session here: then the Minix rule holds
/// among them, one profiled process at a time (the test suite names one per checkout to test
/// the rule). Redox's rule guards the kernel's one table and is profd's.
pub const SESSION_ENV: &str = "PROFD_SESSION";

/// The session lock's name (an abstract unix socket): `$PROFD_SESSION`'s, or none where it is
/// unset or empty. A name too long for an abstract socket (107 bytes; a checkout's path can
/// be) is shortened to a hash of it.
pub fn session_lock_name() -> Option<Vec<u8>> {
    lock_name_of(std::env::var_os(SESSION_ENV))
}

fn lock_name_of(value: Option<std::ffi::OsString>) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let name = value.filter(|v| !v.is_empty())?.as_bytes().to_vec();
    if name.len() <= 100 {
        return Some(name);
    }
    // FNV-1a: stable from run to run, as the lock's name must be.
    let hash = name.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    Some(format!("profd.session.{hash:016x}").into_bytes())
}

/// The process holding the session lock (a profil running a session): its pid and uid, as
/// the kernel recorded them when it bound the lock (`SO_PEERCRED` of a connection to it).
pub fn session_holder() -> Option<(u32, u32)> {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    let addr = SocketAddr::from_abstract_name(session_lock_name()?).ok()?;
    let stream = UnixStream::connect_addr(&addr).ok()?;
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a ucred.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0 && cred.pid > 0).then_some((cred.pid as u32, cred.uid))
}

/// Default sampling frequency, as the issue asks (1 kHz).
pub const DEFAULT_FREQUENCY_HZ: u64 = 1000;

/// Data pages of the ring buffer (a power of two): 512 KiB holds ~20 s of samples at 1 kHz
/// even if `profil` were not scheduled in between.
pub(crate) const DATA_PAGES: usize = 128;

/// Samples of copied stacks a ring should hold: 256 (a quarter of a second at 1 kHz, read
/// every 64) when the memory-lock limit allows; never less than [`DATA_PAGES`].
pub(crate) const STACK_SAMPLES_PER_RING: usize = 256;

/// Frames the kernel's frame-pointer walk may record (its own default limit is 127).
const MAX_CALLCHAIN: u16 = 127;

/// perf's x86 user register numbers (`arch/x86/include/uapi/asm/perf_regs.h`): the three
/// an unwind starts from, recorded in this order.
pub(crate) const PERF_REG_X86_BP: u64 = 6;
pub(crate) const PERF_REG_X86_SP: u64 = 7;
pub(crate) const PERF_REG_X86_IP: u64 = 8;

/// How to sample.
#[derive(Debug, Clone)]
pub struct PerfConfig {
    /// Samples per second of the program's CPU time.
    pub frequency_hz: u64,
    /// The executable being run, to recognise its mapping.
    pub program: PathBuf,
    /// Whether to record call stacks, and how.
    pub call_graph: CallGraph,
    /// Follow the processes the program starts (`--children`): their samples, mappings and
    /// stacks are reported per process, not only counted.
    pub children: bool,
    /// Keep the program's kernel-mode samples (their addresses, and under -g their stacks
    /// with the kernel's address as the leaf), to be named from the kernel's symbols; else
    /// they are only counted.
    pub kernel_samples: bool,
    /// Look at each blocked thread of the program at the sampling rate for its wait site
    /// (`--off-cpu`; [`crate::off_cpu`]).
    pub off_cpu: bool,
    /// Record every system call with its latency (`--requests`): how to open the rings that
    /// do (`crate::syscalls::SyscallTracer::open`, named by the caller: that module reads its
    /// rings with this one's reader).
    pub requests: Option<OpenRequestRings>,
}

/// Rings read beside the sampling event's, with records of their own: the system calls'
/// tracepoints (`--requests`, `crate::syscalls`).
pub trait RequestRings {
    /// Its rings, to wait on.
    fn rings(&self) -> Vec<&OwnedFd>;
    /// The requests ended up to `until` (ns of the events' clock, read before the rings) into
    /// `batch`; with `last`, every record there is, and those still under way unfinished.
    /// `unwind`: the copied top of process `pid`'s user stack unwound by its unwinder, where
    /// the caller has one (`-g`).
    fn collect(&mut self, until: u64, last: bool, batch: &mut prof_core::requests::RequestsBatch, unwind: &mut Unwind);
}

/// Unwinds the copied top of process `pid`'s user stack (its registers, its bytes from SP up).
pub type Unwind<'a> = dyn FnMut(u32, UserRegs, &[u8]) -> Option<CallStack> + 'a;

/// Opens a process's [`RequestRings`]: its pid, from its exec or now, with the processes it
/// starts or not, with each request's user call stack or not (`-g`).
pub type OpenRequestRings = fn(u32, CountFrom, bool, bool) -> io::Result<Box<dyn RequestRings>>;

/// The identity of the profiled executable's file.
#[derive(Debug, Clone)]
struct ProgramId {
    canonical: PathBuf,
    dev: (u32, u32),
    ino: u64,
}

/// One CPU's sampling event and its ring buffer, and the events of other threads writing
/// into it.
pub(crate) struct Ring {
    pub(crate) fd: OwnedFd,
    ptr: *mut u8,
    len: usize,
    /// How its records are laid out: the event's attr.
    format: RecordParseInfo,
    _more: Vec<OwnedFd>,
}

/// The sampling events on one process.
struct Event {
    rings: Vec<Ring>,
    pidfd: OwnedFd,
    pid: u32,
    image: ImageLayout,
    load_base: Option<u64>,
    /// The profiled process has been seen to exit.
    exited: bool,
    /// What the first batch reports besides the ring: an attached process's existing mappings.
    pending: SampleBatch,
    /// Execs of the process seen (the first, when launched, is the program's own). Counted,
    /// not ordered: records of different CPUs' rings come in no common order.
    execs: u32,
    /// With copied stacks: the process's modules, to unwind them.
    unwinder: Option<StackUnwinder>,
    /// The processes it started, where they are followed (`--children`).
    children: Option<Children>,
    /// With `--off-cpu`: the thread looking at the program's blocked threads, and each
    /// thread's wait site at its latest look.
    prober: Option<crate::off_cpu::Prober>,
    last_site: std::collections::BTreeMap<u32, prof_core::sampler::WaitSite>,
    /// The program's threads whose name was read (`--threads`).
    named_threads: std::collections::BTreeSet<u32>,
    /// With `--requests` where the kernel allows it: its system calls.
    syscalls: Option<Box<dyn RequestRings>>,
    _lock: Option<UnixListener>,
}

impl Event {
    /// Is `pid` a child of the program's whose threads are looked at (`--off-cpu` with
    /// `--children`): their starts and ends go to the ledger.
    fn looks_at_child(&self, pid: u32) -> bool {
        self.prober.is_some() && self.children.as_ref().is_some_and(|c| c.followed.contains_key(&pid))
    }
}

/// The processes the program started, followed: each one's origin and mappings, and, with
/// copied stacks, its unwinder (made on its first sample from what it inherited and mapped).
#[derive(Default)]
pub(crate) struct Children {
    /// The program's own executable mappings (what a child that did not exec inherited).
    pub(crate) program_mappings: Vec<Mapping>,
    pub(crate) followed: std::collections::BTreeMap<u32, Followed>,
}

#[derive(Default)]
pub(crate) struct Followed {
    pub(crate) parent: Option<u32>,
    pub(crate) exec: bool,
    pub(crate) mappings: Vec<Mapping>,
    pub(crate) unwinder: Option<StackUnwinder>,
}

impl Children {
    /// The unwinder of child `pid`, made on first use from the mappings it has.
    pub(crate) fn unwinder(&mut self, main_pid: u32, pid: u32) -> &mut StackUnwinder {
        if self.followed.get(&pid).is_none_or(|f| f.unwinder.is_none()) {
            let mappings = prof_core::sampler::process_mappings(pid, main_pid, &self.program_mappings, |p| {
                self.followed.get(&p).map(|f| (f.parent, f.exec, f.mappings.as_slice()))
            });
            // Its memory is read for the GOT slots a blocked stack's unwind may need.
            let mut u = StackUnwinder::default();
            u.process = Some(pid);
            // A later mapping of the same range replaces an earlier one (an exec'd child's
            // inherited ranges are gone already).
            for m in &mappings {
                u.add_mapping(m);
            }
            self.followed.entry(pid).or_default().unwinder = Some(u);
        }
        self.followed.get_mut(&pid).and_then(|f| f.unwinder.as_mut()).expect("made above")
    }

    /// Process `pid` mapped `m`: among its own mappings, and its unwinder's where it has one.
    pub(crate) fn mapped(&mut self, pid: u32, m: &Mapping) {
        let f = self.followed.entry(pid).or_default();
        if let Some(u) = f.unwinder.as_mut() {
            u.add_mapping(m);
        }
        f.mappings.push(m.clone());
    }

    /// Process `pid` is gone: its unwinder (and the files it holds mapped) is let go; the time
    /// it spent unwinding. A sample of it still to come makes another.
    pub(crate) fn ended(&mut self, pid: u32) -> std::time::Duration {
        self.followed.get_mut(&pid).and_then(|f| f.unwinder.take()).map_or(std::time::Duration::ZERO, |u| u.busy)
    }

    /// Time spent unwinding children's stacks.
    pub(crate) fn busy(&self) -> std::time::Duration {
        self.followed.values().filter_map(|f| f.unwinder.as_ref()).map(|u| u.busy).sum()
    }
}

/// The part of `batch` of child process `pid`.
pub(crate) fn child_part(batch: &mut SampleBatch, pid: u32) -> &mut prof_core::sampler::ChildBatch {
    match batch.child_processes.iter().position(|c| c.pid == pid) {
        Some(i) => &mut batch.child_processes[i],
        None => {
            batch.child_processes.push(prof_core::sampler::ChildBatch { pid, ..Default::default() });
            batch.child_processes.last_mut().expect("pushed")
        }
    }
}

/// `perf_event_open` sampler.  See the module docs.
pub struct PerfEventSampler {
    period_ns: u64,
    call_graph: CallGraph,
    children: bool,
    kernel_samples: bool,
    off_cpu: bool,
    requests: Option<OpenRequestRings>,
    /// Unwinding time of events already closed.
    unwound: std::time::Duration,
    program: ProgramId,
    event: Option<Event>,
    /// Whether kernel-mode ticks are being counted (`None` before the first start).
    counts_kernel: Option<bool>,
}

impl PerfEventSampler {
    pub fn new(config: PerfConfig) -> io::Result<PerfEventSampler> {
        if config.frequency_hz == 0 || config.frequency_hz > 100_000 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "sampling frequency must be 1..=100000 Hz"));
        }
        let meta = std::fs::metadata(&config.program)?;
        let program = ProgramId {
            // A program deleted or replaced since it started (read through /proc/PID/exe) has
            // no path left: its link's text ("/path (deleted)") is what its mmap records say.
            canonical: std::fs::canonicalize(&config.program)
                .or_else(|_| std::fs::read_link(&config.program))
                .unwrap_or_else(|_| config.program.clone()),
            dev: (libc::major(meta.dev()), libc::minor(meta.dev())),
            ino: meta.ino(),
        };
        if let CallGraph::Dwarf { stack_size } = config.call_graph {
            if !prof_core::sampler::is_valid_stack_size(u64::from(stack_size)) {
                let why = format!("stack size must be a multiple of 8 from 8 to {MAX_STACK_SIZE} bytes");
                return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
            }
        }
        Ok(PerfEventSampler {
            period_ns: 1_000_000_000 / config.frequency_hz,
            call_graph: config.call_graph,
            children: config.children,
            kernel_samples: config.kernel_samples,
            off_cpu: config.off_cpu,
            requests: config.requests,
            unwound: std::time::Duration::ZERO,
            program,
            event: None,
            counts_kernel: None,
        })
    }

    /// Time spent unwinding copied stacks in this session so far.
    pub fn unwind_time(&self) -> std::time::Duration {
        let Some(ev) = &self.event else { return self.unwound };
        self.unwound
            + ev.unwinder.as_ref().map_or(std::time::Duration::ZERO, |u| u.busy)
            + ev.children.as_ref().map_or(std::time::Duration::ZERO, Children::busy)
    }

    /// Whether samples carry call stacks.
    pub fn records_stacks(&self) -> bool {
        self.call_graph != CallGraph::None
    }

    /// Whether kernel-mode ticks are counted (false where the kernel allows user mode only).
    pub fn counts_kernel(&self) -> Option<bool> {
        self.counts_kernel
    }

    /// Block until there is something to collect (samples past the watermark, or the exit of
    /// the process) or `timeout_ms` passes (-1: no timeout).
    pub fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        let Some(ev) = &self.event else { return Ok(()) };
        // Off-CPU probes are unwound while the process lives (its memory is read), and their
        // stack copies are not let pile up: collect at least every 50 ms.
        let timeout_ms = match (&ev.prober, timeout_ms) {
            (Some(_), t) if !(0..=50).contains(&t) => 50,
            (_, t) => t,
        };
        let syscalls = ev.syscalls.iter().flat_map(|t| t.rings());
        poll_readable(std::iter::once(&ev.pidfd).chain(ev.rings.iter().map(|r| &r.fd)).chain(syscalls), timeout_ms)
    }

    fn spec(&self, count_kernel: bool, from: CountFrom, data_pages: usize) -> EventSpec {
        EventSpec {
            period_ns: self.period_ns,
            call_graph: self.call_graph,
            count_kernel,
            at_exec: from == CountFrom::Exec,
            inherit: true,
            data_pages,
        }
    }

    /// An inheriting event with a ring buffer on every CPU, on `pid` (launched: it has one
    /// thread yet) or on each of its threads (attached).
    fn open_rings(&self, pid: u32, count_kernel: bool, from: CountFrom) -> io::Result<Vec<Ring>> {
        // Copied stacks need larger rings; where the memory-lock limit refuses one (EPERM),
        // a smaller one, down to the plain size (samples may then be lost, and are counted).
        let mut data_pages = match self.call_graph {
            CallGraph::Dwarf { stack_size } => {
                (STACK_SAMPLES_PER_RING * (stack_size as usize + 64) / page_size()).next_power_of_two().max(DATA_PAGES)
            }
            _ => DATA_PAGES,
        };
        loop {
            match self.open_rings_of(pid, count_kernel, from, data_pages) {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) && data_pages > DATA_PAGES => data_pages /= 2,
                other => return other,
            }
        }
    }

    fn open_rings_of(&self, pid: u32, count_kernel: bool, from: CountFrom, data_pages: usize) -> io::Result<Vec<Ring>> {
        let spec = self.spec(count_kernel, from, data_pages);
        let threads = match from {
            CountFrom::Exec => vec![pid],
            CountFrom::Now => threads_of(pid)?,
        };
        rings_on(pid, &threads, data_pages, record_format(&spec), |tid, cpu| Ok(vec![open_event(&spec, tid as libc::pid_t, cpu)?]))
    }
}

/// A ring on every CPU for events on process `pid`'s `threads` (launched: `pid` alone, whose
/// events its threads inherit), each of `data_pages` with records laid out as `format` says:
/// `open(tid, cpu)` opens a thread's events on a CPU, the first of a CPU's events the ring's,
/// the others writing into it.
pub(crate) fn rings_on(
    pid: u32,
    threads: &[u32],
    data_pages: usize,
    format: RecordParseInfo,
    open: impl Fn(u32, i32) -> io::Result<Vec<OwnedFd>>,
) -> io::Result<Vec<Ring>> {
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as i32;
    let mut rings = Vec::new();
    for cpu in 0..cpus {
        let mut fds = Vec::new();
        for &tid in threads {
            match open(tid, cpu) {
                Ok(more) => fds.extend(more),
                // An offline CPU, or a thread that has just ended.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENODEV) | Some(libc::ESRCH)) && tid != pid => {}
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => break,
                Err(e) => return Err(e),
            }
        }
        if fds.is_empty() {
            continue;
        }
        let fd = fds.remove(0);
        // The Ring owns the mapping from here, so an error below unmaps it.
        let mut ring = Ring::map(fd, data_pages, format)?;
        // Redirect the other events only now: the kernel refuses (EINVAL) a redirect into an
        // event whose buffer is not mapped yet.
        for other in &fds {
            // SAFETY: two perf event fds on the same CPU; the kernel checks the rest.
            if unsafe { sys::ioctls::SET_OUTPUT(other.as_raw_fd(), ring.fd.as_raw_fd()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        ring._more = fds;
        rings.push(ring);
    }
    if rings.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENODEV));
    }
    Ok(rings)
}

/// What a sampling event counts and records (see the module's doc).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventSpec {
pub period_ns: u64,
pub call_graph: CallGraph,
/// Kernel-mode samples too (else only user mode: the kernel may refuse them).
pub count_kernel: bool,
/// Armed now, counting from the process's exec (its pre-exec code is profil's).
pub at_exec: bool,
/// Threads and processes the task starts inherit the event (not for a CPU-wide one).
pub inherit: bool,
pub data_pages: usize,
}

/// A `cpu-clock` sampling event as `spec` says, on task `pid` (-1: every task) on `cpu`.
pub(crate) fn open_event(spec: &EventSpec, pid: libc::pid_t, cpu: i32) -> io::Result<OwnedFd> {
    let mut attr = event_attr(spec);
    // SAFETY: attr is initialised; the event only observes.
    let fd = unsafe {
        sys::perf_event_open(&mut attr, pid, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as libc::c_ulong)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned to us and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// How the records of an event opened as `spec` says are laid out (which fields a sample
/// has, where the sample_id every other record ends with sits), read by
/// linux-perf-event-reader from the very attr the event is opened with.
pub(crate) fn record_format(spec: &EventSpec) -> RecordParseInfo {
    attr_format(&event_attr(spec))
}

/// How the records of an event opened with `attr` are laid out.
pub(crate) fn attr_format(attr: &b::perf_event_attr) -> RecordParseInfo {
    // SAFETY: perf_event_attr is plain integer fields (bindgen's repr(C)), read as its bytes.
    let bytes = unsafe { std::slice::from_raw_parts((attr as *const b::perf_event_attr).cast::<u8>(), std::mem::size_of_val(attr)) };
    let (attr, _) = PerfEventAttr::parse::<_, byteorder::NativeEndian>(bytes).expect("the attr profil builds is one perf reads");
    RecordParseInfo::new(&attr, Endianness::NATIVE)
}

/// The `perf_event_attr` of a `cpu-clock` sampling event as `spec` says.
fn event_attr(spec: &EventSpec) -> b::perf_event_attr {
    // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
    let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.type_ = b::PERF_TYPE_SOFTWARE;
    attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    attr.config = b::PERF_COUNT_SW_CPU_CLOCK as u64;
    attr.__bindgen_anon_1.sample_period = spec.period_ns;
    attr.sample_type = (b::PERF_SAMPLE_IP | b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME) as u64;
    match spec.call_graph {
        CallGraph::None => {}
        CallGraph::FramePointers => {
            attr.sample_type |= b::PERF_SAMPLE_CALLCHAIN as u64;
            attr.set_exclude_callchain_kernel(1);
            attr.sample_max_stack = MAX_CALLCHAIN;
        }
        CallGraph::Dwarf { stack_size } => {
            attr.sample_type |= (b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER) as u64;
            attr.sample_regs_user = 1 << PERF_REG_X86_BP | 1 << PERF_REG_X86_SP | 1 << PERF_REG_X86_IP;
            attr.sample_stack_user = stack_size;
        }
    }
    // From exec: armed now, counting from the child's exec (its pre-exec code is profil's).
    let at_exec = u64::from(spec.at_exec);
    attr.set_disabled(at_exec);
    attr.set_enable_on_exec(at_exec);
    attr.set_inherit(u64::from(spec.inherit));
    attr.set_exclude_kernel(u64::from(!spec.count_kernel));
    attr.set_exclude_hv(1);
    attr.set_mmap(1);
    attr.set_mmap2(1);
    // Exec records: a program that execs another one is reported as such.
    attr.set_comm(1);
    attr.set_comm_exec(1);
    // Fork and exit records: which process started which (`--children`), and when the
    // program's threads began and ended (the ledger by the clock).
    attr.set_task(1);
    // No switch records (attr.context_switch): the kernel would write two for every
    // context switch (about 0.6 us each here), which a program that blocks 100,000 times a
    // second feels; the threads' accounts come from their scheduler statistics instead
    // (--off-cpu, crate::off_cpu). Records carry their thread and a CLOCK_MONOTONIC time.
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = (spec.data_pages * page_size() / 4) as u32;
    attr
}

/// Block until one of `fds` is readable or `timeout_ms` passes (-1: no timeout); a signal
/// ends the wait early, without an error.
pub(crate) fn poll_readable<'a>(fds: impl Iterator<Item = &'a OwnedFd>, timeout_ms: i32) -> io::Result<()> {
    let mut fds: Vec<libc::pollfd> =
        fds.map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: fds is a valid array of pollfd of the given length.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// The threads of `pid` (`/proc/PID/task`), the main thread first.
pub(crate) fn threads_of(pid: u32) -> io::Result<Vec<u32>> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|e| if e.kind() == io::ErrorKind::NotFound { io::Error::from_raw_os_error(libc::ESRCH) } else { e })?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable_by_key(|&t| (t != pid, t));
    Ok(tids)
}

/// Where to read a mapping's object when its path cannot name it exactly (see
/// [`Mapping::file`]): `raw`, the path's bytes, when they are not UTF-8 (`None`: the path was
/// read lossily); a link of process `pid`'s for a file deleted or replaced since it was mapped
/// (its path ends ` (deleted)`), `/proc/PID/exe` for the program's own, else the mapping's
/// `/proc/PID/map_files/START-END`.
pub(crate) fn mapping_file(pid: u32, raw: Option<&[u8]>, start: u64, len: u64, is_program: bool) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let deleted = raw.is_some_and(|r| r.ends_with(b" (deleted)"));
    match raw {
        Some(bytes) if !deleted && std::str::from_utf8(bytes).is_ok() => None,
        Some(bytes) if !deleted => Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes))),
        _ if is_program => Some(PathBuf::from(format!("/proc/{pid}/exe"))),
        _ => Some(PathBuf::from(format!("/proc/{pid}/map_files/{start:x}-{:x}", start + len))),
    }
}

impl ProgramId {
    /// Is a mapped file (as an mmap record names it) the profiled program?
    fn matches(&self, path: &str, dev: (u32, u32), ino: u64) -> bool {
        (ino == self.ino && dev == self.dev) || Path::new(path) == self.canonical
    }
}

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// The session named by `PROFD_SESSION`, held while the returned socket lives (EBUSY where
/// another profil holds it); `None` where no session is named (nothing to exclude).
pub(crate) fn lock_session() -> Result<Option<UnixListener>, ProfError> {
    const LOCK: &str = "the session lock (an abstract unix socket)";
    let Some(name) = session_lock_name() else { return Ok(None) };
    let addr = SocketAddr::from_abstract_name(name).map_err(|e| ProfError::failed(LOCK, &e))?;
    UnixListener::bind_addr(&addr).map(Some).map_err(|e| match e.kind() {
        io::ErrorKind::AddrInUse => ProfError::Busy,
        _ => ProfError::failed(LOCK, &e),
    })
}

/// The error of `operation`: no such process, permission, or EGENERIC with its cause (an
/// EINVAL here is the kernel refusing an event, not a malformed request of the user's).
pub(crate) fn os_error(operation: &'static str, e: &io::Error) -> ProfError {
    match e.raw_os_error() {
        Some(libc::ESRCH) => ProfError::NoProcess,
        Some(libc::EACCES) | Some(libc::EPERM) => ProfError::Permission,
        _ => ProfError::failed(operation, e),
    }
}

/// A batch's records from every ring. Mappings first: a sample in one CPU's ring may run code
/// whose mmap record is in another's, and the unwinder must know the module before unwinding
/// through it. A child's start and exec come first too: its samples are named by what it has;
/// its end last, after its samples.
fn drained_in_order(ev: &mut Event) -> Vec<Record> {
    let mut records: Vec<Record> = ev.rings.iter_mut().flat_map(Ring::drain).collect();
    if ev.unwinder.is_some() || ev.children.is_some() {
        in_taking_order(&mut records);
    }
    records
}

/// Records of every CPU's ring in the order they are taken: a process's start, exec and
/// mappings before its samples (another CPU's ring may hold them), and those among themselves
/// in the order they happened; its end after.
pub(crate) fn in_taking_order(records: &mut [Record]) {
    records.sort_by_key(|r| match r {
        Record::Mmap2 { .. } | Record::Fork { .. } | Record::Exec { .. } => 0,
        Record::Exit { .. } => 2,
        _ => 1,
    });
    process_records_in_time_order(records);
}

/// The records that say what a process is (its fork, execs and mappings) put in the order
/// they happened, each in one of their places: the rings are per CPU, so a process that
/// exec'd on one CPU and mapped its libraries on another would otherwise have its mappings
/// taken before its exec, which clears them (and then its libc unknown to the unwinder); and
/// a process that exec'd twice on two CPUs (a shim, then the program) is named by its last
/// image, not by the ring read last.
fn process_records_in_time_order(records: &mut [Record]) {
    let time = |r: &Record| match r {
        Record::Mmap2 { time, .. } | Record::Fork { time, .. } | Record::Exec { time, .. } => Some(*time),
        _ => None,
    };
    let slots: Vec<usize> = records.iter().enumerate().filter(|(_, r)| time(r).is_some()).map(|(i, _)| i).collect();
    let mut ordered: Vec<Record> = slots.iter().map(|&i| std::mem::replace(&mut records[i], Record::Lost(0))).collect();
    ordered.sort_by_key(|r| time(r).unwrap_or(0));
    for (i, r) in slots.into_iter().zip(ordered) {
        records[i] = r;
    }
}

/// One record into `batch`: the program's samples, a child's, its threads' starts, switches
/// and ends, its execs, the mappings; the time its children's unwinders took, freed.
fn take_record(rec: Record, batch: &mut SampleBatch, ev: &mut Event, program: &ProgramId, kernel_samples: bool) -> std::time::Duration {
    let mut unwound = std::time::Duration::ZERO;
    match rec {
        // Threads share the pid; processes the program starts inherit the events too,
        // but the profile is of one process (the Minix rule), so theirs are apart.
        Record::Sample { pid, tid, ip, time, kernel, stack, .. } if pid != ev.pid => {
            child_sample(batch, ev, pid, SampleFields { tid, ip, time, kernel, stack });
        }
        Record::Sample { tid, ip, time, kernel, stack, .. } => {
            program_sample(batch, ev, kernel_samples, SampleFields { tid, ip, time, kernel, stack });
        }
        Record::Lost(n) => batch.lost += n,
        Record::Exec { pid, time, .. } if pid == ev.pid => {
            // The program's own exec starts its main thread's account.
            batch.threads.starts.push((pid, time));
            ev.execs += 1;
            if ev.execs > 1 {
                batch.later_execs += 1;
            }
        }
        Record::Exec { pid, comm, .. } => {
            if let Some(children) = ev.children.as_mut() {
                let f = children.followed.entry(pid).or_default();
                // What it had is gone; its unwinder is made again from its new mappings.
                (f.exec, f.unwinder) = (true, None);
                child_part(batch, pid).exec = Some(comm);
            }
        }
        // A thread of the program (or, looked at with --off-cpu, of a child): its start,
        // for the ledger.
        Record::Fork { pid, ppid, tid, time } if pid == ppid => {
            if pid == ev.pid || ev.looks_at_child(pid) {
                batch.threads.starts.push((tid, time));
            }
        }
        // A process is a child: followed, and with --off-cpu looked at from now on.
        Record::Fork { pid, ppid, tid, time } => {
            if let Some(children) = ev.children.as_mut() {
                children.followed.entry(pid).or_default().parent = Some(ppid);
                child_part(batch, pid).parent = Some(ppid);
                if let Some(prober) = ev.prober.as_ref() {
                    prober.follow(pid);
                    batch.threads.starts.push((tid, time));
                }
            }
        }
        Record::Switch { pid, tid, time, out } => {
            if pid == ev.pid {
                batch.threads.switches.push(Switch { tid, time, out });
            }
        }
        // A child gone: its unwinder (and the files it holds mapped) is let go; a
        // sample of it still to come makes another.
        // A thread of the program ended; a child gone (its main thread's end).
        Record::Exit { pid, tid, time } => {
            if pid == ev.pid || ev.looks_at_child(pid) {
                batch.threads.ends.push((tid, time));
            }
            if pid != ev.pid && pid == tid {
                if let Some(children) = ev.children.as_mut() {
                    unwound += children.ended(pid);
                    child_part(batch, pid).exited = true;
                }
            }
        }
        // Only in the system calls' own rings (crate::syscalls), never in these.
        Record::Syscall { .. } => {}
        Record::Mmap2 { pid, addr, len, pgoff, dev, ino, raw, .. } => {
            let path = String::from_utf8_lossy(&raw).into_owned();
            let is_program = program.matches(&path, dev, ino);
            let file = mapping_file(pid, Some(&raw), addr, len, is_program);
            mapped(batch, ev, pid, Mapping { start: addr, len, pgoff, path, file, build_id: None }, is_program);
        }
    }
    unwound
}

impl Sampler for PerfEventSampler {
    fn process_owner(&mut self, pid: u32) -> Result<u32, ProfError> {
        match std::fs::metadata(format!("/proc/{pid}")) {
            Ok(m) => Ok(m.uid()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(ProfError::NoProcess),
            Err(e) => Err(ProfError::from_io("reading /proc/PID", &e)),
        }
    }

    fn start(&mut self, pid: u32, image: &ImageLayout, from: CountFrom, _rate: Option<u64>, _children: bool) -> Result<(), ProfError> {
        self.stop();
        let lock = lock_session()?;
        // SAFETY: pidfd_open has no memory arguments.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if pidfd < 0 {
            return Err(os_error("pidfd_open", &io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor owned by nobody else.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
        // Kernel-mode ticks where allowed; user mode only where the kernel says no.
        let (rings, counts_kernel) = match self.open_rings(pid, true, from) {
            Ok(rings) => (rings, true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
                (self.open_rings(pid, false, from).map_err(|e| os_error("perf_event_open", &e))?, false)
            }
            Err(e) => return Err(os_error("perf_event_open", &e)),
        };
        self.counts_kernel = Some(counts_kernel);
        // Attached: the mappings (and so the load base) exist already; no record will say so.
        // The session's clock starts now (launched: the program's exec starts its account).
        let mut pending = SampleBatch { clock: vec![crate::off_cpu::monotonic_ns()], ..Default::default() };
        let mut load_base = None;
        // Off-CPU probes copy stacks too, unwound as dwarf samples are.
        // And so do the system calls' under -g (their stack tops, through the C library).
        let call_stacks = self.requests.is_some() && self.call_graph != CallGraph::None;
        let mut unwinder =
            (self.off_cpu || call_stacks || matches!(self.call_graph, CallGraph::Dwarf { .. })).then(StackUnwinder::default);
        if let (true, Some(u)) = (self.off_cpu || call_stacks, unwinder.as_mut()) {
            u.process = Some(pid);
        }
        if from == CountFrom::Now {
            // A path that is not UTF-8 reads lossily here; its file is reached through the
            // process's link to the mapping instead.
            let maps = prof_objects::bounded::read(Path::new(&format!("/proc/{pid}/maps")), prof_objects::bounded::proc_limits::MAPS)
                .map_err(|e| os_error("reading /proc/PID/maps", &e))?;
            let maps = String::from_utf8_lossy(&maps);
            for (addr, len, pgoff, dev, ino, path) in maps.lines().filter_map(executable_mapping) {
                let is_program = self.program.matches(&path, dev, ino);
                if load_base.is_none() && is_program {
                    load_base = image.load_base_for_mapping(addr, pgoff);
                }
                let raw = match path.contains(char::REPLACEMENT_CHARACTER) {
                    true => None,
                    false => Some(path.as_bytes()),
                };
                let file = mapping_file(pid, raw, addr, len, is_program);
                let m = Mapping { start: addr, len, pgoff, path, file, build_id: None };
                if let Some(u) = unwinder.as_mut() {
                    u.add_mapping(&m);
                }
                pending.mappings.push(m);
            }
            pending.load_base = load_base;
        }
        let children = self.children.then(|| Children { program_mappings: pending.mappings.clone(), ..Default::default() });
        // Where the kernel refuses the tracepoints, the report says why (and shows what the
        // off-CPU looks saw instead).
        let syscalls = match self.requests.map(|open| open(pid, from, self.children, self.call_graph != CallGraph::None)) {
            Some(Ok(t)) => Some(t),
            Some(Err(e)) => {
                pending.requests.source = Some(prof_core::requests::RequestSource::SystemCalls);
                pending.requests.refused = Some(format!("the raw_syscalls tracepoints could not be opened: {e}"));
                None
            }
            None => None,
        };
        let prober = match self.off_cpu {
            true => {
                let stack_size = match self.call_graph {
                    CallGraph::Dwarf { stack_size } => stack_size,
                    _ => prof_core::sampler::DEFAULT_STACK_SIZE,
                };
                let p = crate::off_cpu::Prober::start(pid, self.period_ns, stack_size as usize)
                    .map_err(|e| os_error("starting the off-CPU probes", &e))?;
                Some(p)
            }
            false => None,
        };
        self.event = Some(Event {
            rings,
            pidfd,
            pid,
            image: image.clone(),
            load_base,
            exited: false,
            pending,
            // Launched: the program's own exec is the first; attached: it happened already.
            execs: u32::from(from == CountFrom::Now),
            children,
            unwinder,
            prober,
            last_site: Default::default(),
            named_threads: Default::default(),
            syscalls,
            _lock: lock,
        });
        Ok(())
    }

    fn collect(&mut self) -> Result<SampleBatch, ProfError> {
        let program = &self.program;
        let Some(ev) = self.event.as_mut() else { return Ok(SampleBatch::default()) };
        let mut batch = std::mem::take(&mut ev.pending);
        // Look at exit *before* draining: a process seen dead has written all its samples.
        if !ev.exited {
            let mut p = libc::pollfd { fd: ev.pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd, zero timeout.
            ev.exited = unsafe { libc::poll(&mut p, 1, 0) } == 1;
            if ev.exited {
                batch.ended = Some(StopReason::Exit);
            }
        }
        // Every record stamped before this reading is in a ring now, and is read below.
        let probes = ev.prober.as_ref().map(|p| p.take());
        let now = crate::off_cpu::monotonic_ns();
        batch.clock.push(now);
        for rec in drained_in_order(ev) {
            self.unwound += take_record(rec, &mut batch, ev, program, self.kernel_samples);
        }
        if let Some(t) = ev.syscalls.as_mut() {
            // -g: each call's copied stack top by its process's unwinder (the program's, or
            // a followed child's).
            let (main, unwinder, children) = (ev.pid, &mut ev.unwinder, &mut ev.children);
            t.collect(now, ev.exited, &mut batch.requests, &mut |pid, regs, bytes| {
                let u = match pid == main {
                    true => unwinder.as_mut()?,
                    false => children.as_mut()?.unwinder(main, pid),
                };
                Some(u.unwind(regs, bytes))
            });
        }
        if let (Some((raw, until)), Some(prober)) = (probes, ev.prober.as_ref()) {
            batch.threads.probed_until = Some(until.min(now));
            batch.threads.probe_problem = prober.problem();
            for p in raw {
                probed(&mut batch, ev, p);
            }
        }
        Ok(batch)
    }

    fn stop(&mut self) {
        self.unwound = self.unwind_time();
        // Dropping the event closes it, unmaps the ring and releases the session lock.
        self.event = None;
    }
}

/// The kernel's frame-pointer chain as a stack: its markers (`PERF_CONTEXT_*`) dropped, the
/// sample's own address first. A chain as long as the walk may go is taken to be cut there.
pub(crate) fn chain_stack(ip: u64, chain: Vec<u64>) -> CallStack {
    let truncated = chain.len() >= usize::from(MAX_CALLCHAIN);
    let mut frames: Vec<u64> = chain.into_iter().filter(|&a| a < b::PERF_CONTEXT_MAX).collect();
    if frames.first() != Some(&ip) {
        frames.insert(0, ip);
    }
    CallStack { frames, truncated }
}

/// A sample's call stack as recorded: the kernel's chain, or registers and stack bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RawStack {
    Chain(Vec<u64>),
    Copy { regs: UserRegs, bytes: Vec<u8> },
}

impl RawStack {
    /// The call stack of a sample at `ip`: the chain as it is, a copy unwound by the unwinder
    /// of the process sampled (asked for only then: making one reads its objects), if any.
    pub(crate) fn call_stack<'u>(self, ip: u64, unwinder: impl FnOnce() -> Option<&'u mut StackUnwinder>) -> Option<CallStack> {
        match self {
            RawStack::Chain(frames) => Some(chain_stack(ip, frames)),
            RawStack::Copy { regs, bytes } => Some(unwinder()?.unwind(regs, &bytes)),
        }
    }
}

/// One record of the ring buffer, as far as we use it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Record {
    Sample { ip: u64, pid: u32, tid: u32, time: u64, kernel: bool, stack: Option<RawStack> },
    Lost(u64),
    /// The process `pid` exec'd (a COMM record with the exec flag) at `time`; `comm`: its new
    /// name.
    Exec { pid: u32, comm: String, time: u64 },
    /// Process (or thread, then `pid == ppid`) `pid` was started by `ppid`; its thread `tid`,
    /// at `time`.
    Fork { pid: u32, ppid: u32, tid: u32, time: u64 },
    /// Thread `tid` of process `pid` ended (`tid == pid`: its main thread), at `time`.
    Exit { pid: u32, tid: u32, time: u64 },
    /// Thread `tid` of process `pid` left a CPU (`out`: `Some(preempted)`) or came onto one.
    Switch { pid: u32, tid: u32, time: u64, out: Option<bool> },
    /// `raw`: the file name's bytes, as the kernel gave them (any bytes, not only UTF-8).
    /// At `time` (its sample_id's; 0 where it has none).
    Mmap2 { pid: u32, addr: u64, len: u64, pgoff: u64, dev: (u32, u32), ino: u64, raw: Vec<u8>, time: u64 },
    /// A tracepoint's sample (its raw data: `event`, the tracepoint's id, then the system
    /// call's number at offset 8, as `raw_syscalls`' two lay it out, 24 bytes at least): thread `tid` of process
    /// `pid` entered or left system call `nr` ([`crate::syscalls`]); `chain`: the kernel's
    /// user call chain, where the event asks for one (its `PERF_CONTEXT_*` markers dropped);
    /// `copy`: the user registers and the top of the user stack, where it asks for them;
    /// `ret`: the word at offset 16, an exit's return value (`sys_exit`'s `ret`).
    Syscall { pid: u32, tid: u32, time: u64, event: u16, nr: i64, ret: i64, chain: Vec<u64>, copy: Option<(UserRegs, Vec<u8>)> },
}

impl Ring {
    /// The ring buffer of event `fd`: `data_pages` (a power of two) after the metadata page,
    /// its records laid out as `format` says (the event's attr).
    pub(crate) fn map(fd: OwnedFd, data_pages: usize, format: RecordParseInfo) -> io::Result<Ring> {
        let len = (data_pages + 1) * page_size();
        // SAFETY: mapping the event's ring buffer as perf_event_open(2) describes.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring { fd, ptr: ptr as *mut u8, len, format, _more: Vec::new() })
    }

    /// Read every complete record between the kernel's head and our tail, then release them.
    pub(crate) fn drain(&mut self) -> Vec<Record> {
        let page = page_size();
        // SAFETY: the mapping is one metadata page followed by the data area.
        let data = unsafe { self.ptr.add(page) };
        let size = (self.len - page) as u64;
        // The first page is the perf_event_mmap_page; head/tail are u64 at fixed offsets that
        // the kernel and we access as atomics.
        let meta = self.ptr as *mut b::perf_event_mmap_page;
        // SAFETY: meta points at the mapped metadata page (no reference is made).
        let head_ptr = unsafe { std::ptr::addr_of_mut!((*meta).data_head) as *const AtomicU64 };
        // SAFETY: as above.
        let tail_ptr = unsafe { std::ptr::addr_of_mut!((*meta).data_tail) as *const AtomicU64 };
        // SAFETY: an aligned u64 in the mapping, which outlives this call.
        let head = unsafe { (*head_ptr).load(Ordering::Acquire) };
        // SAFETY: as above.
        let mut tail = unsafe { (*tail_ptr).load(Ordering::Relaxed) };
        // The `len` bytes at `off`, in place: in two parts where they wrap around the end.
        let bytes = |off: u64, len: usize| -> RawData<'_> {
            let at = (off % size) as usize;
            let first = len.min(size as usize - at);
            // SAFETY: data..data+size is the mapped data area, which outlives the records read
            // from it here; the bytes from tail to head are the kernel's to leave alone until
            // the tail is moved past them (below).
            let (a, b) = unsafe { (std::slice::from_raw_parts(data.add(at), first), std::slice::from_raw_parts(data, len - first)) };
            if b.is_empty() {
                RawData::Single(a)
            } else {
                RawData::Split(a, b)
            }
        };
        let mut out = Vec::new();
        while tail + 8 <= head {
            let header = bytes(tail, 8).as_slice();
            let ty = u32::from_ne_bytes(header[0..4].try_into().expect("8 bytes"));
            let misc = u16::from_ne_bytes(header[4..6].try_into().expect("8 bytes"));
            let len = u16::from_ne_bytes(header[6..8].try_into().expect("8 bytes")) as usize;
            if len < 8 || tail + len as u64 > head {
                break;
            }
            let body = bytes(tail + 8, len - 8);
            if let Some(r) = parse_record(ty, misc, body, &self.format) {
                out.push(r);
            }
            tail += len as u64;
        }
        fence(Ordering::Release);
        // SAFETY: see above; releasing the records to the kernel.
        unsafe { (*tail_ptr).store(tail, Ordering::Release) };
        out
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping made in `open_rings`.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// A sample record's fields after its pid.
struct SampleFields {
    tid: u32,
    ip: u64,
    time: u64,
    kernel: bool,
    stack: Option<RawStack>,
}

/// A sample of process `pid`, which the program started: counted as its, and (`--children`)
/// kept with its stack, unwound with what that process has mapped.
fn child_sample(batch: &mut SampleBatch, ev: &mut Event, pid: u32, s: SampleFields) {
    match batch.children.iter_mut().find(|c| c.0 == pid) {
        Some(child) => child.1 += 1,
        None => batch.children.push((pid, 1)),
    }
    let Some(children) = ev.children.as_mut() else { return };
    let stack = s.stack.and_then(|raw| raw.call_stack(s.ip, || Some(children.unwinder(ev.pid, pid))));
    let sample = match s.kernel {
        true => Sample::kernel(Some(s.time), s.tid, s.ip, false, None),
        false => Sample::user(Some(s.time), s.tid, s.ip, stack),
    };
    child_part(batch, pid).samples.push(sample);
}

/// A sample of the program: by address (user, or kernel where `kernel_samples` names the
/// kernel's), by thread, with its stack, and in time order.
fn program_sample(batch: &mut SampleBatch, ev: &mut Event, kernel_samples: bool, s: SampleFields) {
    let SampleFields { tid, ip, time, kernel, stack } = s;
    name_thread(batch, ev, tid);
    if kernel && !kernel_samples {
        batch.samples.push(Sample::kernel(Some(time), tid, ip, false, None));
        return;
    }
    let mut stack = stack.and_then(|raw| raw.call_stack(ip, || ev.unwinder.as_mut()));
    // A kernel sample's copied registers and stack are the user state at the system call:
    // the kernel's address is the leaf above them.
    if let (true, Some(st)) = (kernel, stack.as_mut()) {
        if st.frames.first() != Some(&ip) {
            st.frames.insert(0, ip);
        }
    }
    batch.samples.push(match kernel {
        true => Sample::kernel(Some(time), tid, ip, true, stack),
        false => Sample::user(Some(time), tid, ip, stack),
    });
}

/// Process `pid` mapped `m` (`is_program`: the program's file): the program's own mapping
/// in the profiled process gives the load base; a child's is its own where children are
/// followed, else not the profile's.
fn mapped(batch: &mut SampleBatch, ev: &mut Event, pid: u32, m: Mapping, is_program: bool) {
    if pid == ev.pid && ev.load_base.is_none() && is_program {
        ev.load_base = ev.image.load_base_for_mapping(m.start, m.pgoff);
        batch.load_base = ev.load_base;
    }
    if pid != ev.pid {
        if let Some(children) = ev.children.as_mut() {
            children.mapped(pid, &m);
            child_part(batch, pid).mappings.push(m);
        }
        return;
    }
    if let Some(u) = ev.unwinder.as_mut() {
        u.add_mapping(&m);
    }
    if let Some(children) = ev.children.as_mut() {
        children.program_mappings.push(m.clone());
    }
    batch.mappings.push(m);
}

/// A look at a thread (`--off-cpu`): where it was found blocked, its stack unwound with what
/// its process has mapped (a child's: `--children`); the same wait as at its last look.
fn probed(batch: &mut SampleBatch, ev: &mut Event, p: crate::off_cpu::RawProbe) {
    let site = match p.reading {
        crate::off_cpu::Reading::Running => None,
        crate::off_cpu::Reading::Same => ev.last_site.get(&p.tid).cloned(),
        crate::off_cpu::Reading::Blocked { call, target, regs, stack } => {
            let unwinder = match ev.children.as_mut() {
                Some(children) if p.pid != ev.pid => Some(children.unwinder(ev.pid, p.pid)),
                _ => ev.unwinder.as_mut(),
            };
            let stack = match unwinder {
                Some(u) => u.unwind_without_bp(regs, &stack),
                None => CallStack { frames: vec![regs.ip], truncated: true },
            };
            let site = prof_core::sampler::WaitSite { pid: p.pid, call, target, stack };
            ev.last_site.insert(p.tid, site.clone());
            Some(site)
        }
    };
    batch.threads.probes.push(prof_core::sampler::Probe { tid: p.tid, from: p.from, to: p.to, sched: p.sched, site });
}

/// Thread `tid` of the program, sampled: its name read (`/proc/PID/task/TID/comm`) when it is
/// first seen, while it runs.
fn name_thread(batch: &mut SampleBatch, ev: &mut Event, tid: u32) {
    if ev.named_threads.insert(tid) {
        let comm = prof_objects::bounded::read_to_string(
            Path::new(&format!("/proc/{}/task/{tid}/comm", ev.pid)),
            prof_objects::bounded::proc_limits::SMALL,
        )
        .unwrap_or_default();
        batch.thread_names.push((tid, comm.trim_end().to_string()));
    }
}

/// A record (its body, after the 8-byte header) of a ring whose records are laid out as
/// `format` says, as far as we use it (linux-perf-event-reader parses it); `None` for records
/// we do not use, and for any record that does not parse (cut short, or claiming more than
/// it holds).
pub(crate) fn parse_record(ty: u32, misc: u16, body: RawData, format: &RecordParseInfo) -> Option<Record> {
    let raw = RawEventRecord::new(RecordType(ty), misc, body, *format);
    // Records other than samples end with the sample_id (sample_id_all): thread and time.
    let sample_id = || raw.common_data().ok();
    match raw.parse().ok()? {
        // A tracepoint's: its fields are in its raw data.
        EventRecord::Sample(s) if s.raw.is_some() => {
            let (mut raw, mut data) = (s.raw?, [0u8; 24]);
            raw.read_exact(&mut data).ok()?;
            Some(Record::Syscall {
                pid: s.pid? as u32,
                tid: s.tid? as u32,
                time: s.timestamp?,
                event: u16::from_ne_bytes([data[0], data[1]]),
                nr: i64::from_ne_bytes(data[8..16].try_into().ok()?),
                ret: i64::from_ne_bytes(data[16..24].try_into().ok()?),
                chain: s.callchain.map(|c| (0..c.len()).filter_map(|i| c.get(i)).filter(|&a| a < b::PERF_CONTEXT_MAX).collect()).unwrap_or_default(),
                // No user registers (abi 0): a kernel thread's call.
                copy: s.user_regs.zip(s.user_stack).and_then(|(regs, (copy, dyn_size))| {
                    let regs = UserRegs { bp: regs.get(PERF_REG_X86_BP)?, sp: regs.get(PERF_REG_X86_SP)?, ip: regs.get(PERF_REG_X86_IP)? };
                    let copy = copy.as_slice();
                    let copied = usize::try_from(dyn_size).unwrap_or(usize::MAX).min(copy.len());
                    Some((regs, copy[..copied].to_vec()))
                }),
            })
        }
        EventRecord::Sample(s) => {
            let stack = match (s.callchain, s.user_regs) {
                (Some(chain), _) => Some(RawStack::Chain((0..chain.len()).filter_map(|i| chain.get(i)).collect())),
                // No user registers (abi 0): a kernel thread's sample, no user stack to unwind.
                (None, Some(regs)) => {
                    let regs = UserRegs { bp: regs.get(PERF_REG_X86_BP)?, sp: regs.get(PERF_REG_X86_SP)?, ip: regs.get(PERF_REG_X86_IP)? };
                    let (copy, dyn_size) = s.user_stack?;
                    let copy = copy.as_slice();
                    let copied = usize::try_from(dyn_size).unwrap_or(usize::MAX).min(copy.len());
                    Some(RawStack::Copy { regs, bytes: copy[..copied].to_vec() })
                }
                (None, None) => None,
            };
            Some(Record::Sample {
                ip: s.ip?,
                pid: s.pid? as u32,
                tid: s.tid? as u32,
                time: s.timestamp?,
                kernel: s.cpu_mode == CpuMode::Kernel,
                stack,
            })
        }
        EventRecord::Lost(l) => Some(Record::Lost(l.count)),
        // A COMM record is an exec when its misc flag says so (else a rename: prctl).
        EventRecord::Comm(c) if c.is_execve => {
            let comm = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
            Some(Record::Exec { pid: c.pid as u32, comm, time: sample_id()?.timestamp? })
        }
        EventRecord::Fork(f) => Some(Record::Fork { pid: f.pid as u32, ppid: f.ppid as u32, tid: f.tid as u32, time: f.timestamp }),
        EventRecord::Exit(f) => Some(Record::Exit { pid: f.pid as u32, tid: f.tid as u32, time: f.timestamp }),
        // A task's own switch record: only its sample_id, out and preempted in misc.
        EventRecord::ContextSwitch(sw) if raw.record_type == RecordType::SWITCH => {
            let id = sample_id()?;
            let out = match sw {
                ContextSwitchRecord::In { .. } => None,
                ContextSwitchRecord::Out { preempted, .. } => Some(preempted == TaskWasPreempted::Yes),
            };
            Some(Record::Switch { pid: id.pid? as u32, tid: id.tid? as u32, time: id.timestamp?, out })
        }
        // A mapping announced by its build-id has no device and inode to tell its file by.
        EventRecord::Mmap2(m) => match m.file_id {
            Mmap2FileId::InodeAndVersion(file) => Some(Record::Mmap2 {
                pid: m.pid as u32,
                addr: m.address,
                len: m.length,
                pgoff: m.page_offset,
                dev: (file.major, file.minor),
                ino: file.inode,
                raw: m.path.as_slice().into_owned(),
                time: sample_id().and_then(|id| id.timestamp).unwrap_or(0),
            }),
            Mmap2FileId::BuildId(_) => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two execs of one process read from two CPUs' rings, the later first: put in time
    /// order, in the places exec records had, the other records where they were.
    #[test]
    fn execs_are_taken_in_the_order_they_happened() {
        let exec = |comm: &str, time| Record::Exec { pid: 7, comm: comm.into(), time };
        let fork = Record::Fork { pid: 7, ppid: 6, tid: 7, time: 1 };
        let mut records = vec![exec("busy", 30), fork, Record::Lost(2), exec("env", 20)];
        process_records_in_time_order(&mut records);
        assert_eq!(records, [Record::Fork { pid: 7, ppid: 6, tid: 7, time: 1 }, exec("env", 20), Record::Lost(2), exec("busy", 30)]);
    }

    /// A process that exec'd on CPU 1 and had the dynamic linker map its libc on CPU 0, whose
    /// ring is read first: the mapping is taken after the exec (which clears what the process
    /// had), so its libc is known when its calls' stack tops are unwound (the flake of
    /// `system.rs`'s requests test, whose writes were all sited in `main`).
    #[test]
    fn a_mapping_read_from_an_earlier_ring_comes_after_its_exec() {
        let libc = || Record::Mmap2 { pid: 7, addr: 0x7f00_0000_0000, len: 0x1000, pgoff: 0, dev: (8, 1), ino: 3, raw: b"/usr/lib/libc.so.6".to_vec(), time: 25 };
        let exec = || Record::Exec { pid: 7, comm: "writes".into(), time: 20 };
        let sample = || Record::Sample { ip: 0x7f00_0000_0010, pid: 7, tid: 7, time: 26, kernel: false, stack: None };
        let mut records = vec![libc(), sample(), exec()];
        in_taking_order(&mut records);
        assert_eq!(records, [exec(), libc(), sample()]);
    }
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn parses_a_user_sample() {
        let mut body = 0x5555_0000_1234u64.to_ne_bytes().to_vec();
        // pid 1, tid 3, time 99.
        body.extend_from_slice(&[1, 0, 0, 0, 3, 0, 0, 0]);
        body.extend_from_slice(&99u64.to_ne_bytes());
        let r = parse(b::PERF_RECORD_SAMPLE, b::PERF_RECORD_MISC_USER as u16, &body, PLAIN);
        assert_eq!(r, Some(Record::Sample { ip: 0x5555_0000_1234, pid: 1, tid: 3, time: 99, kernel: false, stack: None }));
        let r = parse(b::PERF_RECORD_SAMPLE, b::PERF_RECORD_MISC_KERNEL as u16, &body, PLAIN);
        assert_eq!(r, Some(Record::Sample { ip: 0x5555_0000_1234, pid: 1, tid: 3, time: 99, kernel: true, stack: None }));
    }

    /// The records of an event opened with `call_graph` (as profil opens it), read from `body`.
    fn parse(ty: u32, misc: u16, body: &[u8], call_graph: CallGraph) -> Option<Record> {
        let spec = EventSpec { period_ns: 1_000_000, call_graph, count_kernel: true, at_exec: true, inherit: true, data_pages: DATA_PAGES };
        parse_record(ty, misc, RawData::Single(body), &record_format(&spec))
    }

    const PLAIN: CallGraph = CallGraph::None;

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    /// `--children` reads who started whom (FORK), what a process became (COMM, exec) and when
    /// it ended (EXIT).
    #[test]
    fn parses_fork_and_exec_records() {
        let mut fork = [7u32, 5, 7, 5].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>();
        fork.extend_from_slice(&123u64.to_ne_bytes());
        assert_eq!(parse(b::PERF_RECORD_FORK, 0, &fork, PLAIN), Some(Record::Fork { pid: 7, ppid: 5, tid: 7, time: 123 }));
        assert_eq!(parse(b::PERF_RECORD_EXIT, 0, &fork, PLAIN), Some(Record::Exit { pid: 7, tid: 7, time: 123 }));
        // A switch: only its sample_id (pid, tid, time), out and preempted in misc.
        let switch = words(&[7 | 8 << 32, 12345]);
        assert_eq!(parse(14, 0x2000 | 0x4000, &switch, PLAIN), Some(Record::Switch { pid: 7, tid: 8, time: 12345, out: Some(true) }));
        assert_eq!(parse(14, 0x2000, &switch, PLAIN), Some(Record::Switch { pid: 7, tid: 8, time: 12345, out: Some(false) }));
        assert_eq!(parse(14, 0, &switch, PLAIN), Some(Record::Switch { pid: 7, tid: 8, time: 12345, out: None }));
        let mut comm = [9u32, 9].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>();
        comm.extend_from_slice(b"busy\0\0\0\0");
        // The sample_id: pid, tid, time.
        comm.extend(words(&[9 | 9 << 32, 777]));
        let exec = b::PERF_RECORD_MISC_COMM_EXEC as u16;
        assert_eq!(parse(b::PERF_RECORD_COMM, exec, &comm, PLAIN), Some(Record::Exec { pid: 9, comm: "busy".into(), time: 777 }));
        // A rename (prctl), not an exec; and records cut short.
        assert_eq!(parse(b::PERF_RECORD_COMM, 0, &comm, PLAIN), None);
        assert_eq!(parse(b::PERF_RECORD_FORK, 0, &fork[..6], PLAIN), None);
        assert_eq!(parse(b::PERF_RECORD_COMM, exec, &comm[..8], PLAIN), None);
    }

    #[test]
    fn parses_a_frame_pointer_chain() {
        let user = b::PERF_CONTEXT_USER;
        let body = words(&[0x1000, 7 | 7 << 32, 55, 4, user, 0x1000, 0x2005, 0x3007]);
        let f = CallGraph::FramePointers;
        let Some(Record::Sample { ip, stack: Some(RawStack::Chain(chain)), .. }) =
            parse(b::PERF_RECORD_SAMPLE, b::PERF_RECORD_MISC_USER as u16, &body, f)
        else {
            panic!()
        };
        assert_eq!(chain_stack(ip, chain), CallStack { frames: vec![0x1000, 0x2005, 0x3007], truncated: false });
        // A chain as long as the walk may go was cut there.
        let full: Vec<u64> = (0..MAX_CALLCHAIN as u64).collect();
        assert!(chain_stack(0, full).truncated);
    }

    #[test]
    fn parses_registers_and_a_stack_copy() {
        // abi 2 (64-bit), bp sp ip; size 16, 16 bytes, dyn_size 8 (only 8 were copied).
        let mut body = words(&[0x1000, 7 | 7 << 32, 55, 2, 0xbb, 0x7ff0, 0x1000, 16]);
        body.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 9, 9, 9, 9]);
        body.extend_from_slice(&8u64.to_ne_bytes());
        let f = CallGraph::Dwarf { stack_size: 16 };
        let r = parse(b::PERF_RECORD_SAMPLE, b::PERF_RECORD_MISC_USER as u16, &body, f);
        let copy = RawStack::Copy { regs: UserRegs { ip: 0x1000, sp: 0x7ff0, bp: 0xbb }, bytes: vec![1, 2, 3, 4, 5, 6, 7, 8] };
        assert_eq!(r, Some(Record::Sample { ip: 0x1000, pid: 7, tid: 7, time: 55, kernel: false, stack: Some(copy) }));
        // No user registers (abi 0) and no stack: a sample without a stack to unwind.
        let body = words(&[0x1000, 7 | 7 << 32, 55, 0, 0]);
        let r = parse(b::PERF_RECORD_SAMPLE, b::PERF_RECORD_MISC_USER as u16, &body, f);
        assert_eq!(r, Some(Record::Sample { ip: 0x1000, pid: 7, tid: 7, time: 55, kernel: false, stack: None }));
    }

    #[test]
    fn parses_lost_and_mmap2() {
        let mut lost = 7u64.to_ne_bytes().to_vec();
        lost.extend_from_slice(&42u64.to_ne_bytes());
        assert_eq!(parse(b::PERF_RECORD_LOST, 0, &lost, PLAIN), Some(Record::Lost(42)));

        let mut m = Vec::new();
        m.extend_from_slice(&9u32.to_ne_bytes());
        m.extend_from_slice(&9u32.to_ne_bytes());
        for v in [0x7f00_0000_1000u64, 0x2000, 0x1000] {
            m.extend_from_slice(&v.to_ne_bytes());
        }
        m.extend_from_slice(&254u32.to_ne_bytes());
        m.extend_from_slice(&1u32.to_ne_bytes());
        m.extend_from_slice(&77u64.to_ne_bytes());
        m.extend_from_slice(&0u64.to_ne_bytes());
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(b"/bin/fib\0\0\0\0\0\0\0\0");
        let r = parse(b::PERF_RECORD_MMAP2, 0, &m, PLAIN).unwrap();
        assert_eq!(
            r,
            Record::Mmap2 {
                pid: 9,
                addr: 0x7f00_0000_1000,
                len: 0x2000,
                pgoff: 0x1000,
                dev: (254, 1),
                ino: 77,
                raw: b"/bin/fib".to_vec(),
                time: 0
            }
        );
    }

    /// Paths are kept as bytes: a name that is not UTF-8 is read from its own bytes, a deleted
    /// file through the process's links to it.
    #[test]
    fn mapped_files_are_found_by_their_exact_names() {
        assert_eq!(mapping_file(7, Some(b"/usr/lib/libc.so.6"), 0x1000, 0x2000, false), None);
        assert_eq!(
            mapping_file(7, Some(b"/tmp/sp\xffin"), 0x1000, 0x2000, true),
            Some(PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/sp\xffin")))
        );
        assert_eq!(mapping_file(7, Some(b"/tmp/d (deleted)"), 0x1000, 0x2000, true), Some(PathBuf::from("/proc/7/exe")));
        assert_eq!(
            mapping_file(7, Some(b"/usr/lib/libx.so (deleted)"), 0x7f00_0000_1000, 0x2000, false),
            Some(PathBuf::from("/proc/7/map_files/7f0000001000-7f0000003000"))
        );
        // Read lossily from /proc/PID/maps: its bytes are gone, the link remains.
        assert_eq!(mapping_file(7, None, 0x1000, 0x2000, false), Some(PathBuf::from("/proc/7/map_files/1000-3000")));
    }

    /// A ring of one data page in anonymous memory, its records laid out as `spec` says.
    fn memory_ring(spec: &EventSpec) -> Ring {
        let len = 2 * page_size();
        // SAFETY: a fresh private anonymous mapping, owned (and unmapped) by the Ring.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        let fd = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        Ring { fd, ptr: ptr as *mut u8, len, format: record_format(spec), _more: Vec::new() }
    }

    /// Sets the ring's tail and head, and writes `bytes` at the tail, wrapping at the end.
    fn fill(ring: &mut Ring, tail: u64, head: u64, bytes: &[u8]) {
        let page = page_size();
        let meta = ring.ptr as *mut b::perf_event_mmap_page;
        // SAFETY: the ring's own mapping: the metadata page, then one page of data.
        unsafe {
            (*meta).data_tail = tail;
            (*meta).data_head = head;
            for (i, &byte) in bytes.iter().enumerate() {
                *ring.ptr.add(page + (tail as usize + i) % page) = byte;
            }
        }
    }

    fn tail_of(ring: &Ring) -> u64 {
        // SAFETY: the ring's metadata page.
        unsafe { (*(ring.ptr as *const b::perf_event_mmap_page)).data_tail }
    }

    #[test]
    fn a_record_across_the_end_of_the_ring_is_read_whole_and_a_partial_one_waits() {
        let spec = EventSpec { period_ns: 1, call_graph: CallGraph::FramePointers, count_kernel: false, at_exec: true, inherit: true, data_pages: 1 };
        let mut ring = memory_ring(&spec);
        // A sample of 56 bytes: header, ip, pid and tid, time, a chain of two frames.
        let header = u64::from(b::PERF_RECORD_SAMPLE) | u64::from(b::PERF_RECORD_MISC_USER) << 32 | 56 << 48;
        let record = words(&[header, 0x1000, 7 | 7 << 32, 55, 2, 0x1000, 0x2005]);
        // Its header cut by the end of the data page, its body, or neither.
        for before_the_end in [4, 20, 56] {
            let tail = (page_size() - before_the_end) as u64;
            fill(&mut ring, tail, tail + 40, &record);
            assert_eq!(ring.drain(), []);
            assert_eq!(tail_of(&ring), tail, "a record the kernel is still writing is left for later");
            fill(&mut ring, tail, tail + 56, &record);
            let chain = RawStack::Chain(vec![0x1000, 0x2005]);
            assert_eq!(ring.drain(), [Record::Sample { ip: 0x1000, pid: 7, tid: 7, time: 55, kernel: false, stack: Some(chain) }]);
            assert_eq!(tail_of(&ring), tail + 56);
        }
    }

    #[test]
    fn truncated_records_are_ignored_not_panics() {
        assert_eq!(parse(b::PERF_RECORD_SAMPLE, 0, &[1, 2, 3], PLAIN), None);
        assert_eq!(parse(b::PERF_RECORD_MMAP2, 0, &[0; 60], PLAIN), None);
        assert_eq!(parse(999, 0, &[], PLAIN), None);
        // Stack parts that claim more than the record holds (after ip, pid and tid, time).
        // (A chain of 2^40 frames: the reader multiplies the count by 8 unchecked, which a
        // count past 2^61, never the kernel's, would overflow in a debug build.)
        let mut body = vec![0u8; 24];
        body.extend_from_slice(&(1u64 << 40).to_ne_bytes());
        assert_eq!(parse(b::PERF_RECORD_SAMPLE, 0, &body, CallGraph::FramePointers), None);
        let mut body = vec![0u8; 24];
        body.extend_from_slice(&1u64.to_ne_bytes());
        body.extend_from_slice(&[0; 24]);
        body.extend_from_slice(&(1u64 << 40).to_ne_bytes());
        assert_eq!(parse(b::PERF_RECORD_SAMPLE, 0, &body, CallGraph::Dwarf { stack_size: 8 }), None);
    }

    #[test]
    fn the_session_lock_is_exclusive_and_released_on_drop() {
        // The suite names its session (.cargo/config.toml); a test of its own would race.
        assert!(session_lock_name().is_some(), "the tests run under PROFD_SESSION");
        let first = lock_session().unwrap();
        assert!(first.is_some());
        assert_eq!(lock_session().map(|_| ()), Err(ProfError::Busy));
        drop(first);
        assert!(lock_session().unwrap().is_some());
    }

    #[test]
    fn no_session_is_locked_unless_one_is_named() {
        assert_eq!(lock_name_of(None), None);
        assert_eq!(lock_name_of(Some("".into())), None);
        assert_eq!(lock_name_of(Some("mine".into())), Some(b"mine".to_vec()));
        let long = lock_name_of(Some("x".repeat(200).into())).unwrap();
        assert_eq!((long.len(), &long[..14]), (30, &b"profd.session."[..]));
        assert_eq!(lock_name_of(Some("x".repeat(200).into())), Some(long));
    }
}
