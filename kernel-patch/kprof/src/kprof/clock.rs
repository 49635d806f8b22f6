//! The session's clock: every context of the profiled process on a CPU or off it, and why,
//! from the scheduler's own switches, and `sys:prof_clock`, its text.
//!
//! The glue calls [`Profiler::note_switch_out`] and [`Profiler::note_switch_in`] in
//! `context::switch`, where the next context has been chosen, with the switch's monotonic
//! time: one context leaves the CPU (preempted: still runnable; blocked, with the reason the
//! kernel gave its block; exited), the other gets it. A block's user stack, walked by the glue
//! from the context's own kernel stack before it leaves (the walk of a kernel sample, joined
//! to the user's frames at the system call), and its reason name a wait site in a table of
//! its own; at the switch back in, the time off the CPU is charged to the thread and the site.
//! A scheme call also names the scheme it waits for ([`Profiler::note_call`], just before the
//! caller blocks), and the daemons seen taking the session's requests name each scheme's
//! daemon ([`Profiler::note_scheme_daemon`]). A daemon's sample while it serves the request
//! a blocked thread waits for (directly, or through the daemons it asked) is also counted
//! under that thread's wait site ([`Profiler::note_served`]): the daemon's work stitched
//! under the program's call that asked for it. Lock-free and allocation-free on the switch path, like the samplers, and
//! nothing at all for contexts of other processes or without a session.
//!
//! One context's switches are ordered by the scheduler (a context leaves a CPU before any
//! CPU can take it again), so its record is written by one CPU at a time; a reader meanwhile
//! sees a moment's view. Accounts close: a thread's on-CPU, preempted and blocked times add up
//! to its time from its begin (exec, its creation, or the session's start) to its end (exit,
//! or the session's end), open periods charged up to the moment read.

use alloc::{string::String, vec::Vec};
use core::{
    fmt::Write,
    sync::atomic::{AtomicU64, Ordering},
};

use super::{
    request_key, stack_table_size, visit_stack_table, CtlError, KernelOps, PackedStack, Profiler,
    StackBuf, StackRef, StackStore, State, KERNEL_SPACE_START,
};

/// Contexts of the profiled process the clock follows; a switch of a further one counts in
/// `threads_dropped`.
pub const MAX_THREADS: usize = 64;

/// Distinct wait sites (thread, reason, scheme, user stack) a session's clock keeps; a block
/// at a further one is timed for its thread but counts in `sites_dropped`.
pub const WAIT_SITE_CAPACITY: usize = 4096;

/// Schemes whose daemon the clock names (the first ones to take the session's requests).
pub const MAX_SCHEMES: usize = 64;

/// Distinct (wait site, daemon, daemon stack) triples of the daemons' samples under the
/// program's waits; a sample at a further one counts in `served_dropped` (it is still a
/// server sample of `sys:prof_data`).
pub const SERVED_CAPACITY: usize = 2048;

/// Why a context was blocked, from the reason the kernel gave its block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    /// A reason not known here (its name is the kernel's).
    Other = 0,
    /// A call to a scheme daemon (file, pipe of a daemon, console, network, procmgr's wait).
    SchemeCall = 1,
    Futex = 2,
    Sleep = 3,
    PipeRead = 4,
    PipeWrite = 5,
    /// Reading an event queue (an `epoll`-like wait).
    Event = 6,
    /// Hard-blocked: stopped, or waiting for a page of a file mapping.
    Stopped = 7,
}

/// The names `sys:prof_clock` gives each [`Reason`], by its number.
pub const REASON_NAMES: [&str; 8] = [
    "other",
    "scheme-call",
    "futex",
    "sleep",
    "pipe-read",
    "pipe-write",
    "event",
    "stopped",
];

impl Reason {
    /// The reason of a block the kernel gave `status_reason` (`Context::block`'s argument).
    pub fn of(status_reason: &str) -> Reason {
        let starts = |prefix: &str| status_reason.starts_with(prefix);
        if starts("UserInner::call") {
            Reason::SchemeCall
        } else if starts("futex") {
            Reason::Futex
        } else if starts("nanosleep") {
            Reason::Sleep
        } else if starts("PipeRead::") {
            Reason::PipeRead
        } else if starts("PipeWrite::") {
            Reason::PipeWrite
        } else if starts("EventQueue::") {
            Reason::Event
        } else {
            Reason::Other
        }
    }

