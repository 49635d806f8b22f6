//! The program's time from a kernel's typed records, beyond its own samples:
//!
//! * its threads by the clock: each switch record of a thread of the program becomes the
//!   ledger's switch (out, preempted or not; in), and the sample a thread wrote as it blocked
//!   (source `Block`: its user stack where it called) names the wait its next switch out
//!   begins; a thread's first naming is its start, its switch out with `Exit` its end;
//! * the daemons' work for it: a daemon's thread that took a request of the program's (or of a
//!   daemon's thread working for it) works for it until it answers, or goes back to waiting for
//!   requests; its samples meanwhile are the daemons' ticks for the program, and, where the
//!   program's thread is blocked on that request, stitched under that wait. The caller's
//!   thread of a request is the one whose switch into the call has the request's scheme and
//!   tag;
//! * its requests to schemes, each timed from its daemon's taking it to its answer, by scheme
//!   and daemon (the program's, and with `children` those of the processes it follows); and
//!   where a daemon, serving one, made a request of its own (ramfs asking the disk's daemon),
//!   that one as a link of the chain, by the request served and the one made;
//! * its children, where the session follows them: a process whose first context another
//!   process of the tree gave its address space (a fork) is followed, its samples its own, its
//!   exec and its name as procmgr gives them, its end when its last thread exits.
//!
//! Record times are the kernel's TSC; the ledger's are ns of the monotonic clock, by a rate
//! measured when the session began.

use std::collections::{BTreeMap, BTreeSet};

use prof_core::ledger::Switch;
use prof_core::requests::{DaemonSplit, Request, RequestKey, Served, MAX_MADE};
use prof_core::sampler::{ChildBatch, Probe, SampleBatch, WaitSite};
use prof_core::sample::{CallStack, Sample as Taken};
use prof_events::layout::{Reason, Source};
use prof_events::{Event, Ids, Sample};

/// A scheme call: the scheme's id and the request's tag.
type Call = (u64, u64);

fn call_of(detail: u64) -> Call {
    (detail & 0xffff_ffff, detail >> 32)
}

/// A record's sample as a call stack: the sampled address, the kernel's frames, then the user
/// frames (which a kernel of typed records walks right), cut short only where the kernel's
/// buffer (32 words) was full. Of upstream's record (no pid), the address and for a kernel
/// sample the kernel's frames and the system call's user address: the user frames of 663e6641
/// are not the program's.
pub fn stack_of(r: &Sample) -> CallStack {
    let mut frames = vec![r.ip];
    frames.extend(&r.kernel_frames);
    if r.who.pid.is_some() {
        frames.extend(&r.user_frames);
        return CallStack { truncated: frames.len() + 3 >= 32, frames };
    }
    frames.extend(r.user_frames.first().filter(|_| r.kernel));
    CallStack { frames, truncated: true }
}

/// A record's sample with its thread and stack, and its time where the TSC can be read as ns
/// of the monotonic clock (`tsc`). Redox names kernel samples (the kernel's ELF): they are
/// samples, not just ticks, except a followed child's (`named`: false), which count as its
/// kernel time.
pub fn taken(r: &Sample, tsc: Option<&TscClock>, named: bool) -> Taken {
    let (time, tid, stack) = (tsc.map(|t| t.ns(r.time)), r.who.thread, Some(stack_of(r)));
    match r.kernel {
        true => Taken::kernel(time, tid, r.ip, named, stack),
        false => Taken::user(time, tid, r.ip, stack),
    }
}

/// The TSC against the monotonic clock: readings of both, apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TscClock {
    pub tsc: u64,
    pub ns: u64,
    /// Nanoseconds a TSC tick.
    pub ns_per_tick: f64,
}

impl TscClock {
    /// From readings `(tsc, ns)` taken at two times; `None` where they cannot give a rate.
    pub fn from_readings(a: (u64, u64), b: (u64, u64)) -> Option<TscClock> {
        let (ticks, ns) = (b.0.checked_sub(a.0)?, b.1.checked_sub(a.1)?);
        (ticks > 0 && ns > 0).then(|| TscClock { tsc: a.0, ns: a.1, ns_per_tick: ns as f64 / ticks as f64 })
    }

    /// From readings `(tsc, ns)` taken one after another, each two a window: the median of the
    /// windows' rates (a window in which one clock jumped is outvoted), counted from the last
    /// reading; `None` where no window gives a rate.
    pub fn from_windows(readings: &[(u64, u64)]) -> Option<TscClock> {
        let mut rates: Vec<f64> = readings.windows(2).filter_map(|w| Some(TscClock::from_readings(w[0], w[1])?.ns_per_tick)).collect();
        rates.sort_by(f64::total_cmp);
        let &ns_per_tick = rates.get(rates.len() / 2)?;
        let &(tsc, ns) = readings.last()?;
        Some(TscClock { tsc, ns, ns_per_tick })
    }

    /// A TSC reading in ns of the monotonic clock.
    pub fn ns(&self, tsc: u64) -> u64 {
        let ticks = tsc as i128 - self.tsc as i128;
        (self.ns as i128 + (ticks as f64 * self.ns_per_tick) as i128).clamp(0, u64::MAX as i128) as u64
    }
}

/// What a switch's reason says a thread waited on, in the words of `prof:clock` (the
/// kernel's reason, and a scheme call's scheme number).
fn wait_call(reason: Option<Reason>, detail: u64) -> (String, Option<String>) {
    let call = match reason {
        Some(Reason::Futex) => "futex",
        Some(Reason::Sleep) => "sleep",
        Some(Reason::Scheme) => return ("scheme-call".into(), Some(call_of(detail).0.to_string())),
        Some(Reason::Pipe) => "pipe",
        Some(Reason::Event) => "event",
        Some(Reason::Stopped) => "stopped",
        Some(Reason::SchemeIdle) => "scheme-requests",
        _ => "other",
    };
    (call.into(), None)
}

