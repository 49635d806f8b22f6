//! The session: its state, counters, exact-PC table and server labels, the samplers' hot path
//! and the control operations.

use alloc::{boxed::Box, vec::Vec};
use core::{
    fmt,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
};

use super::{
    owner_key, parse_command, probe_start, read_stack_table, stack_table_size, Clock, Command,
    Entry, FlatSnapshot, Followed, PackedStack, ParseError, StackBuf, StackRef, StackStore,
    StackTables, Tree, FOLLOWED_EXITED, MAX_ROOTS, SERVED_CAPACITY, SERVER_STACK_CAPACITY,
    WAIT_SITE_CAPACITY,
};

/// CPUs the per-CPU pid cache can hold (the kernel's `MAX_CPU_COUNT` on x86_64). A CPU
/// number at or above it never matches.
pub const MAX_CPUS: usize = 128;

/// Counter limit of the kernel's profiler: a count that would go past it stops the session.
pub const COUNTER_LIMIT: u64 = u64::MAX;

/// Daemon contexts that can be labelled at once as working for the session.
pub const MAX_SERVERS: usize = 16;

/// Bit of a CPU's word in the per-CPU pid cache: the CPU is switching contexts. Its samples
/// go to the pid in the word (the previous context's until the switch is on the next one's
/// stack), but the glue walks no stack then: the kernel stack, the TSS and the address space
/// change under the sample.
const SWITCHING: usize = 1 << (usize::BITS - 1);

/// Where a session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum State {
    /// No session since boot.
    Idle = 0,
    /// Counting.
    Running = 1,
    /// Ended; its data stays readable until the next start.
    Stopped = 2,
}

impl State {
    pub fn from_u32(raw: u32) -> Option<State> {
        match raw {
            0 => Some(State::Idle),
            1 => Some(State::Running),
            2 => Some(State::Stopped),
            _ => None,
        }
    }
}

/// Why a session stopped (a session idle or running has none: `Option<StopReason>`, 0 in
/// the status word and in `sys:prof_data`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum StopReason {
    /// `stop` was written to `sys:prof_ctl`.
    Request = 1,
    /// The last context of the profiled process exited.
    Exit = 2,
    /// A counter would have passed the limit; that tick was not counted.
    Overflow = 3,
}

impl StopReason {
    /// The reason coded `raw`; `None` for 0 (no reason) and for a code that is none.
    pub fn from_u32(raw: u32) -> Option<StopReason> {
        match raw {
            1 => Some(StopReason::Request),
            2 => Some(StopReason::Exit),
            3 => Some(StopReason::Overflow),
            _ => None,
        }
    }

    /// The code of `reason` (0: none).
    pub fn code(reason: Option<StopReason>) -> u32 {
        reason.map_or(0, |r| r as u32)
    }
}

/// When a session starts counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountFrom {
    /// At once: attaching to a running process.
    Now,
    /// From the process's next exec (its next address-space switch): a launcher starts the
    /// session on its child before the child execs the program, as perf's `enable_on_exec`.
    Exec,
}

/// What interrupts the CPUs for a session's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Source {
    /// The scheduler's timer interrupt (the PIT, or the HPET replacing it): about 246 a
    /// second per CPU on x86. It is masked while the kernel runs, so it sees user mode only,
    /// and a tick that falls in a system call is taken as the call returns, on the
    /// instruction after it.
    Timer = 0,
    /// An NMI from an HPET comparator at the session's rate, sent to every CPU: it interrupts
    /// the kernel too, so kernel samples are real.
    NmiHpet = 1,
}

impl Source {
    pub fn from_u32(raw: u32) -> Option<Source> {
        match raw {
            0 => Some(Source::Timer),
            1 => Some(Source::NmiHpet),
            _ => None,
        }
    }
}

/// A session's sampling: its source and that source's rate (samples per second and CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    pub source: Source,
    pub rate: u64,
}

/// Why a control operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtlError {
    /// The command is malformed (EINVAL).
    Malformed(ParseError),
    /// No live context has the pid (ESRCH).
    NoSuchProcess,
    /// A session is running (EBUSY).
    Busy,
    /// The tables could not be allocated (ENOMEM).
    NoMemory,
}

impl fmt::Display for CtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtlError::Malformed(e) => write!(f, "malformed command: {e}"),
            CtlError::NoSuchProcess => f.write_str("no such process"),
            CtlError::Busy => f.write_str("a profiling session is running"),
            CtlError::NoMemory => f.write_str("no memory for the prof table"),
        }
    }
}

/// What the control path needs from the kernel: the NMI source, the processes, and how to
/// wait. The profiler calls it only from its control operations ([`Profiler::ctl`],
/// [`Profiler::data`], [`Profiler::exited`]), each of which holds the control lock throughout:
/// starting a session, arming its source, stopping it and disarming the source are one
/// critical section, so two starts never arm the source twice and a read never disarms a
/// session being started.
pub trait KernelOps {
    /// Start the NMI source at `rate` samples a second per CPU. The rate the hardware gives,
    /// or `None` where there is no NMI source (the session then samples on the timer).
    fn arm_nmi(&mut self, rate: u64) -> Option<u64>;
    /// Stop the NMI source; nothing armed, nothing to do.
    fn disarm_nmi(&mut self);
    /// Samples a second per CPU of the timer tick (0: not known).
    fn timer_rate(&self) -> u64;
    /// The start of the lowest executable user mapping of a live context of `pid` (0: it
    /// has none); `None` if `pid` has no live context.
    fn exec_base(&mut self, pid: usize) -> Option<u64>;
    /// Called in the loop that waits for the control lock while another CPU holds it (the
    /// kernel answers TLB shootdowns there, as its own spinning locks do).
    fn wait(&self);
    /// Bytes of memory the kernel can spare for a session's tables: `start` refuses bigger
    /// ones (ENOMEM) rather than run the kernel short.
    fn spare_memory(&self) -> usize;
    /// The kernel's monotonic clock, ns: the clock's begin and end (the scheduler hooks are
    /// given the switch's time).
    fn now(&mut self) -> u64;
}