    pub fn from_u8(raw: u8) -> Reason {
        match raw {
            1 => Reason::SchemeCall,
            2 => Reason::Futex,
            3 => Reason::Sleep,
            4 => Reason::PipeRead,
            5 => Reason::PipeWrite,
            6 => Reason::Event,
            7 => Reason::Stopped,
            _ => Reason::Other,
        }
    }

    pub fn name(self) -> &'static str {
        REASON_NAMES[self as usize]
    }
}

/// How a context leaves the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaving {
    /// Still runnable: another context takes the CPU.
    Preempted,
    Blocked(Reason),
    /// Dead: the thread ends here.
    Exited,
}

/// A thread record's state word.
const UNSEEN: u64 = 0;
const ON_CPU: u64 = 1;
const PREEMPTED: u64 = 2;
const BLOCKED: u64 = 3;
const ENDED: u64 = 4;

/// One context of the profiled process: `tid + 1` (0: a free record), its state since
/// `since`, its begin (and end, when ended), the site of the block it is in (slot index + 1,
/// 0: none), the scheme call it is making (`scheme + 1`, 0: none), the request it waits for
/// ([`request_key`], 0: none), and its totals, ns.
pub struct ThreadClock {
    tid: AtomicU64,
    state: AtomicU64,
    since: AtomicU64,
    begin: AtomicU64,
    site: AtomicU64,
    call: AtomicU64,
    waiting_on: AtomicU64,
    on_cpu: AtomicU64,
    preempted: AtomicU64,
    blocked: AtomicU64,
    blocks: AtomicU64,
}

impl ThreadClock {
    const fn free() -> ThreadClock {
        ThreadClock {
            tid: AtomicU64::new(0),
            state: AtomicU64::new(UNSEEN),
            since: AtomicU64::new(0),
            begin: AtomicU64::new(0),
            site: AtomicU64::new(0),
            call: AtomicU64::new(0),
            waiting_on: AtomicU64::new(0),
            on_cpu: AtomicU64::new(0),
            preempted: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            blocks: AtomicU64::new(0),
        }
    }

    fn reset(&self) {
        for word in [
            &self.tid,
            &self.state,
            &self.since,
            &self.begin,
            &self.site,
            &self.call,
            &self.waiting_on,
            &self.on_cpu,
            &self.preempted,
            &self.blocked,
            &self.blocks,
        ] {
            word.store(0, Ordering::Relaxed);
        }
    }

    fn enter(&self, state: u64, now: u64) {
        self.since.store(now, Ordering::Relaxed);
        self.state.store(state, Ordering::Release);
    }
}

/// The clock's part of the session: its threads, its wait sites, its begin and end.
pub struct Clock {
    threads: [ThreadClock; MAX_THREADS],
    /// Wait sites: owner [`site_owner`], count = blocks, weight = their ns.
    sites: StackStore,
    /// When the clock began (the exec, or `start` for an attach; 0: not yet) and ended.
    begin: AtomicU64,
    end: AtomicU64,
    threads_dropped: AtomicU64,
    sites_dropped: AtomicU64,
    /// Each scheme's daemon as seen taking the session's requests: `(scheme + 1) << 32 |
    /// daemon pid` (0: free).
    schemes: [AtomicU64; MAX_SCHEMES],
    /// Daemon samples under the program's waits: owner `site << 32 | daemon pid` (`site` a
    /// wait site's slot index + 1), count = samples.
    served: StackStore,
    served_dropped: AtomicU64,
}

impl Clock {
    pub(super) const fn new() -> Clock {
        Clock {
            threads: [const { ThreadClock::free() }; MAX_THREADS],
            sites: StackStore::new(),
            begin: AtomicU64::new(0),
            end: AtomicU64::new(0),
            threads_dropped: AtomicU64::new(0),
            sites_dropped: AtomicU64::new(0),
            schemes: [const { AtomicU64::new(0) }; MAX_SCHEMES],
            served: StackStore::new(),
            served_dropped: AtomicU64::new(0),
        }
    }

    pub(super) fn sites(&self) -> &StackStore {
        &self.sites
    }

    pub(super) fn served(&self) -> &StackStore {
        &self.served
    }