/// A request being timed, as its daemon took it: when (TSC), whose (the process of the tree
/// and its thread, 0 where its switch into the call was not seen), to what, and for a
/// daemon's request made while it served another, that other one's key.
#[derive(Debug, Clone)]
struct Timed {
    at: u64,
    pid: u32,
    tid: u32,
    key: RequestKey,
    within: Option<RequestKey>,
    /// A request of the run's, counted with its caller's process: the tree's; with `-a` every
    /// process's, a daemon's made while serving another too (a link of a chain as well).
    counted: bool,
    /// A link of a chain: the request of the tree's it was made for (its daemon's thread and
    /// call, as `timed` holds it), whose `made` it goes to.
    root: Option<(u32, Call)>,
    /// A request of the tree's: the requests daemons made while serving it, at any depth.
    made: Vec<(RequestKey, RequestKey, u64)>,
    /// When the caller switched into the call (TSC), where seen.
    called: Option<u64>,
    /// The daemon's thread since it took it: where it is (`None` on a CPU; blocked in a call
    /// to a scheme; off a CPU otherwise) and since when (ns), and its time so far.
    state: (Option<Option<u64>>, u64),
    split: DaemonSplit,
}

impl Timed {
    /// The daemon's thread, at `now` (ns), goes to `next`: the time since its last change is
    /// on a CPU, waiting on that scheme, or (neither) left for the remainder.
    fn moved(&mut self, now: u64, next: Option<Option<u64>>) {
        let ns = now.saturating_sub(self.state.1);
        match self.state.0 {
            None => self.split.on_cpu = self.split.on_cpu.saturating_add(ns),
            Some(Some(scheme)) => {
                let w = self.split.waiting.entry(scheme.to_string()).or_insert(0);
                *w = w.saturating_add(ns);
            }
            Some(None) => {}
        }
        self.state = (next, now.max(self.state.1));
    }
}

/// The pid of no program: a session on every process has none.
const NO_PROGRAM: u32 = u32::MAX;

/// One session's clock of the program's threads; or, in a session on every process
/// ([`ProgramRecords::every_process`]), of every process's requests.
#[derive(Debug)]
pub struct ProgramRecords {
    /// The program's pid ([`NO_PROGRAM`] on every process).
    pid: u32,
    /// Every process's requests are the run's, not the tree's alone.
    every: bool,
    tsc: TscClock,
    /// Where each thread last blocked, until its switch out.
    blocked_at: BTreeMap<u32, CallStack>,
    /// The user stack each of the program's threads made its last scheme call from (the
    /// `Block` sample before its switch into the call), with the call: its request's site.
    call_sites: BTreeMap<u32, (Call, Vec<u64>)>,
    /// Threads named in the session: the first naming of one is its start (procmgr names a
    /// context as it makes it; the program's first thread, at its exec).
    named: BTreeSet<u32>,
    /// Each process's name, as procmgr last named one of its threads.
    names: BTreeMap<u32, String>,
    /// The threads that blocked in each scheme call (tags are reused), by the time of their
    /// switch into it.
    calls: BTreeMap<Call, Vec<(u64, Ids)>>,
    /// Requests working for the program that each daemon thread took and has not answered,
    /// newest last, with the program's thread the work is for (where known).
    serving: BTreeMap<u32, Vec<(Call, Option<u32>)>>,
    /// Where each of the program's threads waits now, and since when (ns).
    waiting: BTreeMap<u32, (WaitSite, u64)>,
    /// Requests of the program's a daemon's thread took and has not answered: (its thread, the
    /// call) -> (taken at, ns; the program's thread; where that one waits).
    open: BTreeMap<(u32, Call), (u64, u32, Option<WaitSite>)>,
    /// Each scheme's daemon, as seen taking the program's requests.
    schemes: BTreeMap<u64, u32>,
    /// Requests of the tree's, and those daemons made while serving them, taken and not yet
    /// answered: (the daemon's thread, the call) -> the request.
    timed: BTreeMap<(u32, Call), Timed>,
    /// When each call (scheme and tag) was last answered (TSC).
    freed: BTreeMap<Call, u64>,
    /// Requests of the tree's answered, whose caller has not switched back yet: its thread ->
    /// the request, from its switch into the call (ns).
    answered: BTreeMap<u32, Request>,
    /// The kernel records each system call's end (a session told `3`): a caller back from a
    /// request waits here, by thread, for its call's record, which times the request from
    /// the call's entry to its return.
    syscalls: bool,
    returning: BTreeMap<u32, Request>,
    /// Whether the session follows the program's children, and those it follows: pid ->
    /// (its live threads, an exec whose name has not come yet).
    children: bool,
    followed: BTreeMap<u32, (BTreeSet<u32>, bool)>,
    /// Contexts given an address space by the tree before procmgr gave them a pid: thread ->
    /// the giver's pid.
    unborn: BTreeMap<u32, u32>,
    /// The program's own exec after the profiled one (dash runs a script's last command in
    /// place): from then (TSC) its samples are the image it became, and whether that image
    /// is still to be named.
    became: Option<(u64, bool)>,
    /// When the program last exec'd, and when procmgr last named it (TSC).
    program_exec: Option<u64>,
    program_named: Option<u64>,
}

impl ProgramRecords {
    pub fn new(pid: u32, tsc: TscClock, children: bool, syscalls: bool) -> ProgramRecords {
        ProgramRecords {
            pid,
            every: false,
            tsc,
            blocked_at: BTreeMap::new(),
            call_sites: BTreeMap::new(),
            named: BTreeSet::new(),
            names: BTreeMap::new(),
            calls: BTreeMap::new(),
            serving: BTreeMap::new(),
            waiting: BTreeMap::new(),
            open: BTreeMap::new(),
            schemes: BTreeMap::new(),
            timed: BTreeMap::new(),
            freed: BTreeMap::new(),
            answered: BTreeMap::new(),
            syscalls,
            returning: BTreeMap::new(),
            children,
            followed: BTreeMap::new(),
            unborn: BTreeMap::new(),
            became: None,
            program_exec: None,
            program_named: None,
        }
    }

    /// A session on every process (`start all`): every process's requests (but the kernel's
    /// close messages and the bootstrap's managers', which name no process), each with its
    /// caller's side, its daemon's split, the requests made for it and its call site, as a
    /// program's; a request a daemon made while serving another is its own process's and a
    /// link of that one's chain.
    pub fn every_process(tsc: TscClock, syscalls: bool) -> ProgramRecords {
        ProgramRecords { every: true, ..ProgramRecords::new(NO_PROGRAM, tsc, false, syscalls) }
    }