/// One slot of the prof table: `key` is the user PC plus one (0 marks an empty slot, so a
/// zeroed table is empty), `count` its ticks.
pub struct Slot {
    key: AtomicU64,
    count: AtomicU64,
}

impl Slot {
    const fn empty() -> Slot {
        Slot {
            key: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

/// A daemon's context working for the session: its pid and context ([`label_key`]; 0: free
/// slot), the request it took last, (scheme, tag), whether it has answered it, and the
/// program's request it serves in the end ([`request_key`]: that one, or the one the daemon
/// that asked it serves; 0: not known). Written by the daemon's own context and by the tick on
/// the CPU that runs it.
pub struct ServerLabel {
    key: AtomicU64,
    scheme: AtomicU64,
    tag: AtomicU64,
    answered: AtomicBool,
    pub(super) root: AtomicU64,
}

impl ServerLabel {
    const fn free() -> ServerLabel {
        ServerLabel {
            key: AtomicU64::new(0),
            scheme: AtomicU64::new(0),
            tag: AtomicU64::new(0),
            answered: AtomicBool::new(false),
            root: AtomicU64::new(0),
        }
    }

    /// The daemon's pid.
    fn pid(&self) -> Option<usize> {
        let key = self.key.load(Ordering::Relaxed);
        (key != 0).then_some((key >> 32 & 0x7fff_ffff) as usize)
    }

    /// Does the label name context `ctx` of `pid` (a label of context 0: any of them)?
    #[inline]
    fn names(&self, pid: usize, ctx: u32) -> bool {
        let key = self.key.load(Ordering::Relaxed);
        key != 0
            && (key >> 32 & 0x7fff_ffff) as usize == pid
            && (key as u32 == 0 || key as u32 == ctx)
    }

    fn set(&self, scheme: u64, tag: u64, root: u64) {
        self.scheme.store(scheme, Ordering::Relaxed);
        self.tag.store(tag, Ordering::Relaxed);
        self.root.store(root, Ordering::Relaxed);
        self.answered.store(false, Ordering::Relaxed);
    }
}

/// A labelled context as one word: a used bit (63), the daemon's pid (bits 32..63; 0: the
/// bootstrap's managers, which have none), its context (the kernel's `debug_id`; 0: any
/// context of the pid, where the caller does not say).
pub fn label_key(pid: usize, ctx: u32) -> u64 {
    1 << 63 | (pid as u64 & 0x7fff_ffff) << 32 | u64::from(ctx)
}

/// A request as one word: `(scheme + 1) << 32 | tag` (tags are the scheme's 32-bit ids).
pub fn request_key(scheme: u64, tag: u64) -> u64 {
    (scheme + 1) << 32 | (tag & 0xffff_ffff)
}

/// A request a scheme daemon has taken, as the kernel's queue held it: who made it, its tag,
/// and whether it is one-way (never answered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakenRequest {
    pub caller: usize,
    pub tag: u64,
    pub one_way: bool,
}

/// A session's state and counters, plus the per-CPU cache of the running pid.
///
/// Concurrency: the sampling hooks ([`Profiler::sample_from`]) run on every CPU at once and
/// only use atomics. The control operations ([`Profiler::ctl`], [`Profiler::data`],
/// [`Profiler::exited`]) hold the control lock, a spin lock taken only outside interrupts,
/// while they run, hardware included ([`KernelOps`]). The sampler's own stop (an overflow)
/// is one CAS on the state word, as every stop is, so the first stop keeps its reason. A table
/// is freed only by `start` after the session is off and no sampler is inside
/// (`in_flight == 0`).
pub struct Profiler {
    /// The one flag the tick reads while no session runs.
    pub(super) on: AtomicBool,
    /// [`State`] in bits 0..8, [`StopReason`] in bits 8..16: changed together by one CAS so
    /// the first stop wins and its reason sticks.
    status: AtomicU32,
    pub(super) pid: AtomicUsize,
    /// A [`CountFrom::Exec`] session whose process has not exec'd yet: ticks are not counted.
    awaiting_exec: AtomicBool,
    /// The session's [`Source`] (only its samples count) and rate.
    source: AtomicU32,
    rate: AtomicU64,
    exec_base: AtomicU64,
    addr_space_switches: AtomicU64,
    /// Entry points of the process's address-space switches (0: unused), the walk's roots.
    roots: [AtomicU64; MAX_ROOTS],
    user_ticks: AtomicU64,
    kernel_ticks: AtomicU64,
    dropped: AtomicU64,
    table: AtomicPtr<Slot>,
    capacity: AtomicUsize,
    /// The call-stack table and the stacks that found it full.
    stacks: StackStore,
    stacks_dropped: AtomicU64,
    /// Daemons working for the session now.
    labels: [ServerLabel; MAX_SERVERS],
    /// Server samples (owner = the daemon's pid) and the ones that found the table full.
    server_stacks: StackStore,
    server_user_ticks: AtomicU64,
    server_kernel_ticks: AtomicU64,
    servers_dropped: AtomicU64,
    /// Ticks of the idle contexts and kernel threads (pid 0, in kernel mode), and of every
    /// other process (a user context without a pid among them).
    idle_ticks: AtomicU64,
    other_ticks: AtomicU64,
    /// A session on every process (`start all`): each one's samples go to the server stacks
    /// under its pid, as a labelled daemon's would.
    all: AtomicBool,
    /// A session that follows the processes its process starts (`children`): theirs go to the
    /// server stacks under their pid and image, counted apart from the daemons'.
    children: AtomicBool,
    tree: Tree,
    children_user_ticks: AtomicU64,
    children_kernel_ticks: AtomicU64,
    /// The threads by the clock and their wait sites (`clock`).
    pub(super) clock: Clock,
    /// Samplers (and clock hooks) that saw `on` and may be touching the tables.
    pub(super) in_flight: AtomicUsize,
    /// The control lock.
    ctl_busy: AtomicBool,
    /// Pid of the context running on each CPU, written at context switch (0: none/kernel),
    /// with [`SWITCHING`] while a switch is under way.
    cpu_pid: [AtomicUsize; MAX_CPUS],
    /// The context running on each CPU (the kernel's `debug_id`; 0: not known), written just
    /// before its pid: a label names a daemon's context, not all its threads.
    cpu_ctx: [AtomicU32; MAX_CPUS],
    #[cfg_attr(
        not(any(target_arch = "x86", target_arch = "x86_64")),
        allow(dead_code)
    )]
    limit: u64,
}