    /// Forget the last session's clock, which began at `begin` (0: at the exec); the caller
    /// holds the control lock with the session off and quiesced.
    pub(super) fn reset(&self, begin: u64) {
        for thread in &self.threads {
            thread.reset();
        }
        self.begin.store(begin, Ordering::Relaxed);
        for word in [
            &self.end,
            &self.threads_dropped,
            &self.sites_dropped,
            &self.served_dropped,
        ]
        .into_iter()
        .chain(&self.schemes)
        {
            word.store(0, Ordering::Relaxed);
        }
    }

    /// The session ended at `now` (the first end sticks).
    pub(super) fn ended(&self, now: u64) {
        let _ = self
            .end
            .compare_exchange(0, now.max(1), Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The record of `tid`, claimed if it has none (`None`: every record is taken).
    fn thread(&self, tid: usize) -> Option<&ThreadClock> {
        let key = tid as u64 + 1;
        if let Some(found) = self
            .threads
            .iter()
            .find(|t| t.tid.load(Ordering::Acquire) == key)
        {
            return Some(found);
        }
        let claimed = self.threads.iter().find(|t| {
            t.tid
                .compare_exchange(0, key, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        });
        if claimed.is_none() {
            self.threads_dropped.fetch_add(1, Ordering::Relaxed);
        }
        claimed
    }
}

/// The owner word of a wait site: thread, scheme (a scheme call's; kernel scheme ids are
/// small) and reason.
pub fn site_owner(tid: usize, scheme: u64, reason: Reason) -> u64 {
    (tid as u64) << 32 | (scheme & 0xff_ffff) << 8 | reason as u64
}

/// The parts of a wait site's owner word: (tid, scheme or 0, reason).
pub fn site_parts(owner: u64) -> (u64, u64, Reason) {
    (
        owner >> 32,
        (owner >> 8) & 0xff_ffff,
        Reason::from_u8(owner as u8),
    )
}

/// The clock's hooks: the switch path and the scheme-call hook.
impl Profiler {
    /// Would a switch of a context of `pid` be counted now? The glue walks the stack of a
    /// blocking context only then.
    #[inline]
    pub fn clocks(&self, pid: usize) -> bool {
        self.is_profiling(pid) && self.counting()
    }

    /// Scheme hook: context `tid` of `pid` is about to block in a call to scheme `scheme`,
    /// its request `tag`: the block it is entering waits for that scheme's daemon, working
    /// on that request.
    pub fn note_call(&self, pid: usize, tid: usize, scheme: u64, tag: u64) {
        if self.clocks(pid)
            && let Some(thread) = self.clock.thread(tid)
        {
            thread.call.store(scheme + 1, Ordering::Relaxed);
            thread
                .waiting_on
                .store(request_key(scheme, tag), Ordering::Relaxed);
        }
    }

    /// Sampling path, for a server sample of daemon `daemon` serving the program's request
    /// `root` ([`request_key`]; 0: not known) with `stack`: counted under the wait site of the
    /// thread blocked on that request, if one is. In flight with the session on (the caller
    /// is [`Profiler::sample_from`]).
    pub(super) fn note_served(&self, root: u64, daemon: usize, stack: &StackBuf) {
        if root == 0 || stack.len == 0 {
            return;
        }
        let Some(thread) = self.clock.threads.iter().find(|t| {
            t.waiting_on.load(Ordering::Relaxed) == root
                && t.state.load(Ordering::Acquire) == BLOCKED
        }) else {
            return;
        };
        let site = thread.site.load(Ordering::Relaxed);
        if site == 0 {
            return;
        }
        let packed = PackedStack::new(site << 32 | (daemon as u64 & 0xffff_ffff), stack);
        // SAFETY: in flight with the session on: the tables stay (see `quiesce`).
        match unsafe { self.clock.served.slot_of(&packed) } {
            Some(slot) => {
                slot.count.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.clock.served_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Daemon `daemon` took a request of the session (or of a daemon working for it) on
    /// `scheme`: it is that scheme's daemon (the first [`MAX_SCHEMES`] schemes are kept; the
    /// latest daemon of a scheme wins).
    pub(super) fn note_scheme_daemon(&self, scheme: u64, daemon: usize) {
        let word = (scheme + 1) << 32 | (daemon as u64 & 0xffff_ffff);
        for slot in &self.clock.schemes {
            let current = slot.load(Ordering::Relaxed);
            if current >> 32 == scheme + 1 {
                slot.store(word, Ordering::Relaxed);
                return;
            }
            if current == 0
                && slot
                    .compare_exchange(0, word, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
        }
    }

    /// A context `tid` of `pid` begins at `now`: it is the process's context at its exec
    /// (running, or stopped by the exec), which begins the clock; or a new thread being given
    /// the process's address space, not started yet. Called before
    /// [`Profiler::note_addr_space_switch`].
    pub fn note_context_begins(&self, pid: usize, tid: usize, running: bool, now: u64) {
        if !self.is_profiling(pid) {
            return;
        }
        let exec = !self.counting();
        if exec {
            let _ = self.clock.begin.compare_exchange(
                0,
                now.max(1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        if let Some(thread) = self.clock.thread(tid)
            && (exec || thread.state.load(Ordering::Acquire) == UNSEEN)
        {
            thread.begin.store(now, Ordering::Relaxed);
            thread.enter(if running { ON_CPU } else { PREEMPTED }, now);
        }
    }

    /// Scheduler hook: context `tid` of `pid` leaves the CPU at `now`, as `leaving` says,
    /// blocked with its user `stack` where the glue walked it ([`Profiler::clocks`]).
    /// Interrupts off, context locks held: lock-free and allocation-free.
    pub fn note_switch_out(
        &self,
        pid: usize,
        tid: usize,
        now: u64,
        leaving: Leaving,
        stack: Option<&StackBuf>,
    ) {
        self.with_thread(pid, tid, |thread| {
            let now = self.charge(thread, now, ON_CPU);
            let call = thread.call.swap(0, Ordering::Relaxed);
            match leaving {
                Leaving::Preempted => thread.enter(PREEMPTED, now),
                Leaving::Exited => thread.enter(ENDED, now),
                Leaving::Blocked(reason) => {
                    let scheme = match reason {
                        Reason::SchemeCall => call.saturating_sub(1),
                        _ => 0,
                    };
                    let site = stack.and_then(|stack| self.site_of(tid, scheme, reason, stack));
                    match site {
                        Some(index) => thread.site.store(index as u64 + 1, Ordering::Relaxed),
                        None => {
                            thread.site.store(0, Ordering::Relaxed);
                            self.clock.sites_dropped.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    thread.blocks.fetch_add(1, Ordering::Relaxed);
                    thread.enter(BLOCKED, now);
                }
            }
        });
    }

    /// Scheduler hook: context `tid` of `pid` gets the CPU at `now`.
    pub fn note_switch_in(&self, pid: usize, tid: usize, now: u64) {
        self.with_thread(pid, tid, |thread| {
            let now = self.charge(thread, now, BLOCKED);
            thread.waiting_on.store(0, Ordering::Relaxed);
            thread.enter(ON_CPU, now);
        });
    }

    /// Run `f` on the record of context `tid` if it is the counting session's process's, in
    /// flight as a sampler is (the site table is not replaced meanwhile, see `quiesce`).
    #[inline]
    fn with_thread(&self, pid: usize, tid: usize, f: impl FnOnce(&ThreadClock)) {
        if pid == 0 || !self.is_on() {
            return;
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if self.on.load(Ordering::SeqCst)
            && self.counting()
            && pid == self.pid.load(Ordering::Relaxed)
            && let Some(thread) = self.clock.thread(tid)
        {
            f(thread);
        }
        self.in_flight.fetch_sub(1, Ordering::Release);
    }

    /// Charge `thread`'s state since its last switch up to `now`. A thread first seen here
    /// (not announced by [`Profiler::note_context_begins`]: it was there when an attached
    /// session began) begins with the clock in state `unseen_as`: on a CPU if it is leaving
    /// one, else off it, blocked for a reason not seen. The time the thread's next state
    /// starts: `now`, or its last switch's if the clock read earlier than that (a kernel's
    /// monotonic time can step back by a little, as a timer interrupt is late; the account
    /// would count that twice).
    fn charge(&self, thread: &ThreadClock, now: u64, unseen_as: u64) -> u64 {
        let mut state = thread.state.load(Ordering::Acquire);
        let mut since = thread.since.load(Ordering::Relaxed);
        if state == UNSEEN {
            since = self.clock.begin.load(Ordering::Relaxed).min(now);
            thread.begin.store(since, Ordering::Relaxed);
            state = unseen_as;
        }
        let now = now.max(since);
        let elapsed = now - since;
        match state {
            ON_CPU => {
                thread.on_cpu.fetch_add(elapsed, Ordering::Relaxed);
            }
            PREEMPTED => {
                thread.preempted.fetch_add(elapsed, Ordering::Relaxed);
            }
            BLOCKED => {
                thread.blocked.fetch_add(elapsed, Ordering::Relaxed);
                let site = thread.site.swap(0, Ordering::Relaxed);
                // SAFETY: in flight with the session on: the tables stay (see `quiesce`).
                if site != 0
                    && let Some(slot) = unsafe { self.clock.sites.slot_at(site as usize - 1) }
                {
                    slot.weight.fetch_add(elapsed, Ordering::Relaxed);
                }
            }
            _ => {}
        }
        now
    }

    /// The slot index of the wait site of a block of `tid` (its user frames only: the kernel's
    /// path to the switch says no more than the reason), counting the block there.
    fn site_of(&self, tid: usize, scheme: u64, reason: Reason, stack: &StackBuf) -> Option<usize> {
        let mut user = StackBuf::new();
        for &frame in stack.frames() {
            if frame < KERNEL_SPACE_START {
                user.push(frame);
            }
        }
        user.truncated = stack.truncated;
        if user.len == 0 {
            return None;
        }
        let packed = PackedStack::new(site_owner(tid, scheme, reason), &user);
        // SAFETY: in flight with the session on: the tables stay (see `quiesce`).
        let index = unsafe { self.clock.sites.index_of(&packed) }?;
        if let Some(slot) = unsafe { self.clock.sites.slot_at(index) } {
            slot.count.fetch_add(1, Ordering::Relaxed);
        }
        Some(index)
    }
}

/// One thread in a [`ClockSnapshot`], ns, settled to the snapshot's moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTimes {
    pub tid: u64,
    pub begin: u64,
    /// 0: still alive.
    pub end: u64,
    pub on_cpu: u64,
    pub preempted: u64,
    pub blocked: u64,
    pub blocks: u64,
}

/// One wait site in a [`ClockSnapshot`]: its thread, reason, scheme (scheme calls), blocks
/// and their ns, and its user stack (frames in the snapshot's array).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteTimes {
    /// Its number in the table (what [`ServedTimes::site`] names).
    pub id: u64,
    pub tid: u64,
    pub reason: Reason,
    pub scheme: u64,
    pub count: u64,
    pub ns: u64,
    pub stack: StackRef,
}

/// A daemon's samples at one of its stacks while it served a wait of the program: the wait's
/// site ([`SiteTimes::id`]), the daemon, and the stack (its count the samples).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServedTimes {
    pub site: u64,
    pub daemon: u64,
    pub stack: StackRef,
}

/// The clock as `sys:prof_clock` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockSnapshot {
    pub state: State,
    pub pid: u64,
    pub begin: u64,
    pub end: u64,
    /// The moment the open periods are charged to: `end`, or the read's time while running.
    pub at: u64,
    pub threads: Vec<ThreadTimes>,
    pub threads_dropped: u64,
    pub sites: Vec<SiteTimes>,
    pub sites_dropped: u64,
    /// Each scheme's daemon: (scheme, daemon pid).
    pub schemes: Vec<(u64, u64)>,
    pub served: Vec<ServedTimes>,
    pub served_dropped: u64,
    pub frames: Vec<u64>,
}

impl Profiler {
    /// `sys:prof_clock`: the clock of the running or last session, under the control lock,
    /// open periods charged up to the session's end (or now, while it runs). Three
    /// allocations, fallible.
    pub fn clock(&self, kernel: &mut impl KernelOps) -> Result<ClockSnapshot, CtlError> {
        let _ctl = self.lock_ctl(kernel);
        let (state, _) = self.status();
        if state == State::Stopped {
            // An overflow ends a session in the sampler, which has no clock: it ended by now.
            self.clock.ended(kernel.now());
        }
        let end = self.clock.end.load(Ordering::Relaxed);
        let at = if state == State::Running {
            kernel.now()
        } else {
            end
        };
        let count = self
            .clock
            .threads
            .iter()
            .filter(|t| t.tid.load(Ordering::Acquire) != 0)
            .count();
        let mut threads = Vec::new();
        threads
            .try_reserve_exact(count)
            .map_err(|_| CtlError::NoMemory)?;
        // SAFETY (both): only `start` replaces the tables, and it needs the control lock.
        let (site_count, site_frames) = unsafe { stack_table_size(&self.clock.sites) };
        let (served_count, served_frames) = unsafe { stack_table_size(&self.clock.served) };
        let mut served = Vec::new();
        served
            .try_reserve_exact(served_count)
            .map_err(|_| CtlError::NoMemory)?;
        let mut sites = Vec::new();
        sites
            .try_reserve_exact(site_count)
            .map_err(|_| CtlError::NoMemory)?;
        let mut frames = Vec::new();
        frames
            .try_reserve_exact(site_frames.saturating_add(served_frames))
            .map_err(|_| CtlError::NoMemory)?;
        let mut schemes = Vec::new();
        schemes
            .try_reserve_exact(MAX_SCHEMES)
            .map_err(|_| CtlError::NoMemory)?;
        for slot in &self.clock.schemes {
            let word = slot.load(Ordering::Relaxed);
            if word != 0 {
                schemes.push(((word >> 32) - 1, word & 0xffff_ffff));
            }
        }
        schemes.sort_unstable();
        // Open blocks, charged to their sites up to `at` in the copy only.
        let mut open = [(0u64, 0u64); MAX_THREADS];
        for (i, t) in self.clock.threads.iter().enumerate() {
            let tid = t.tid.load(Ordering::Acquire);
            if tid == 0 || threads.len() == count {
                continue;
            }
            let state = t.state.load(Ordering::Acquire);
            let since = t.since.load(Ordering::Relaxed);
            let open_for = at.saturating_sub(since);
            let mut times = ThreadTimes {
                tid: tid - 1,
                begin: t.begin.load(Ordering::Relaxed),
                end: 0,
                on_cpu: t.on_cpu.load(Ordering::Relaxed),
                preempted: t.preempted.load(Ordering::Relaxed),
                blocked: t.blocked.load(Ordering::Relaxed),
                blocks: t.blocks.load(Ordering::Relaxed),
            };
            match state {
                ON_CPU => times.on_cpu += open_for,
                PREEMPTED => times.preempted += open_for,
                BLOCKED => {
                    times.blocked += open_for;
                    open[i] = (t.site.load(Ordering::Relaxed), open_for);
                }
                ENDED => times.end = since,
                _ => {}
            }
            if state != ENDED && end != 0 {
                times.end = end;
            }
            threads.push(times);
        }
        threads.sort_unstable_by_key(|t| t.tid);
        // SAFETY: as above.
        unsafe {
            visit_stack_table(
                &self.clock.sites,
                site_count,
                &mut frames,
                |index, slot, stack| {
                    let (tid, scheme, reason) = site_parts(stack.owner);
                    let still_open: u64 = open
                        .iter()
                        .filter(|(site, _)| *site == index as u64 + 1)
                        .map(|(_, ns)| ns)
                        .sum();
                    sites.push(SiteTimes {
                        id: index as u64,
                        tid,
                        reason,
                        scheme,
                        count: slot.count.load(Ordering::Relaxed),
                        ns: slot.weight.load(Ordering::Relaxed) + still_open,
                        stack,
                    });
                },
            );
            visit_stack_table(
                &self.clock.served,
                served_count,
                &mut frames,
                |_, slot, stack| {
                    served.push(ServedTimes {
                        site: (stack.owner >> 32).saturating_sub(1),
                        daemon: stack.owner & 0xffff_ffff,
                        stack: StackRef {
                            count: slot.count.load(Ordering::Relaxed),
                            ..stack
                        },
                    });
                },
            );
        };
        Ok(ClockSnapshot {
            state,
            pid: self.pid.load(Ordering::Relaxed) as u64,
            begin: self.clock.begin.load(Ordering::Relaxed),
            end,
            at,
            threads,
            threads_dropped: self.clock.threads_dropped.load(Ordering::Relaxed),
            sites,
            sites_dropped: self.clock.sites_dropped.load(Ordering::Relaxed),
            schemes,
            served,
            served_dropped: self.clock.served_dropped.load(Ordering::Relaxed),
            frames,
        })
    }
}

impl ClockSnapshot {
    /// The frames of a site, innermost first.
    pub fn frames_of(&self, site: &SiteTimes) -> &[u64] {
        self.stack_frames(&site.stack)
    }

    /// The frames of a stack of the snapshot, innermost first.
    pub fn stack_frames(&self, stack: &StackRef) -> &[u64] {
        self.frames
            .get(stack.start..stack.start.saturating_add(stack.depth))
            .unwrap_or(&[])
    }

    /// `sys:prof_clock`'s text, in one allocation made fallibly (its exact bound):
    ///
    /// ```text
    /// clock version=1 state=running pid=P begin=NS end=NS at=NS threads_dropped=N sites_dropped=N served_dropped=N
    /// thread tid=T begin=NS end=NS on_cpu=NS preempted=NS blocked=NS blocks=N
    /// site id=I tid=T reason=NAME scheme=S count=N ns=NS truncated=0 frames=HEX,HEX
    /// scheme id=S daemon=PID
    /// served site=I daemon=PID count=N truncated=0 frames=HEX,HEX
    /// ```
    ///
    /// Times are ns of the kernel's monotonic clock; `end=0`: not ended; a thread's on_cpu,
    /// preempted and blocked add up to its `end` (or `at`) minus its `begin`; a site's frames
    /// are its user stack, innermost first (hex, no `0x`); `scheme=0` for other reasons; a
    /// scheme's daemon is the process seen taking the session's requests on it; a `served`
    /// line counts a daemon's samples at one stack (its kernel frames first where it was in
    /// the kernel) while it served a wait at site `I`.
    pub fn to_text(&self) -> Result<Vec<u8>, CtlError> {
        // Words of at most 20 digits, frames of at most 16 hex digits and a comma.
        const HEADER: usize = 200;
        const THREAD: usize = 40 + 7 * 30;
        const SITE: usize = 60 + 5 * 30 + 12;
        const SCHEME: usize = 20 + 2 * 30;
        const SERVED: usize = 60 + 4 * 30;
        let bound = HEADER
            + self.threads.len() * THREAD
            + self.sites.len() * SITE
            + self.frames.len() * 17
            + self.schemes.len() * SCHEME
            + self.served.len() * SERVED;
        let mut text = String::new();
        text.try_reserve_exact(bound)
            .map_err(|_| CtlError::NoMemory)?;
        let state = match self.state {
            State::Idle => "idle",
            State::Running => "running",
            State::Stopped => "stopped",
        };
        // Writing into reserved room never allocates; `String` cannot fail to write.
        let _ = writeln!(
            text,
            "clock version=1 state={state} pid={} begin={} end={} at={} threads_dropped={} sites_dropped={} served_dropped={}",
            self.pid,
            self.begin,
            self.end,
            self.at,
            self.threads_dropped,
            self.sites_dropped,
            self.served_dropped
        );
        for t in &self.threads {
            let _ = writeln!(
                text,
                "thread tid={} begin={} end={} on_cpu={} preempted={} blocked={} blocks={}",
                t.tid, t.begin, t.end, t.on_cpu, t.preempted, t.blocked, t.blocks
            );
        }
        for site in &self.sites {
            let _ = write!(
                text,
                "site id={} tid={} reason={} scheme={} count={} ns={} truncated={} frames=",
                site.id,
                site.tid,
                site.reason.name(),
                site.scheme,
                site.count,
                site.ns,
                u8::from(site.stack.truncated)
            );
            write_frames(&mut text, self.frames_of(site));
        }
        for (scheme, daemon) in &self.schemes {
            let _ = writeln!(text, "scheme id={scheme} daemon={daemon}");
        }
        for served in &self.served {
            let _ = write!(
                text,
                "served site={} daemon={} count={} truncated={} frames=",
                served.site,
                served.daemon,
                served.stack.count,
                u8::from(served.stack.truncated)
            );
            write_frames(&mut text, self.stack_frames(&served.stack));
        }
        Ok(text.into_bytes())
    }
}

/// Frames in hex, comma-separated, and the line's end.
fn write_frames(text: &mut String, frames: &[u64]) {
    for (i, frame) in frames.iter().enumerate() {
        let _ = write!(text, "{}{frame:x}", if i == 0 { "" } else { "," });
    }
    text.push('\n');
}