    /// Are the callers' sides of requests timed by their system calls (the kernel records
    /// them), not by their switches?
    pub fn records_system_calls(&self) -> bool {
        self.syscalls
    }

    /// Is this sample where a thread blocked (not a sample of where the CPU was)?
    pub fn is_block(s: &Sample) -> bool {
        s.source == Some(Source::Block)
    }

    /// Is `pid` the program's, or one of its children the session follows?
    fn in_tree(&self, pid: u32) -> bool {
        pid == self.pid || self.followed.contains_key(&pid) || (self.every && pid != 0)
    }

    /// Process `pid` of the tree: this batch's entry of it.
    fn child(batch: &mut SampleBatch, pid: u32) -> &mut ChildBatch {
        match batch.child_processes.iter().position(|c| c.pid == pid) {
            Some(i) => &mut batch.child_processes[i],
            None => {
                batch.child_processes.push(ChildBatch { pid, ..Default::default() });
                batch.child_processes.last_mut().expect("just pushed")
            }
        }
    }

    /// Follow `pid`, started by `parent`.
    fn follow(&mut self, pid: u32, parent: u32, batch: &mut SampleBatch) {
        if self.children && !self.in_tree(pid) && pid != 0 {
            self.followed.insert(pid, (BTreeSet::new(), false));
            Self::child(batch, pid).parent = Some(parent);
        }
    }

    /// A sample of a child the session follows: its own (and `true`).
    pub fn child_sample(&mut self, s: &Sample, batch: &mut SampleBatch) -> bool {
        let Some(pid) = s.who.pid.filter(|p| self.followed.contains_key(p)) else { return false };
        let sample = taken(s, Some(&self.tsc), false);
        Self::child(batch, pid).samples.push(sample);
        true
    }

    /// The program exec'd again at `time` (TSC), after the profiled exec: what it runs from then
    /// is another image. On Redox every static program is linked at the same addresses, so its
    /// samples would read as the first image's functions: they go apart, to the program's own
    /// pid among the processes of the tree (`children`), named by the image it became.
    pub fn program_became(&mut self, time: u64) {
        self.became = Some((time, true));
        // relibc renames the process to the new program's path before it switches address
        // space, so a name given since the exec before this one is this image's; an older one
        // is the earlier image's (then the name given after this exec, or the table's).
        if self.program_named.zip(self.program_exec).is_none_or(|(named, exec)| named < exec) {
            self.names.remove(&self.pid);
        }
    }

    /// A sample of the program after its later exec (and `true`): the image it became.
    pub fn became_sample(&mut self, s: &Sample, batch: &mut SampleBatch) -> bool {
        if s.who.pid != Some(self.pid) || self.became.is_none_or(|(at, _)| s.time < at) {
            return false;
        }
        let sample = taken(s, Some(&self.tsc), false);
        Self::child(batch, self.pid).samples.push(sample);
        true
    }

    /// At a batch's end: each child that exec'd in it, and the program where it exec'd again,
    /// is named as procmgr names it now (its renaming can come before the exec's record or
    /// after it), else by `now`.
    pub fn name_execs(&mut self, batch: &mut SampleBatch, now: impl Fn(u32) -> Option<String>) {
        let mut execd: Vec<u32> = self.followed.iter_mut().filter_map(|(&pid, f)| std::mem::take(&mut f.1).then_some(pid)).collect();
        if let Some((_, unnamed @ true)) = self.became.as_mut() {
            *unnamed = false;
            execd.push(self.pid);
        }
        for pid in execd {
            let name = self.names.get(&pid).cloned().or_else(|| now(pid));
            Self::child(batch, pid).exec = name.or_else(|| Some("[exec]".to_string()));
        }
    }

    /// The name procmgr gave process `pid`, where a record said it.
    pub fn name_of(&self, pid: u32) -> Option<&str> {
        self.names.get(&pid).map(String::as_str)
    }

    /// A batch's scheme calls, before its events are taken in time order: a daemon can take a
    /// request before its caller's switch into the call is recorded. Of the calls before, the
    /// last of each scheme and tag is kept (its request may be taken in this batch).
    pub fn calls_in(&mut self, events: &[Event]) {
        for calls in self.calls.values_mut() {
            let last = calls.iter().copied().max_by_key(|c| c.0);
            calls.clear();
            calls.extend(last);
        }
        for e in events {
            if let Event::Switch(sw) = e {
                if sw.reason == Some(Reason::Scheme) {
                    self.calls.entry(call_of(sw.detail)).or_default().push((sw.time, sw.left));
                }
            }
        }
    }

    /// The thread that made call `call`, taken at `time`: the one whose switch into a call of
    /// that scheme and tag is nearest in time (a tag comes back only after a round trip).
    fn caller_of(&self, call: Call, time: u64) -> Option<Ids> {
        self.nearest_call(call, time).map(|c| c.1)
    }

    /// That switch into call `call` nearest `time`: when (TSC), and whose.
    fn nearest_call(&self, call: Call, time: u64) -> Option<(u64, Ids)> {
        self.calls.get(&call)?.iter().min_by_key(|c| c.0.abs_diff(time)).copied()
    }

    /// Does this thread work for the program (a thread of it, or a daemon's serving it), and
    /// for which of its threads?
    fn works_for(&self, who: Ids) -> Option<Option<u32>> {
        if who.pid == Some(self.pid) {
            return Some(Some(who.thread));
        }
        self.serving.get(&who.thread).and_then(|s| s.last()).map(|&(_, thread)| thread)
    }

    /// A sample of a thread not the program's: a daemon's working for it goes to `batch` (and
    /// `true`), under the wait of the program's thread it works for where that thread waits.
    pub fn serve(&mut self, s: &Sample, batch: &mut SampleBatch) -> bool {
        let Some(&(_, thread)) = self.serving.get(&s.who.thread).and_then(|r| r.last()) else {
            return false;
        };
        let pid = s.who.pid.unwrap_or(0);
        match s.kernel {
            true => batch.servers.account.server_kernel += 1,
            false => batch.servers.account.server_user += 1,
        }
        let sample = taken(s, Some(&self.tsc), true);
        if let (Some((site, _)), Some(stack)) = (thread.and_then(|t| self.waiting.get(&t)), &sample.stack) {
            batch.threads.served.push((site.clone(), pid, stack.clone(), 1));
        }
        batch.servers.samples.push((pid, sample));
        true
    }