impl Profiler {
    /// An idle profiler whose counters stop the session rather than pass `limit`.
    pub const fn new(limit: u64) -> Profiler {
        Profiler {
            on: AtomicBool::new(false),
            status: AtomicU32::new(State::Idle as u32),
            pid: AtomicUsize::new(0),
            awaiting_exec: AtomicBool::new(false),
            source: AtomicU32::new(Source::Timer as u32),
            rate: AtomicU64::new(0),
            exec_base: AtomicU64::new(0),
            addr_space_switches: AtomicU64::new(0),
            roots: [const { AtomicU64::new(0) }; MAX_ROOTS],
            user_ticks: AtomicU64::new(0),
            kernel_ticks: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            table: AtomicPtr::new(core::ptr::null_mut()),
            capacity: AtomicUsize::new(0),
            stacks: StackStore::new(),
            stacks_dropped: AtomicU64::new(0),
            labels: [const { ServerLabel::free() }; MAX_SERVERS],
            server_stacks: StackStore::new(),
            server_user_ticks: AtomicU64::new(0),
            server_kernel_ticks: AtomicU64::new(0),
            servers_dropped: AtomicU64::new(0),
            idle_ticks: AtomicU64::new(0),
            other_ticks: AtomicU64::new(0),
            all: AtomicBool::new(false),
            children: AtomicBool::new(false),
            tree: Tree::new(),
            children_user_ticks: AtomicU64::new(0),
            children_kernel_ticks: AtomicU64::new(0),
            clock: Clock::new(),
            in_flight: AtomicUsize::new(0),
            ctl_busy: AtomicBool::new(false),
            cpu_pid: [const { AtomicUsize::new(0) }; MAX_CPUS],
            cpu_ctx: [const { AtomicU32::new(0) }; MAX_CPUS],
            limit,
        }
    }

    /// Is a session counting? The whole cost of the timer hook when none is.
    #[inline(always)]
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Is `pid` the process of the running session?
    #[inline]
    pub fn is_profiling(&self, pid: usize) -> bool {
        self.is_on() && pid != 0 && self.pid.load(Ordering::Relaxed) == pid
    }

    /// Process `pid` as the session follows it (`children`); `None` for the session's own
    /// process and any other.
    #[inline]
    fn followed(&self, pid: usize) -> Option<&Followed> {
        if !self.children.load(Ordering::Relaxed) {
            return None;
        }
        self.tree.find(pid)
    }

    /// The key a tick of `pid` goes under as a process the session follows: its pid and image
    /// ([`owner_key`]).
    #[inline]
    fn followed_owner(&self, pid: usize) -> Option<u64> {
        self.followed(pid).map(|f| f.owner())
    }

    /// Is `pid` the session's process or one it follows?
    #[inline]
    fn in_tree(&self, pid: usize) -> bool {
        pid != 0 && (pid == self.pid.load(Ordering::Relaxed) || self.followed_owner(pid).is_some())
    }

    /// Does the session count (its process has exec'd, where it waits for the exec)?
    #[inline]
    pub(super) fn counting(&self) -> bool {
        !self.awaiting_exec.load(Ordering::Acquire)
    }

    /// `pid` runs on `cpu` (0 for kernel threads and idle): the `attrs` hook, when a running
    /// context is given its pid.
    #[inline]
    pub fn note_switch(&self, cpu: usize, pid: usize) {
        if let Some(slot) = self.cpu_pid.get(cpu) {
            slot.store(pid, Ordering::Relaxed);
        }
    }

    /// Scheduler hook, when `cpu` has chosen the next context: a switch begins. Until
    /// [`Profiler::note_switch_to`] the CPU runs the switch on the previous context's stack,
    /// and its samples stay that context's.
    #[inline]
    pub fn note_switch_begin(&self, cpu: usize) {
        if let Some(slot) = self.cpu_pid.get(cpu) {
            slot.fetch_or(SWITCHING, Ordering::Relaxed);
        }
    }

    /// Scheduler hook, on the next context's stack (the switch's finish hook): its samples are
    /// those of context `ctx` of `pid` from here, still without a walk until
    /// [`Profiler::note_switch_end`].
    #[inline]
    pub fn note_switch_to(&self, cpu: usize, pid: usize, ctx: u32) {
        if let (Some(slot), Some(ctx_slot)) = (self.cpu_pid.get(cpu), self.cpu_ctx.get(cpu)) {
            ctx_slot.store(ctx, Ordering::Relaxed);
            slot.store(pid | SWITCHING, Ordering::Relaxed);
        }
    }

    /// The context on `cpu` (0: not known).
    #[inline]
    fn ctx_on(&self, cpu: usize) -> u32 {
        self.cpu_ctx
            .get(cpu)
            .map_or(0, |slot| slot.load(Ordering::Relaxed))
    }

    /// Scheduler hook, once the next context's address space is the CPU's: the switch is over.
    #[inline]
    pub fn note_switch_end(&self, cpu: usize) {
        if let Some(slot) = self.cpu_pid.get(cpu) {
            slot.fetch_and(!SWITCHING, Ordering::Relaxed);
        }
    }

    /// Would a user tick on `cpu` be counted with its stack now, as the program's or as a
    /// server's? The glue walks the user stack only then (on x86_64, the one that walks).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline]
    pub fn wants_stack(&self, cpu: usize) -> bool {
        if !self.is_on() || !self.counting() {
            return false;
        }
        let Some(pid) = self
            .cpu_pid
            .get(cpu)
            .map(|slot| slot.load(Ordering::Relaxed))
        else {
            return false;
        };
        // No walk while the CPU switches contexts (see `SWITCHING`).
        let counted = self.all.load(Ordering::Relaxed)
            || pid == self.pid.load(Ordering::Relaxed)
            || self.followed_owner(pid & !SWITCHING).is_some();
        pid & SWITCHING == 0
            && ((pid != 0 && counted && self.stacks.capacity() > 0)
                || self.is_serving_context(pid, self.ctx_on(cpu)))
    }