    /// A daemon's thread took a request (`call`: its scheme and tag): working for the program
    /// where the caller is its thread, or a daemon's working for it.
    fn request_taken(&mut self, daemon: Ids, caller: Ids, call: Call, time: u64, batch: &mut SampleBatch) {
        let thread = match self.caller_of(call, time) {
            Some(from) => self.works_for(from),
            None => (caller.pid == Some(self.pid)).then_some(None),
        };
        let Some(thread) = thread else { return };
        if let Some(for_tid) = thread {
            let site = self.waiting.get(&for_tid).map(|w| w.0.clone());
            self.open.insert((daemon.thread, call), (self.tsc.ns(time), for_tid, site));
        }
        self.serving.entry(daemon.thread).or_default().push((call, thread));
        if let Some(pid) = daemon.pid.filter(|&pid| self.schemes.insert(call.0, pid).is_none()) {
            batch.servers.schemes.push((call.0, pid));
        }
    }

    /// The request daemon thread `thread` serves now, where it is timed (the newest taken).
    fn served_by(&self, thread: u32) -> Option<((u32, Call), &Timed)> {
        self.timed.range((thread, (0, 0))..=(thread, (u64::MAX, u64::MAX))).map(|(&k, t)| (k, t)).max_by_key(|e| e.1.at)
    }

    /// The request daemon `pid` (0: the bootstrap's managers) serves now, where it is timed
    /// (the newest taken).
    fn served_in(&self, pid: u32) -> Option<((u32, Call), &Timed)> {
        self.timed.iter().map(|(&k, t)| (k, t)).filter(|e| e.1.key.as_scheme().is_some_and(|k| k.1 == pid)).max_by_key(|e| e.1.at)
    }

    /// The timed request a request was made while serving: its caller's thread's (`from`, by
    /// its switch into the call); where no switch was seen (the answer came before it
    /// blocked), the one its process (`pid`) serves now.
    fn made_within(&self, from: Option<Ids>, pid: Option<u32>) -> Option<((u32, Call), &Timed)> {
        match (from, pid) {
            (Some(f), _) => self.served_by(f.thread),
            (None, Some(pid)) => self.served_in(pid),
            (None, None) => None,
        }
    }

    /// A daemon's thread took a request: timed where a process of the tree made it, or a
    /// daemon's thread serving one of those (a link of a chain).
    fn time_taken(&mut self, daemon: Ids, caller: Ids, call: Call, time: u64) {
        let key = RequestKey::scheme(call.0, daemon.pid.unwrap_or(0));
        let nearest = self.nearest_call(call, time);
        let from = nearest.map(|c| c.1);
        let timed = match caller.pid.filter(|&p| self.in_tree(p)) {
            Some(pid) => {
                let tid = nearest.filter(|c| c.1.pid == Some(pid)).map_or(0, |c| c.1.thread);
                // On every process, one a daemon made while serving another is also a link.
                let within = if self.every { self.made_within(from, Some(pid)) } else { None };
                let root = within.map(|(at, w)| w.root.unwrap_or(at));
                let within = within.map(|(_, w)| w.key.clone());
                Timed { at: time, pid, tid, key, within, counted: true, root, made: Vec::new(), called: None, state: (None, self.tsc.ns(time)), split: DaemonSplit::default() }
            }
            None => {
                // (Not the kernel's close messages, which name no caller and are never
                // answered, nor the bootstrap's managers, which have no pid to tell apart.)
                let within = self.made_within(from, caller.pid.filter(|&p| p != 0));
                let Some((at, within)) = within else { return };
                let root = Some(within.root.unwrap_or(at));
                let (pid, tid, within) = (within.pid, within.tid, Some(within.key.clone()));
                Timed { at: time, pid, tid, key, within, counted: false, root, made: Vec::new(), called: None, state: (None, self.tsc.ns(time)), split: DaemonSplit::default() }
            }
        };
        self.timed.insert((daemon.thread, call), timed);
    }

    /// A daemon's thread answered request `call`: whole, where it was timed.
    fn time_answered(&mut self, daemon: Ids, call: Call, time: u64, batch: &mut SampleBatch) {
        // The tag is free again from now: an earlier switch into this call was another request's.
        let since = self.freed.insert(call, time).unwrap_or(0);
        let Some(mut t) = self.timed.remove(&(daemon.thread, call)) else { return };
        if t.counted {
            // The caller's switch into this call: its thread's last before the answer, since
            // the tag's last answer (where none was recorded, it had its answer before it
            // blocked, and its side is not timed).
            let calls = self.calls.get(&call).into_iter().flatten();
            let mine = calls.filter(|c| c.1.pid == Some(t.pid) && (t.tid == 0 || c.1.thread == t.tid) && (since..=time).contains(&c.0));
            if let Some(&(at, who)) = mine.max_by_key(|c| c.0) {
                (t.called, t.tid) = (Some(at), who.thread);
            }
        }
        let (from, to) = (self.tsc.ns(t.at), self.tsc.ns(time));
        if let (true, Some(called)) = (t.counted, t.called) {
            let waited = Request { pid: t.pid, tid: t.tid, key: t.key.clone(), from: self.tsc.ns(called), to: 0, taken_by: None, site: Default::default(), served: None };
            self.answered.insert(t.tid, waited);
        }
        // The daemon's time on it, whole: its parts add up to taken -> answered.
        t.moved(to, None);
        (t.split.count, t.split.total) = (1, to.saturating_sub(from));
        if let Some(within) = t.within.take() {
            let ns = to.saturating_sub(from);
            // Kept with the request it was made for (answered after it, where the daemon
            // waited for it), for a window of the run.
            if let Some(root) = t.root.and_then(|r| self.timed.get_mut(&r)).filter(|r| r.made.len() < MAX_MADE) {
                root.made.push((within.clone(), t.key.clone(), ns));
            }
            batch.requests.nested.push((within, t.key.clone(), ns));
        }
        if t.counted {
            let taken_by = Some((daemon.pid.unwrap_or(0), daemon.thread));
            // Its call site: the user stack its caller blocked at, where the call was seen.
            if let Some(frames) = self.call_site(&t, call) {
                batch.requests.stacks.push((batch.requests.done.len(), frames));
            }
            let served = Some(Box::new(Served { waited: None, split: t.split, made: t.made }));
            batch.requests.done.push(Request { pid: t.pid, tid: t.tid, key: t.key, from, to, taken_by, site: Default::default(), served });
        }
    }

    /// The user stack the thread of the run's process made request `t` (call `call`) from:
    /// the one it blocked at in its switch into that call. None for the program once it exec'd
    /// again: its stacks are then of the image it became, whose addresses the program's
    /// symbols would misname (a started process's exec is said apart: `execs`).
    fn call_site(&mut self, t: &Timed, call: Call) -> Option<Vec<u64>> {
        if t.called.is_none() || (t.pid == self.pid && self.became.is_some()) {
            return None;
        }
        let (made, frames) = self.call_sites.remove(&t.tid)?;
        (made == call).then_some(frames)
    }

    /// At the session's end: the tree's requests taken and never answered, each counted
    /// with its process as unfinished.
    pub fn unanswered(&mut self, batch: &mut SampleBatch) {
        let open = std::mem::take(&mut self.timed);
        batch.requests.unfinished.extend(open.into_values().filter(|t| t.counted).map(|t| t.pid));
        // Callers back from their requests whose calls' records never came (the session ended
        // first): by their switches.
        batch.requests.waited.extend(std::mem::take(&mut self.returning).into_values());
    }

    /// A caller back from request `waited` (`to`: its switch back): timed by its system call
    /// where the kernel records them (when the call's record comes), else now.
    fn caller_back(&mut self, waited: Request, batch: &mut SampleBatch) {
        if !self.syscalls {
            return batch.requests.waited.push(waited);
        }
        // A request still waiting for its call's record: the record was lost.
        if let Some(earlier) = self.returning.insert(waited.tid, waited) {
            batch.requests.waited.push(earlier);
        }
    }

    /// A system call of `who`'s ended: a request it was back from, made in it, is timed from
    /// the call's entry to its return (the kernel's switches into and out of the call lie
    /// within them); one made before it (its call's record lost), by its switches.
    fn call_returned(&mut self, who: Ids, entered: u64, time: u64, batch: &mut SampleBatch) {
        let Some(mut waited) = self.returning.remove(&who.thread).filter(|w| who.pid == Some(w.pid)) else { return };
        let (entered, returned) = (self.tsc.ns(entered), self.tsc.ns(time));
        if entered <= waited.from && waited.to <= returned {
            (waited.from, waited.to) = (entered, returned);
        }
        batch.requests.waited.push(waited);
    }

    /// A daemon's thread answered request `call`: its work for the program, whole.
    fn request_answered(&mut self, daemon: Ids, call: Call, time: u64, batch: &mut SampleBatch) {
        if let Some(open) = self.serving.get_mut(&daemon.thread) {
            open.retain(|(c, _)| *c != call);
        }
        if let Some((from, for_tid, site)) = self.open.remove(&(daemon.thread, call)) {
            let pid = daemon.pid.unwrap_or(0);
            batch.servers.served.push((pid, daemon.thread, from, self.tsc.ns(time), for_tid, site));
        }
    }

    /// A thread's switch into a scheme call, where it blocked at `stack` (its `Block` sample:
    /// the call's user address, then its callers): that call's site.
    fn call_site_at(&mut self, sw: &prof_events::Switch, stack: &CallStack) {
        let user = stack.frames.iter().copied().filter(|&a| a < prof_events::KERNEL_BASE).collect();
        self.call_sites.insert(sw.left.thread, (call_of(sw.detail), user));
    }

    /// A switch: a daemon back at its queue, a followed child's thread gone, and for the
    /// program's threads their switches, where they blocked and why, and their waits' ends.
    fn switch(&mut self, sw: &prof_events::Switch, batch: &mut SampleBatch) {
        let time = self.tsc.ns(sw.time);
        // A daemon's thread serving timed requests: off a CPU (blocked in a scheme call of its
        // own, or otherwise), or back on one.
        let off = match sw.reason {
            Some(Reason::Scheme) => Some(Some(call_of(sw.detail).0)),
            _ => Some(None),
        };
        for (thread, next) in [(sw.left.thread, off), (sw.entered.thread, None)] {
            for t in self.timed.range_mut((thread, (0, 0))..=(thread, (u64::MAX, u64::MAX))).map(|e| e.1) {
                t.moved(time, next);
            }
        }
        if sw.reason == Some(Reason::SchemeIdle) {
            // A daemon back at its queue is done with what it took.
            self.serving.remove(&sw.left.thread);
        }
        if sw.reason == Some(Reason::Exit) {
            if let Some((pid, (threads, _))) = sw.left.pid.and_then(|p| Some(p).zip(self.followed.get_mut(&p))) {
                threads.remove(&sw.left.thread);
                if threads.is_empty() {
                    Self::child(batch, pid).exited = true;
                }
            }
        }
        // Where a thread of the run's processes blocked, until its switch out: a scheme call's
        // is its request's site.
        let stack = sw.left.pid.filter(|&p| self.in_tree(p)).and_then(|_| self.blocked_at.remove(&sw.left.thread));
        if let (Some(Reason::Scheme), Some(stack)) = (sw.reason, &stack) {
            self.call_site_at(sw, stack);
        }
        if sw.left.pid == Some(self.pid) {
            let tid = sw.left.thread;
            let preempted = sw.reason == Some(Reason::Preempted);
            batch.threads.switches.push(Switch { tid, time, out: Some(preempted) });
            if sw.reason == Some(Reason::Exit) {
                batch.threads.ends.push((tid, time));
            }
            if !preempted && sw.reason != Some(Reason::Exit) {
                let (call, target) = wait_call(sw.reason, sw.detail);
                let stack = stack.unwrap_or(CallStack { frames: vec![], truncated: true });
                let site = WaitSite { pid: self.pid, call, target, stack };
                self.waiting.insert(tid, (site.clone(), time));
                batch.threads.blocked_at.push(Probe { tid, from: time, to: time, sched: None, site: Some(site) });
            }
        }
        if let Some(mut waited) = self.answered.remove(&sw.entered.thread).filter(|w| sw.entered.pid == Some(w.pid)) {
            // A caller back from its answered request: the request from its side.
            waited.to = time;
            self.caller_back(waited, batch);
        }
        if sw.entered.pid == Some(self.pid) {
            // A wait ends: both its ends are the kernel's switches.
            if let Some((site, from)) = self.waiting.remove(&sw.entered.thread) {
                batch.threads.wait_spans.push((sw.entered.thread, from, time, site));
            }
            batch.threads.switches.push(Switch { tid: sw.entered.thread, time, out: None });
        }
    }