    /// Is a context of `pid` a daemon labelled as working for the running session?
    #[inline]
    pub fn is_serving(&self, pid: usize) -> bool {
        self.is_on() && self.label_of(pid).is_some()
    }

    /// Is context `ctx` of `pid` labelled as working for the running session?
    #[inline]
    pub fn is_serving_context(&self, pid: usize, ctx: u32) -> bool {
        self.is_on() && self.label_for(pid, ctx).is_some()
    }

    /// A label of a context of `pid` (a process that asked: requests name processes).
    fn label_of(&self, pid: usize) -> Option<&ServerLabel> {
        self.labels.iter().find(|l| l.pid() == Some(pid))
    }

    /// The label of context `ctx` of `pid`, where one names it.
    #[inline]
    fn label_for(&self, pid: usize, ctx: u32) -> Option<&ServerLabel> {
        self.labels.iter().find(|l| l.names(pid, ctx))
    }

    /// The label whose key is `key` ([`label_key`]: that context exactly).
    fn label_keyed(&self, key: u64) -> Option<&ServerLabel> {
        self.labels
            .iter()
            .find(|l| l.key.load(Ordering::Relaxed) == key)
    }

    /// Scheme hook, in the daemon's context: context `server_ctx` of daemon `server` took
    /// request `tag` of `scheme`, made by `client` (a process). If the client is the profiled
    /// process, a process it started that the session follows, or a daemon working for one of
    /// them (so chains are followed), `server` now works for the session until it has answered
    /// that request ([`Profiler::note_request_answered`]); a request from anyone else ends its
    /// label. The label is the context's: the daemon's other threads are not working for the
    /// session (context 0: any of its contexts, where the caller cannot say which). A context
    /// that takes several requests before answering is labelled by the last one it took. With
    /// all [`MAX_SERVERS`] labels in use, a further context is not labelled.
    pub fn note_request_taken(
        &self,
        server: usize,
        server_ctx: u32,
        client: usize,
        scheme: u64,
        tag: u64,
    ) {
        // The program and the processes it started count as themselves, whoever they serve.
        if !self.is_on() || self.in_tree(server) {
            return;
        }
        let for_session = client != 0 && (self.in_tree(client) || self.is_serving(client));
        if for_session {
            self.note_scheme_daemon(scheme, server);
        }
        // A daemon without a pid (the bootstrap's managers) names its scheme (daemon 0); it is
        // labelled by its context, and cannot be without one.
        if server == 0 && server_ctx == 0 {
            return;
        }
        let key = label_key(server, server_ctx);
        let existing = self.label_keyed(key);
        // The program's own request, or the one the asking daemon serves.
        let root = if client == self.pid.load(Ordering::Relaxed) {
            request_key(scheme, tag)
        } else {
            self.label_of(client)
                .map_or(0, |l| l.root.load(Ordering::Relaxed))
        };
        match (for_session, existing) {
            (true, Some(label)) => label.set(scheme, tag, root),
            (true, None) => {
                if let Some(label) = self.labels.iter().find(|l| {
                    l.key
                        .compare_exchange(0, key, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                }) {
                    label.set(scheme, tag, root);
                }
            }
            (false, Some(label)) => label.key.store(0, Ordering::Release),
            (false, None) => {}
        }
    }

    /// Scheme hook, in the daemon's context: daemon `server` has taken `request` of `scheme`,
    /// as the kernel's own queue held it (never as read back from the daemon's buffer, which
    /// the daemon can rewrite to name any caller). A one-way request is passed over (no answer
    /// would end a label); any other goes to [`Profiler::note_request_taken`].
    pub fn note_taken(&self, server: usize, server_ctx: u32, scheme: u64, request: TakenRequest) {
        if !request.one_way {
            self.note_request_taken(server, server_ctx, request.caller, scheme, request.tag);
        }
    }

    /// Scheme hook, in the daemon's context: daemon `server` is answering request `tag` of
    /// `scheme`. If that is the request it was labelled by, its label ends with the next tick
    /// that finds it running, which still counts for the session: system calls run with
    /// interrupts masked, so a tick that fell in the answering call itself is delivered as
    /// the daemon returns from it.
    pub fn note_request_answered(&self, server: usize, server_ctx: u32, scheme: u64, tag: u64) {
        if let Some(label) = self.label_keyed(label_key(server, server_ctx))
            && label.scheme.load(Ordering::Relaxed) == scheme
            && label.tag.load(Ordering::Relaxed) == tag
        {
            label.answered.store(true, Ordering::Relaxed);
        }
    }
}

/// The sampling path: what the hooks of the x86 timer handlers and the x86_64 NMI handler
/// run. (Elsewhere the kernel compiles it without calling it.)
#[cfg_attr(
    not(any(target_arch = "x86", target_arch = "x86_64")),
    allow(dead_code)
)]
impl Profiler {
    /// Does the running session count the samples of `source`? What the hook of each source
    /// checks first: one more relaxed load only while a session runs.
    #[inline(always)]
    pub fn takes(&self, source: Source) -> bool {
        self.is_on() && self.source.load(Ordering::Relaxed) == source as u32
    }