    /// Take one event, in time order, into `batch`.
    pub fn event(&mut self, e: &Event, batch: &mut SampleBatch) {
        match e {
            Event::NewThread { who, giver, .. } if self.children && giver.pid.is_some_and(|p| self.in_tree(p)) && who.pid != giver.pid => {
                let parent = giver.pid.unwrap_or(0);
                match who.pid {
                    Some(pid) if pid != 0 => self.follow(pid, parent, batch),
                    // procmgr has not given it its pid yet: when it names it.
                    _ => {
                        self.unborn.insert(who.thread, parent);
                    }
                }
            }
            Event::Exec { who, time, .. } => {
                if who.pid == Some(self.pid) {
                    self.program_exec = Some(*time);
                }
                // A started process's (on every process, any's) call sites before its exec are
                // of the image it replaced: counted apart, as on Linux.
                if let Some(pid) = who.pid.filter(|&p| p != self.pid && self.in_tree(p)) {
                    batch.requests.execs.push((pid, batch.requests.stacks.len()));
                }
                if let Some(f) = who.pid.and_then(|p| self.followed.get_mut(&p)) {
                    f.1 = true;
                }
            }
            Event::Name { who, name, .. } if who.pid.is_some_and(|p| p != self.pid) => {
                let pid = who.pid.unwrap_or(0);
                self.names.insert(pid, name.clone());
                if let Some(parent) = self.unborn.remove(&who.thread) {
                    self.follow(pid, parent, batch);
                }
                if let Some((threads, _)) = self.followed.get_mut(&pid) {
                    threads.insert(who.thread);
                }
            }
            Event::Request { daemon, caller, scheme, tag, answered: false, time, .. } => {
                self.time_taken(*daemon, *caller, (*scheme, *tag), *time);
                if !self.every {
                    self.request_taken(*daemon, *caller, (*scheme, *tag), *time, batch)
                }
            }
            Event::Request { daemon, scheme, tag, answered: true, time, .. } => {
                self.time_answered(*daemon, (*scheme, *tag), *time, batch);
                if !self.every {
                    self.request_answered(*daemon, (*scheme, *tag), *time, batch)
                }
            }
            Event::Sample(s) if Self::is_block(s) && s.who.pid.is_some_and(|p| self.in_tree(p)) => {
                self.blocked_at.insert(s.who.thread, stack_of(s));
            }
            Event::Name { time, who, name, .. } if who.pid == Some(self.pid) => {
                self.names.insert(self.pid, name.clone());
                self.program_named = Some(*time);
                if self.named.insert(who.thread) {
                    batch.threads.starts.push((who.thread, self.tsc.ns(*time)));
                }
                batch.thread_names.push((who.thread, name.clone()));
            }
            Event::Switch(sw) => self.switch(sw, batch),
            Event::Syscall { who, entered, time, .. } if self.syscalls => self.call_returned(*who, *entered, *time, batch),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_events::{Ids, Switch as SwitchRecord};

    const CLOCK: TscClock = TscClock { tsc: 1_000, ns: 5_000, ns_per_tick: 0.5 };

    fn who(pid: u32, thread: u32) -> Ids {
        Ids { pid: Some(pid), thread }
    }

    fn switch(time: u64, left: Ids, entered: Ids, reason: Reason) -> Event {
        Event::Switch(SwitchRecord { cpu: 0, time, left, entered, reason: Some(reason), detail: 4, stack: vec![] })
    }

    #[test]
    fn tsc_to_ns_by_the_measured_rate() {
        let c = TscClock::from_readings((1_000, 5_000), (3_000, 6_000)).unwrap();
        assert_eq!(c, CLOCK);
        assert_eq!((c.ns(1_000), c.ns(3_000), c.ns(0)), (5_000, 6_000, 4_500));
        assert_eq!(TscClock::from_readings((3_000, 5_000), (1_000, 6_000)), None);
        assert_eq!(TscClock::from_readings((1_000, 5_000), (3_000, 5_000)), None);
    }

    /// Three 20 ms windows of a 2 GHz TSC, the monotonic clock losing a 4 ms tick in the second:
    /// read alone that window says 0.4 ns a tick; the median says 0.5, from the last reading.
    #[test]
    fn a_window_whose_clock_lost_a_tick_is_outvoted() {
        let readings = [(0, 1_000), (40_000_000, 20_001_000), (80_000_000, 36_001_000), (120_000_000, 56_001_000)];
        let c = TscClock::from_windows(&readings).unwrap();
        assert_eq!(c, TscClock { tsc: 120_000_000, ns: 56_001_000, ns_per_tick: 0.5 });
        assert_eq!(TscClock::from_readings(readings[1], readings[2]).map(|c| c.ns_per_tick), Some(0.4));
        // Windows that give no rate are left out; none at all, no clock.
        assert_eq!(TscClock::from_windows(&[(0, 0), (0, 10), (10, 15)]).map(|c| c.ns_per_tick), Some(0.5));
        assert_eq!(TscClock::from_windows(&[(5, 5)]), None);
        assert_eq!(TscClock::from_windows(&[]), None);
    }

    #[test]
    fn the_programs_switches_and_where_it_blocked() {
        let mut clock = ProgramRecords::new(10, CLOCK, false, false);
        let mut batch = SampleBatch::default();
        let block = Event::Sample(Sample {
            cpu: 0,
            time: 1_900,
            who: who(10, 21),
            kernel: false,
            source: Some(Source::Block),
            ip: 0x40_1000,
            kernel_frames: vec![],
            user_frames: vec![0x40_2000],
        });
        for e in [
            block,
            // Thread 21 calls a scheme; ramfs (pid 7) runs; 21 comes back, is preempted.
            switch(2_000, who(10, 21), who(7, 5), Reason::Scheme),
            switch(2_400, who(7, 5), who(10, 21), Reason::SchemeIdle),
            switch(3_000, who(10, 21), who(9, 30), Reason::Preempted),
            // Another process's switches are not the program's.
            switch(3_200, who(9, 30), who(7, 5), Reason::Sleep),
        ] {
            clock.event(&e, &mut batch);
        }
        assert_eq!(
            batch.threads.switches,
            [
                Switch { tid: 21, time: 5_500, out: Some(false) },
                Switch { tid: 21, time: 5_700, out: None },
                Switch { tid: 21, time: 6_000, out: Some(true) },
            ]
        );
        let site = WaitSite {
            pid: 10,
            call: "scheme-call".into(),
            target: Some("4".into()),
            stack: CallStack { frames: vec![0x40_1000, 0x40_2000], truncated: false },
        };
        assert_eq!(batch.threads.blocked_at, [Probe { tid: 21, from: 5_500, to: 5_500, sched: None, site: Some(site) }]);
    }

    /// Thread 21 of the program reads ramfs (scheme 24, tag 3) twice: each request's caller's
    /// side is its switch into the call to its switch back, or, where the kernel records
    /// system calls (told `3`), the call's entry to its return. The second call's record was
    /// lost (the next one began after it): that request keeps its switches.
    #[test]
    fn a_caller_s_side_is_its_system_call_where_the_kernel_records_them() {
        let read = prof_events::layout::scheme_call(24, 3);
        let request = |time, answered| Event::Request { cpu: 1, time, daemon: who(7, 5), caller: Ids { pid: Some(10), thread: 0 }, scheme: 24, tag: 3, answered };
        let call = |time, left, entered| Event::Switch(SwitchRecord { cpu: 0, time, left, entered, reason: Some(Reason::Scheme), detail: read, stack: vec![] });
        let syscall = |entered, time| Event::Syscall { cpu: 0, time, who: who(10, 21), entered, number: 3, result: 1 };
        let events = [
            call(2_000, who(10, 21), who(7, 5)),
            request(2_100, false),
            request(2_300, true),
            switch(2_400, who(7, 5), who(10, 21), Reason::SchemeIdle),
            syscall(1_800, 2_600),
            call(3_000, who(10, 21), who(7, 5)),
            request(3_100, false),
            request(3_300, true),
            switch(3_400, who(7, 5), who(10, 21), Reason::SchemeIdle),
            syscall(3_800, 4_000),
        ];
        let sides = |syscalls: bool| {
            let mut clock = ProgramRecords::new(10, CLOCK, false, syscalls);
            let mut batch = SampleBatch::default();
            clock.calls_in(&events);
            for e in &events {
                clock.event(e, &mut batch);
            }
            assert_eq!(batch.requests.done.iter().map(|r| (r.from, r.to)).collect::<Vec<_>>(), [(5_550, 5_650), (6_050, 6_150)], "taken to answered either way");
            batch.requests.waited.iter().map(|r| (r.tid, r.from, r.to)).collect::<Vec<_>>()
        };
        assert_eq!(sides(false), [(21, 5_500, 5_700), (21, 6_000, 6_200)]);
        assert_eq!(sides(true), [(21, 5_400, 5_800), (21, 6_000, 6_200)]);
        // A session that ends while a caller's call has not returned: by its switches.
        let mut clock = ProgramRecords::new(10, CLOCK, false, true);
        let mut batch = SampleBatch::default();
        clock.calls_in(&events[..4]);
        for e in &events[..4] {
            clock.event(e, &mut batch);
        }
        assert!(batch.requests.waited.is_empty(), "held for the call's record");
        clock.unanswered(&mut batch);
        assert_eq!(batch.requests.waited.iter().map(|r| (r.from, r.to)).collect::<Vec<_>>(), [(5_500, 5_700)]);
    }

    /// A request's call site (`-g`): the user stack of the `Block` sample its caller wrote as
    /// it blocked in the call (the call's address, then its callers), given with the request's
    /// place among the batch's; a request made once the program exec'd again has none (its
    /// addresses are another image's).
    #[test]
    fn a_request_s_call_site_is_where_its_caller_blocked() {
        let read = prof_events::layout::scheme_call(24, 3);
        let request = |time, answered| Event::Request { cpu: 1, time, daemon: who(7, 5), caller: Ids { pid: Some(10), thread: 0 }, scheme: 24, tag: 3, answered };
        let call = |time| Event::Switch(SwitchRecord { cpu: 0, time, left: who(10, 21), entered: who(7, 5), reason: Some(Reason::Scheme), detail: read, stack: vec![] });
        let blocked = |time, ip| {
            let user_frames = vec![0x40_2005, 0x40_3005];
            Event::Sample(Sample { cpu: 0, time, who: who(10, 21), kernel: false, source: Some(Source::Block), ip, kernel_frames: vec![], user_frames })
        };
        let mut events = vec![
            blocked(1_990, 0x40_1000),
            call(2_000),
            request(2_100, false),
            request(2_300, true),
            switch(2_400, who(7, 5), who(10, 21), Reason::SchemeIdle),
            Event::Exec { cpu: 0, time: 2_500, who: who(10, 21), entry: 0x40_1000 },
            blocked(2_990, 0x40_1100),
            call(3_000),
            request(3_100, false),
            request(3_300, true),
        ];
        let mut clock = ProgramRecords::new(10, CLOCK, false, false);
        let mut batch = SampleBatch::default();
        clock.calls_in(&events);
        for e in &events[..5] {
            clock.event(e, &mut batch);
        }
        assert_eq!(batch.requests.stacks, [(0, vec![0x40_1000, 0x40_2005, 0x40_3005])]);
        clock.program_became(2_500);
        for e in events.drain(5..) {
            clock.event(&e, &mut batch);
        }
        assert_eq!((batch.requests.done.len(), batch.requests.stacks.len()), (2, 1), "none once it became another image");
    }

    /// A session on every process: process 14's read of ramfs (pid 7, thread 5) is its own,
    /// with its caller's side (its switches), ramfs's split and its call site; ramfs's request
    /// of the disk's daemon (pid 9) while serving it is ramfs's own request and a link of the
    /// read's chain; the kernel's close message (no caller) is nobody's; process 15's request
    /// left open waits for a later batch, across which requests pair; an exec parts a process's
    /// sites before it from those after.
    #[test]
    fn on_every_process_each_request_is_its_process_s_and_chains_link_them() {
        let call = |time, left, entered, scheme, tag| Event::Switch(SwitchRecord { cpu: 0, time, left, entered, reason: Some(Reason::Scheme), detail: prof_events::layout::scheme_call(scheme, tag), stack: vec![] });
        let request = |time, daemon: Ids, caller: Option<u32>, scheme, tag, answered| Event::Request { cpu: 0, time, daemon, caller: Ids { pid: caller, thread: 0 }, scheme, tag, answered };
        let (reader, ramfs, disk) = (who(14, 140), who(7, 5), who(9, 90));
        let blocked = Event::Sample(Sample { cpu: 0, time: 900, who: reader, kernel: false, source: Some(Source::Block), ip: 0x40_1000, kernel_frames: vec![], user_frames: vec![0x40_2005] });
        let events = [
            blocked,
            call(1_000, reader, ramfs, 24, 1),
            request(1_100, ramfs, Some(14), 24, 1, false),
            call(1_200, ramfs, disk, 31, 4),
            request(1_300, disk, Some(7), 31, 4, false),
            request(1_500, disk, Some(7), 31, 4, true),
            switch(1_600, disk, ramfs, Reason::SchemeIdle),
            request(2_100, ramfs, Some(14), 24, 1, true),
            switch(2_200, ramfs, reader, Reason::SchemeIdle),
            request(2_300, ramfs, None, 24, 9, false),
            request(2_400, ramfs, None, 24, 9, true),
            Event::Exec { cpu: 0, time: 2_450, who: who(14, 140), entry: 0x40_1000 },
            request(2_500, ramfs, Some(15), 24, 2, false),
        ];
        let mut every = ProgramRecords::every_process(CLOCK, false);
        let mut batch = SampleBatch::default();
        every.calls_in(&events);
        for e in &events {
            every.event(e, &mut batch);
        }
        let (read, disk_read) = (RequestKey::scheme(24, 7), RequestKey::scheme(31, 9));
        let r = &batch.requests;
        assert_eq!(r.done.iter().map(|r| (r.pid, r.tid, r.key.clone(), r.from, r.to)).collect::<Vec<_>>(), [(7, 5, disk_read.clone(), 5_150, 5_250), (14, 140, read.clone(), 5_050, 5_550)]);
        assert_eq!(r.nested, [(read.clone(), disk_read.clone(), 100)]);
        let served = r.done[1].served.as_deref().unwrap();
        assert_eq!((served.split.on_cpu, served.split.waiting.get("31"), served.split.total, &served.made), (300, Some(&200), 500, &vec![(read, disk_read, 100)]));
        assert_eq!(r.waited.iter().map(|w| (w.pid, w.tid, w.from, w.to)).collect::<Vec<_>>(), [(7, 5, 5_100, 5_300), (14, 140, 5_000, 5_600)]);
        assert_eq!(r.stacks, [(1, vec![0x40_1000, 0x40_2005])]);
        // 14's exec after it: its sites from before are of the image it replaced.
        assert_eq!(r.execs, [(14, 1)]);
        assert!(batch.servers.samples.is_empty() && batch.servers.served.is_empty() && batch.threads.switches.is_empty(), "no program's");
        // The next batch answers 15's.
        let mut batch = SampleBatch::default();
        let answer = [request(2_600, ramfs, Some(15), 24, 2, true)];
        every.calls_in(&answer);
        every.event(&answer[0], &mut batch);
        assert_eq!(batch.requests.done.iter().map(|r| (r.pid, r.from, r.to)).collect::<Vec<_>>(), [(15, 5_750, 5_800)]);
    }

    /// `--children`: a started process's request has its call site too (named later by its
    /// own executable), and its exec parts its sites from before it.
    #[test]
    fn a_started_process_s_request_has_its_call_site() {
        let (child, ramfs) = (who(11, 110), who(7, 5));
        let request = |time, answered| Event::Request { cpu: 0, time, daemon: ramfs, caller: Ids { pid: Some(11), thread: 0 }, scheme: 24, tag: 3, answered };
        let blocked = Event::Sample(Sample { cpu: 0, time: 1_990, who: child, kernel: false, source: Some(Source::Block), ip: 0x40_1000, kernel_frames: vec![], user_frames: vec![0x40_2005] });
        let events = [
            Event::NewThread { cpu: 0, time: 1_000, who: child, giver: who(10, 100) },
            Event::Exec { cpu: 0, time: 1_500, who: child, entry: 0x40_1000 },
            blocked,
            Event::Switch(SwitchRecord { cpu: 0, time: 2_000, left: child, entered: ramfs, reason: Some(Reason::Scheme), detail: prof_events::layout::scheme_call(24, 3), stack: vec![] }),
            request(2_100, false),
            request(2_300, true),
        ];
        let mut clock = ProgramRecords::new(10, CLOCK, true, false);
        let mut batch = SampleBatch::default();
        clock.calls_in(&events);
        for e in &events {
            clock.event(e, &mut batch);
        }
        assert_eq!(batch.requests.done.iter().map(|r| (r.pid, r.tid)).collect::<Vec<_>>(), [(11, 110)]);
        assert_eq!(batch.requests.stacks, [(0, vec![0x40_1000, 0x40_2005])]);
        assert_eq!(batch.requests.execs, [(11, 0)]);
    }
}