    /// The hook of `source` (the timer tick, or an NMI): counts the sample if the session
    /// samples with that source, its PC into the exact-PC table (user or kernel address) and
    /// its call stack, where the glue walked one, into the stack table.
    ///
    /// Every sample of a running session (once its process has exec'd) lands in exactly one
    /// account: the program's (user or kernel), a process's it started (`children`), a
    /// labelled daemon's (server samples, user or kernel), idle (pid 0 in kernel mode: idle
    /// contexts, kernel threads), or another process's (in a session on all, each process's own, the user contexts without a pid
    /// under pid 0). Runs in
    /// interrupt or NMI context: lock-free and allocation-free; the two sources never count
    /// in the same session, so a sampler never nests inside another on its own CPU.
    pub fn sample_from(
        &self,
        source: Source,
        cpu: usize,
        user: bool,
        pc: u64,
        stack: Option<&StackBuf>,
    ) {
        if self.source.load(Ordering::Relaxed) != source as u32 {
            return;
        }
        let Some(slot) = self.cpu_pid.get(cpu) else {
            return;
        };
        let pid = slot.load(Ordering::Relaxed) & !SWITCHING;
        let ctx = self.ctx_on(cpu);
        // Announce ourselves before re-checking `on` (SeqCst pairs with `quiesce`), so a
        // table is never freed under us.
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if self.on.load(Ordering::SeqCst) && self.counting() {
            if pid != 0 && pid == self.pid.load(Ordering::Relaxed) {
                if self.bump(if user {
                    &self.user_ticks
                } else {
                    &self.kernel_ticks
                }) {
                    self.insert(pc);
                    if let Some(stack) = stack {
                        // By thread: the context's id owns the program's stack.
                        self.insert_stack(
                            &self.stacks,
                            &self.stacks_dropped,
                            u64::from(ctx),
                            stack,
                        );
                    }
                }
            } else if let Some(owner) = self.followed_owner(pid) {
                // A process the program started: under its pid and image.
                let mut alone = StackBuf::new();
                let counters = [&self.children_user_ticks, &self.children_kernel_ticks];
                self.count_tick_under(owner, counters, user, pc, stack, &mut alone);
            } else if let Some(label) = self.label_for(pid, ctx) {
                // A daemon's context working for the session (one of the bootstrap's managers
                // among them: pid 0, in user or kernel mode).
                if label.answered.load(Ordering::Relaxed) {
                    // The answer's tick: the last of this label.
                    let key = label.key.load(Ordering::Relaxed);
                    let _ = label
                        .key
                        .compare_exchange(key, 0, Ordering::AcqRel, Ordering::Relaxed);
                }
                let mut alone = StackBuf::new();
                if let Some(stack) = self.count_server_tick(pid, user, pc, stack, &mut alone) {
                    // Under the program's call it serves, where the clock knows it.
                    self.note_served(label.root.load(Ordering::Relaxed), pid, stack);
                }
            } else if pid == 0 && !user {
                // Idle, a kernel thread (or the kernel working for a context without a pid).
                self.bump(&self.idle_ticks);
            } else if self.all.load(Ordering::Relaxed) {
                // Every process: its sample under its pid (0: the user contexts without one,
                // the bootstrap's process and namespace managers).
                let mut alone = StackBuf::new();
                self.count_server_tick(pid, user, pc, stack, &mut alone);
            } else {
                self.bump(&self.other_ticks);
            }
        }
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    /// Count a tick of process `pid` as a server's (a labelled daemon's, or any process's in
    /// a session on all): see [`Profiler::count_tick_under`].
    fn count_server_tick<'a>(
        &self,
        pid: usize,
        user: bool,
        pc: u64,
        stack: Option<&'a StackBuf>,
        alone: &'a mut StackBuf,
    ) -> Option<&'a StackBuf> {
        let counters = [&self.server_user_ticks, &self.server_kernel_ticks];
        self.count_tick_under(pid as u64, counters, user, pc, stack, alone)
    }

    /// Count a tick in the server-stack table under `owner`: its user or kernel counter of
    /// `counters`, and its walked stack, or its PC alone (in `alone`). The stack counted,
    /// unless the counter was at its limit.
    fn count_tick_under<'a>(
        &self,
        owner: u64,
        [user_counter, kernel_counter]: [&AtomicU64; 2],
        user: bool,
        pc: u64,
        stack: Option<&'a StackBuf>,
        alone: &'a mut StackBuf,
    ) -> Option<&'a StackBuf> {
        if !self.bump(if user { user_counter } else { kernel_counter }) {
            return None;
        }
        let stack = stack_or_pc(stack, pc, alone);
        self.insert_stack(&self.server_stacks, &self.servers_dropped, owner, stack);
        Some(stack)
    }

    /// Add one to `counter` unless that would pass the limit; then stop the session instead
    /// (reason overflow) and leave the tick uncounted.
    fn bump(&self, counter: &AtomicU64) -> bool {
        let mut current = counter.load(Ordering::Relaxed);
        loop {
            if current >= self.limit {
                self.stop_with(StopReason::Overflow);
                return false;
            }
            match counter.compare_exchange_weak(
                current,
                current + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// Count one tick at `pc`: open addressing with linear probing; a free slot is claimed by
    /// CAS on its key. A full table (or the one PC that has no key) counts as dropped.
    fn insert(&self, pc: u64) {
        let key = pc.wrapping_add(1);
        let table = self.table.load(Ordering::Acquire);
        let capacity = self.capacity.load(Ordering::Acquire);
        if key == 0 || table.is_null() || capacity == 0 {
            self.bump(&self.dropped);
            return;
        }
        // SAFETY: `table` holds `capacity` slots and is not freed while we are in flight
        // with `on` seen set (see `quiesce`).
        let slots = unsafe { core::slice::from_raw_parts(table, capacity) };
        let mut index = probe_start(pc, capacity);
        for _ in 0..capacity {
            if let Some(slot) = slots.get(index) {
                let mut found = slot.key.load(Ordering::Acquire);
                if found == 0 {
                    found =
                        match slot
                            .key
                            .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                        {
                            Ok(_) => key,
                            Err(actual) => actual,
                        };
                }
                if found == key {
                    self.bump(&slot.count);
                    return;
                }
            }
            index += 1;
            if index == capacity {
                index = 0;
            }
        }
        self.bump(&self.dropped);
    }

    /// Count one call stack of `owner` in a stack table (the program's, `owner` 0, or the
    /// servers'), packed ([`PackedStack`]) and found or added by [`StackStore`]. A stack that
    /// finds no room is counted in `dropped`.
    fn insert_stack(&self, store: &StackStore, dropped: &AtomicU64, owner: u64, stack: &StackBuf) {
        if stack.len == 0 {
            self.bump(dropped);
            return;
        }
        let packed = PackedStack::new(owner, stack);
        // SAFETY: the tables are replaced only by `start` after `quiesce`, and we are in
        // flight with the session seen on.
        match unsafe { store.slot_of(&packed) } {
            Some(slot) => self.bump(&slot.count),
            None => self.bump(dropped),
        };
    }
}

impl Profiler {
    /// `sys:prof_ctl`: carry out one command ([`parse_command`]), holding the control lock
    /// throughout, so a command and the NMI source it arms or disarms are one step for every
    /// other control operation.
    ///
    /// `start`: the previous session's data is discarded. Refused if `pid` has no live context
    /// (checked first), or a session is running (its source is left alone). With `rate=` the
    /// NMI source is armed at that rate, or the session samples on the timer where there is
    /// none. Counting starts now, or with `exec` at the process's next exec.
    /// `stop`: stops the running session (reason request) and the NMI source; never fails.
    pub fn ctl(&self, input: &[u8], kernel: &mut impl KernelOps) -> Result<(), CtlError> {
        let command = parse_command(input).map_err(CtlError::Malformed)?;
        let _ctl = self.lock_ctl(kernel);
        match command {
            Command::Stop => {
                if self.stop_with(StopReason::Request) {
                    self.clock.ended(kernel.now());
                }
                // Also the source of a session an overflow ended (in the sampler).
                kernel.disarm_nmi();
                Ok(())
            }
            Command::Start {
                pid,
                capacity,
                from,
                children,
                rate,
                stacks,
            } => self.start_locked(pid, capacity, from, children, rate, stacks, kernel),
        }
    }

    /// `start`, under the control lock; the arguments are checked by [`parse_command`].
    #[allow(clippy::too_many_arguments)]
    fn start_locked(
        &self,
        pid: usize,
        capacity: usize,
        from: CountFrom,
        children: bool,
        rate: Option<usize>,
        stacks: usize,
        kernel: &mut impl KernelOps,
    ) -> Result<(), CtlError> {
        // Pid 0: every process (`start all`).
        let all = pid == 0;
        if !all && kernel.exec_base(pid).is_none() {
            return Err(CtlError::NoSuchProcess);
        }
        if self.state() == State::Running {
            return Err(CtlError::Busy);
        }
        // On every process, or on a tree of them, the server stacks hold them all: as many as
        // the stack table.
        let server_capacity = match all || children {
            true => SERVER_STACK_CAPACITY.max(stacks),
            false => SERVER_STACK_CAPACITY,
        };
        // Tables the kernel cannot spare the memory for are refused, not tried: its heap
        // grows on demand and cannot fail softly.
        let bytes = capacity
            .saturating_mul(size_of::<Slot>())
            .saturating_add(StackTables::bytes_for(stacks))
            .saturating_add(StackTables::bytes_for(server_capacity))
            .saturating_add(StackTables::bytes_for(WAIT_SITE_CAPACITY))
            .saturating_add(StackTables::bytes_for(SERVED_CAPACITY));
        if bytes > kernel.spare_memory() {
            return Err(CtlError::NoMemory);
        }
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(capacity)
            .map_err(|_| CtlError::NoMemory)?;
        slots.resize_with(capacity, Slot::empty);
        let stack_tables = StackTables::try_new(stacks)?;
        let server_tables = StackTables::try_new(server_capacity)?;
        let site_tables = StackTables::try_new(WAIT_SITE_CAPACITY)?;
        let served_tables = StackTables::try_new(SERVED_CAPACITY)?;
        let new_table = Box::into_raw(slots.into_boxed_slice()).cast::<Slot>();
        // The last session's source, if an overflow ended it; then this session's.
        kernel.disarm_nmi();
        let sampling = match rate.and_then(|hz| kernel.arm_nmi(hz as u64)) {
            Some(hz) => Sampling {
                source: Source::NmiHpet,
                rate: hz,
            },
            None => Sampling {
                source: Source::Timer,
                rate: kernel.timer_rate(),
            },
        };

        self.quiesce();
        let old_table = self.table.swap(new_table, Ordering::AcqRel);
        let old_capacity = self.capacity.swap(capacity, Ordering::AcqRel);
        // SAFETY: the session is off and no sampler is in flight, and we hold the control
        // lock, so nobody else holds the old tables; they are freed here.
        unsafe {
            free_table(old_table, old_capacity);
            drop(self.stacks.replace(stack_tables));
            drop(self.server_stacks.replace(server_tables));
            drop(self.clock.sites().replace(site_tables));
            drop(self.clock.served().replace(served_tables));
        }
        // An attached session's clock begins now; a launched one's at the exec.
        self.clock.reset(match from {
            CountFrom::Now => kernel.now().max(1),
            CountFrom::Exec => 0,
        });

        for counter in [
            &self.exec_base,
            &self.addr_space_switches,
            &self.user_ticks,
            &self.kernel_ticks,
            &self.dropped,
            &self.stacks_dropped,
            &self.server_user_ticks,
            &self.server_kernel_ticks,
            &self.servers_dropped,
            &self.idle_ticks,
            &self.other_ticks,
            &self.children_user_ticks,
            &self.children_kernel_ticks,
        ]
        .into_iter()
        .chain(&self.roots)
        {
            counter.store(0, Ordering::Relaxed);
        }
        // The last session's daemons work for nobody now.
        for label in &self.labels {
            label.key.store(0, Ordering::Relaxed);
        }
        self.tree.clear();
        self.pid.store(pid, Ordering::Relaxed);
        self.all.store(all, Ordering::Relaxed);
        self.children.store(children, Ordering::Relaxed);
        self.source.store(sampling.source as u32, Ordering::Relaxed);
        self.rate.store(sampling.rate, Ordering::Relaxed);
        self.awaiting_exec
            .store(from == CountFrom::Exec, Ordering::Release);
        self.status
            .store(status_word(State::Running, None), Ordering::Release);
        self.on.store(true, Ordering::SeqCst);
        // The process may have exited since the check above, before the exit hook could see
        // the session; else its text's place is known now if it has exec'd (the exec hook
        // updates it). A session on every process has no process to end it.
        match kernel.exec_base(pid) {
            _ if all => {}
            Some(base) => self.exec_base.store(base, Ordering::Relaxed),
            None => {
                if self.stop_with(StopReason::Exit) {
                    self.clock.ended(kernel.now());
                }
                kernel.disarm_nmi();
            }
        }
        Ok(())
    }

    /// Exit hook: a context of `pid` has left the context list. If it was the last one of the
    /// session's process, the session ends (reason exit) and its NMI source stops; if it was
    /// the last of a process the session follows, that process is marked exited.
    pub fn exited(&self, pid: usize, kernel: &mut impl KernelOps) {
        if self.is_on()
            && let Some(followed) = self.followed(pid)
            && kernel.exec_base(pid).is_none()
        {
            followed.flags.fetch_or(FOLLOWED_EXITED, Ordering::Relaxed);
        }
        if !self.is_profiling(pid) || kernel.exec_base(pid).is_some() {
            return;
        }
        let _ctl = self.lock_ctl(kernel);
        if self.pid.load(Ordering::Relaxed) == pid && self.stop_with(StopReason::Exit) {
            self.clock.ended(kernel.now());
            kernel.disarm_nmi();
        }
    }

    /// A context of `pid` switched to a new address space (exec, or a new thread being given
    /// its process's space) whose lowest executable user mapping starts at `exec_base`, and
    /// starts at `entry`. A session waiting for the exec counts from here on; the entry
    /// becomes a root of the stack walk (the first [`MAX_ROOTS`] distinct ones are kept).
    pub fn note_addr_space_switch(&self, pid: usize, exec_base: u64, entry: u64) {
        if self.is_profiling(pid) {
            self.exec_base.store(exec_base, Ordering::Relaxed);
            self.addr_space_switches.fetch_add(1, Ordering::Relaxed);
            // Control path, not the tick: a free slot is claimed with a CAS; a racing twin
            // may take a second slot, which costs nothing but the slot.
            if entry != 0 && !self.roots().contains(&entry) {
                let _ = self.roots.iter().find(|slot| {
                    slot.compare_exchange(0, entry, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                });
            }
            self.awaiting_exec.store(false, Ordering::Release);
        }
    }

    /// Address-space hook, before [`Profiler::note_addr_space_switch`]: a context of `pid` is
    /// given a new address space, by a context of pid `given_by` (a fork, or a new thread),
    /// or (`None`) by itself (an exec). In a session that follows its process's children, a
    /// process of the tree giving a context of another pid its first space has started that
    /// process, which the session follows from here; a followed process's own exec begins its
    /// next image. Control path (the close of a `proc:` handle): no lock, no allocation.
    pub fn note_new_image(&self, pid: usize, given_by: Option<usize>) {
        if !self.is_on() || !self.children.load(Ordering::Relaxed) || pid == 0 {
            return;
        }
        let root = self.pid.load(Ordering::Relaxed);
        match given_by {
            Some(parent) if parent != pid && pid != root => {
                let parent_image = match parent == root {
                    true => Some(owner_key(root, 0)),
                    false => self.followed_owner(parent),
                };
                if let Some(image) = parent_image {
                    self.tree.follow(pid, image);
                }
            }
            None => {
                if let Some(followed) = self.followed(pid) {
                    followed.execs.fetch_add(1, Ordering::Relaxed);
                }
            }
            // A new thread of its own process.
            Some(_) => {}
        }
    }

    /// Attributes hook: the process manager has named `pid`'s context `name` (its program's path
    /// at an exec). A followed process keeps its last name, so one gone before anyone read
    /// its context's is still named. Atomics only.
    pub fn note_name(&self, pid: usize, name: &[u8]) {
        if self.is_on()
            && let Some(followed) = self.followed(pid)
        {
            followed.set_name(name);
        }
    }

    /// The entry points the stack walk stops at (0: none), see [`walk_frame_pointers`].
    #[inline]
    pub fn roots(&self) -> [u64; MAX_ROOTS] {
        core::array::from_fn(|i| self.roots[i].load(Ordering::Relaxed))
    }

    /// Session state and stop reason.
    pub fn status(&self) -> (State, Option<StopReason>) {
        let word = self.status.load(Ordering::Acquire);
        (
            State::from_u32(word & 0xff).unwrap_or(State::Idle),
            StopReason::from_u32(word >> 8),
        )
    }

    pub fn state(&self) -> State {
        self.status().0
    }

    /// The sampling of the running (or last) session.
    pub fn sampling(&self) -> Sampling {
        Sampling {
            source: Source::from_u32(self.source.load(Ordering::Relaxed)).unwrap_or(Source::Timer),
            rate: self.rate.load(Ordering::Relaxed),
        }
    }

    /// `sys:prof_data`: copy out the session, counters and the non-empty slots sorted by
    /// address, under the control lock. After the session has stopped the numbers are final
    /// and `user_ticks + kernel_ticks == sum(counts) + dropped`, and its NMI source is
    /// stopped here if nothing stopped it yet (an overflow ends a session in the sampler,
    /// which cannot touch the hardware); while it runs they are a moment's view. Allocates
    /// four times (the entries, the two stack indexes, one frames array for every stack),
    /// fallibly, however many stacks there are; never call from interrupt context.
    pub fn data(&self, kernel: &mut impl KernelOps) -> Result<FlatSnapshot, CtlError> {
        let _ctl = self.lock_ctl(kernel);
        let (state, stop_reason) = self.status();
        if state != State::Running {
            kernel.disarm_nmi();
            self.quiesce();
        }
        let table = self.table.load(Ordering::Acquire);
        let capacity = self.capacity.load(Ordering::Acquire);
        let slots: &[Slot] = if table.is_null() {
            &[]
        } else {
            // SAFETY: only `start` frees the table and it needs the control lock we hold.
            unsafe { core::slice::from_raw_parts(table, capacity) }
        };
        let used = slots
            .iter()
            .filter(|slot| slot.key.load(Ordering::Acquire) != 0)
            .count();
        let mut entries = Vec::new();
        entries
            .try_reserve_exact(used)
            .map_err(|_| CtlError::NoMemory)?;
        for slot in slots {
            // Slots claimed after the count above wait for the next snapshot.
            if entries.len() == used {
                break;
            }
            let key = slot.key.load(Ordering::Acquire);
            if key != 0 {
                entries.push(Entry {
                    addr: key - 1,
                    count: slot.count.load(Ordering::Relaxed),
                });
            }
        }
        entries.sort_unstable_by_key(|entry| entry.addr);
        // One index a table and one frames array for both: a constant number of allocations,
        // however many stacks (no allocation a stack, nor a free a stack when it is dropped).
        // SAFETY (all): only `start` frees the tables, and it needs the control lock we hold.
        let (stack_count, stack_frames) = unsafe { stack_table_size(&self.stacks) };
        let (server_count, server_frames) = unsafe { stack_table_size(&self.server_stacks) };
        let mut stacks = Vec::new();
        stacks
            .try_reserve_exact(stack_count)
            .map_err(|_| CtlError::NoMemory)?;
        let mut server_stacks = Vec::new();
        server_stacks
            .try_reserve_exact(server_count)
            .map_err(|_| CtlError::NoMemory)?;
        let mut frames = Vec::new();
        frames
            .try_reserve_exact(stack_frames.saturating_add(server_frames))
            .map_err(|_| CtlError::NoMemory)?;
        let followed_count = self.tree.iter().count();
        let mut followed = Vec::new();
        followed
            .try_reserve_exact(followed_count)
            .map_err(|_| CtlError::NoMemory)?;
        // Processes followed after the count above wait for the next snapshot.
        followed.extend(self.tree.iter().take(followed_count).map(Followed::record));
        unsafe {
            read_stack_table(&self.stacks, stack_count, &mut stacks, &mut frames);
            read_stack_table(
                &self.server_stacks,
                server_count,
                &mut server_stacks,
                &mut frames,
            );
        }
        let frames_of = |stack: &StackRef| {
            frames
                .get(stack.start..stack.start + stack.depth)
                .unwrap_or(&[])
        };
        // In place: no allocation.
        stacks
            .sort_unstable_by(|a, b| (frames_of(a), a.truncated).cmp(&(frames_of(b), b.truncated)));
        server_stacks.sort_unstable_by(|a, b| {
            (a.owner, frames_of(a), a.truncated).cmp(&(b.owner, frames_of(b), b.truncated))
        });
        let sampling = self.sampling();
        Ok(FlatSnapshot {
            state,
            stop_reason,
            source: sampling.source,
            rate: sampling.rate,
            pid: self.pid.load(Ordering::Relaxed) as u64,
            exec_base: self.exec_base.load(Ordering::Relaxed),
            addr_space_switches: self.addr_space_switches.load(Ordering::Relaxed),
            user_ticks: self.user_ticks.load(Ordering::Relaxed),
            kernel_ticks: self.kernel_ticks.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            capacity: capacity as u64,
            entries,
            stacks_dropped: self.stacks_dropped.load(Ordering::Relaxed),
            stack_capacity: self.stacks.capacity() as u64,
            stacks,
            idle_ticks: self.idle_ticks.load(Ordering::Relaxed),
            other_ticks: self.other_ticks.load(Ordering::Relaxed),
            server_user_ticks: self.server_user_ticks.load(Ordering::Relaxed),
            server_kernel_ticks: self.server_kernel_ticks.load(Ordering::Relaxed),
            servers_dropped: self.servers_dropped.load(Ordering::Relaxed),
            server_stack_capacity: self.server_stacks.capacity() as u64,
            server_stacks,
            frames,
            children_user_ticks: self.children_user_ticks.load(Ordering::Relaxed),
            children_kernel_ticks: self.children_kernel_ticks.load(Ordering::Relaxed),
            followed_missed: self.tree.missed.load(Ordering::Relaxed),
            followed,
        })
    }

    /// Running -> stopped with `reason`; the first stop wins.
    fn stop_with(&self, reason: StopReason) -> bool {
        let stopped = self
            .status
            .compare_exchange(
                status_word(State::Running, None),
                status_word(State::Stopped, Some(reason)),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if stopped {
            self.on.store(false, Ordering::SeqCst);
        }
        stopped
    }

    /// Wait for samplers that saw the session on to leave. They never block, so this is
    /// short; called with `on` clear (SeqCst pairs with `sample`).
    fn quiesce(&self) {
        while self.in_flight.load(Ordering::SeqCst) != 0 {
            core::hint::spin_loop();
        }
    }

    /// Take the control lock, waiting for it (control path only, never in an interrupt: the
    /// holder runs with interrupts masked, as the kernel does outside user mode, and never
    /// blocks, so the wait is short).
    pub(super) fn lock_ctl(&self, kernel: &impl KernelOps) -> CtlGuard<'_> {
        while self
            .ctl_busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            kernel.wait();
            core::hint::spin_loop();
        }
        CtlGuard(&self.ctl_busy)
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        let table = *self.table.get_mut();
        let capacity = *self.capacity.get_mut();
        // SAFETY: `&mut self`: no sampler or control operation can be running.
        unsafe {
            free_table(table, capacity);
            drop(self.stacks.replace(StackTables::none()));
            drop(self.server_stacks.replace(StackTables::none()));
            drop(self.clock.sites().replace(StackTables::none()));
            drop(self.clock.served().replace(StackTables::none()));
        }
    }
}

pub(super) struct CtlGuard<'a>(&'a AtomicBool);

impl Drop for CtlGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A sample's walked stack, or without a walk its PC alone (in `alone`), cut there.
fn stack_or_pc<'a>(stack: Option<&'a StackBuf>, pc: u64, alone: &'a mut StackBuf) -> &'a StackBuf {
    match stack {
        Some(stack) => stack,
        None => {
            alone.push(pc);
            alone.truncated = true;
            alone
        }
    }
}

fn status_word(state: State, reason: Option<StopReason>) -> u32 {
    state as u32 | StopReason::code(reason) << 8
}

/// # Safety
/// `table` is null or came from `start` with `capacity` slots, and nobody else uses it.
unsafe fn free_table<T>(table: *mut T, capacity: usize) {
    if !table.is_null() {
        drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(table, capacity)) });
    }
}
