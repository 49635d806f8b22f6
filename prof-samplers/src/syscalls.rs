//! Linux: every system call of the program, with its latency (`--requests`), from the kernel's
//! `raw_syscalls:sys_enter` and `sys_exit` tracepoints, what `perf trace -s` reads.
//!
//! * Two tracepoint events per CPU (`PERF_TYPE_TRACEPOINT`, their ids from tracefs), inherited
//!   as the sampling event is, armed at the program's exec (or, attached, on each thread), the
//!   exit event writing into the enter event's ring: [`crate::perf_event`]'s rings, read by its
//!   reader, a record's tracepoint told by its raw data's `common_type`.
//! * Records of different CPUs' rings come in no common order, and a thread may enter a call
//!   on one CPU and leave it on another: each batch's records up to the clock's reading are
//!   put in time order and paired per thread (latency = exit − enter); later ones wait for the
//!   next batch.
//! * A call seen to end without its start (the program's own exec, which began before the
//!   events were armed; a child's return from `clone`) or to start without its end
//!   (`exit_group`; a call the run stopped in) is counted as unfinished, not timed.
//! * The tracepoints' raw data needs privilege (root, `CAP_PERFMON`, or
//!   `kernel.perf_event_paranoid` -1) and tracefs readable; [`available`] says why not.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use perf_event_open_sys as sys;
use sys::bindings as b;

use prof_core::requests::{Request, RequestKey, RequestSource, RequestsBatch};
use prof_core::sampler::CountFrom;

use crate::perf_event::{attr_format, page_size, rings_on, threads_of, Record, RequestRings, Ring, Unwind, PERF_REG_X86_BP, PERF_REG_X86_IP, PERF_REG_X86_SP};
use crate::unwind::UserRegs;

/// Where the tracepoints' ids are: tracefs, where it is mounted on its own, else under debugfs.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Data pages of a CPU's ring (a power of two): 1 MiB holds about 6,900 calls (enter and exit
/// records, 152 bytes together), and profil is woken to read it at a quarter full; where the
/// memory-lock limit refuses it, half, down to 64 KiB. Records lost are counted.
const DATA_PAGES: usize = 256;
const MIN_DATA_PAGES: usize = 16;

/// A CPU's ring system-wide (`-a`): every process's calls, 4 MiB (about 27,000 calls).
const SYSTEM_DATA_PAGES: usize = 1024;

/// Under `-g` an enter record holds the chain and the stack's top (up to about 1 KiB a call
/// with its exit, not 152): rings four times as large (4 MiB a CPU, 16 MiB system-wide).
const STACKS_SCALE: usize = 4;

/// The two tracepoints' ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ids {
    enter: u16,
    exit: u16,
}

/// The ids of `raw_syscalls:sys_enter` and `sys_exit`, checked to lay out the call's number
/// where [`crate::perf_event`]'s parser reads it (offset 8, after the common fields), and the
/// exit its return value (offset 16).
fn tracepoint_ids() -> io::Result<Ids> {
    // The first place's error says why (a tracefs root alone may read), the second's mostly
    // that debugfs is not there.
    let mut first = None;
    for dir in TRACEFS {
        let read = |name: &str, file: &str| std::fs::read_to_string(format!("{dir}/events/raw_syscalls/{name}/{file}"));
        let id = |name: &str| -> io::Result<u16> {
            let format = read(name, "format")?;
            let has = |field: &str, offset: &str| format.lines().any(|l| l.contains(field) && l.contains(offset));
            if !has("field:long id;", "offset:8;") || (name == "sys_exit" && !has("field:long ret;", "offset:16;")) {
                return Err(io::Error::new(io::ErrorKind::InvalidData, format!("raw_syscalls:{name} lays its fields out otherwise")));
            }
            read(name, "id")?.trim().parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a tracepoint id that is not a number"))
        };
        match (id("sys_enter"), id("sys_exit")) {
            (Ok(enter), Ok(exit)) => return Ok(Ids { enter, exit }),
            (Err(e), _) | (_, Err(e)) => {
                first.get_or_insert(io::Error::new(e.kind(), format!("{dir}: {e}")));
            }
        }
    }
    Err(first.unwrap_or_else(|| io::ErrorKind::NotFound.into()))
}

/// Frames of the user call chain the enter event records under `-g`: the call's site and its
/// callers, enough to name it (the kernel's walk stops there).
const CHAIN_FRAMES: u16 = 32;

/// Bytes of the user stack's top the enter event copies under `-g`, with the registers: the
/// C library's frames and their callers', unwound by their unwind tables where the kernel's
/// frame-pointer walk skips a frame (a wrapper that keeps none).
const STACK_TOP: u32 = 512;

/// How a tracepoint's events are armed: on a process (its threads inheriting them), from its
/// exec or now; or on every task of a CPU (`-a`), now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arming {
    Process { at_exec: bool },
    System,
}

/// The attr of tracepoint `id`'s event: every hit a sample with its thread, time and raw data,
/// on the sampling event's clock; armed as `arming` says. `frames` > 0: with the user call
/// chain (the kernel's frame-pointer walk), at most that many frames, the user registers and
/// `stack` bytes of the user stack's top. The exit event of a ring asks for a chain of 1 and 8
/// bytes where its enter event asks for them: the records of a ring share one layout.
fn attr(id: u16, arming: Arming, data_pages: usize, frames: u16, stack: u32) -> b::perf_event_attr {
    // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
    let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.type_ = b::PERF_TYPE_TRACEPOINT;
    attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    attr.config = u64::from(id);
    attr.__bindgen_anon_1.sample_period = 1;
    attr.sample_type = (b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_RAW) as u64;
    if frames > 0 {
        attr.sample_type |= (b::PERF_SAMPLE_CALLCHAIN | b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER) as u64;
        attr.set_exclude_callchain_kernel(1);
        attr.sample_max_stack = frames;
        attr.sample_regs_user = 1 << PERF_REG_X86_BP | 1 << PERF_REG_X86_SP | 1 << PERF_REG_X86_IP;
        attr.sample_stack_user = stack;
    }
    if let Arming::Process { at_exec } = arming {
        attr.set_disabled(u64::from(at_exec));
        attr.set_enable_on_exec(u64::from(at_exec));
        attr.set_inherit(1);
    }
    // A tracepoint fires in the kernel: excluding the kernel would exclude every hit.
    attr.set_exclude_hv(1);
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    attr.set_watermark(1);
    attr.__bindgen_anon_2.wakeup_watermark = (data_pages * page_size() / 4) as u32;
    attr
}

/// The enter and exit events' attrs (`stacks`: the enter event with the call chain).
fn attrs(ids: Ids, arming: Arming, data_pages: usize, stacks: bool) -> (b::perf_event_attr, b::perf_event_attr) {
    let ((enter, top), (exit, bottom)) = if stacks { ((CHAIN_FRAMES, STACK_TOP), (1, 8)) } else { ((0, 0), (0, 0)) };
    (attr(ids.enter, arming, data_pages, enter, top), attr(ids.exit, arming, data_pages, exit, bottom))
}

fn open(attr: &b::perf_event_attr, pid: libc::pid_t, cpu: i32) -> io::Result<OwnedFd> {
    let mut attr = *attr;
    // SAFETY: attr is initialised; the event only observes.
    let fd = unsafe { sys::perf_event_open(&mut attr, pid, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as libc::c_ulong) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned to us and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Can this process record system calls? `Err`: why not, in a few words (tracefs unreadable,
/// the kernel's policy), for the report's hint.
pub fn available() -> Result<(), String> {
    let ids = tracepoint_ids().map_err(|e| format!("the raw_syscalls tracepoints cannot be read in tracefs ({e})"))?;
    // A disabled event on profil itself, closed at once: what the kernel allows.
    open(&attr(ids.enter, Arming::Process { at_exec: true }, MIN_DATA_PAGES, 0, 0), 0, -1).map(drop).map_err(|e| format!("the kernel refuses their events ({e})"))
}

/// One side of a call: a record of a tracepoint; an enter's user call chain and stack top
/// under `-g`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edge {
    time: u64,
    pid: u32,
    tid: u32,
    enter: bool,
    nr: i64,
    /// An exit's return value.
    ret: i64,
    chain: Vec<u64>,
    copy: Option<(UserRegs, Vec<u8>)>,
}

/// A call entered and not yet left: its process, number, start, call chain and stack top.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Open {
    pid: u32,
    nr: i64,
    time: u64,
    chain: Vec<u64>,
    copy: Option<(UserRegs, Vec<u8>)>,
}

/// Whose calls are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Whose {
    /// The program's (pid), and with `children` those of the processes it starts.
    Program { pid: u32, children: bool },
    /// Every process's but this one's (`-a`: profil's own, every thread of it).
    AllBut(u32),
}

/// The system calls of a session's processes: the rings, and each thread's call under way.
pub struct SyscallTracer {
    rings: Vec<Ring>,
    ids: Ids,
    whose: Whose,
    /// Each thread's call entered and not yet left, by tid.
    open: BTreeMap<u32, Open>,
    /// Records stamped after the latest reading of the clock, for the next batch.
    held: Vec<Edge>,
}

impl SyscallTracer {
    /// The events on process `pid` (and, `children`, those it starts) from its exec or now:
    /// [`crate::perf_event::PerfConfig::requests`]. `stacks` (`-g`): each call's user call chain.
    pub fn open(pid: u32, from: CountFrom, children: bool, stacks: bool) -> io::Result<Box<dyn RequestRings>> {
        Ok(Box::new(SyscallTracer::start(pid, from, children, stacks)?))
    }

    /// The events on every task of every CPU, from now (`-a`, as `perf trace -a`): the calls
    /// of every process but `but`'s (profil's own). `stacks` (`-g`): each call's user chain.
    pub fn system_wide(but: u32, stacks: bool) -> io::Result<SyscallTracer> {
        let ids = tracepoint_ids()?;
        let mut data_pages = if stacks { SYSTEM_DATA_PAGES * STACKS_SCALE } else { SYSTEM_DATA_PAGES };
        let rings = loop {
            let (enter, exit) = attrs(ids, Arming::System, data_pages, stacks);
            // One "thread", every task (-1), on each CPU in turn.
            let opened = rings_on(0, &[0], data_pages, attr_format(&enter), |_, cpu| Ok(vec![open(&enter, -1, cpu)?, open(&exit, -1, cpu)?]));
            match opened {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) && data_pages > MIN_DATA_PAGES => data_pages /= 2,
                other => break other?,
            }
        };
        Ok(SyscallTracer { rings, ids, whose: Whose::AllBut(but), open: BTreeMap::new(), held: Vec::new() })
    }

    fn start(pid: u32, from: CountFrom, children: bool, stacks: bool) -> io::Result<SyscallTracer> {
        let ids = tracepoint_ids()?;
        let threads = match from {
            CountFrom::Exec => vec![pid],
            CountFrom::Now => threads_of(pid)?,
        };
        let mut data_pages = if stacks { DATA_PAGES * STACKS_SCALE } else { DATA_PAGES };
        let rings = loop {
            let (enter, exit) = attrs(ids, Arming::Process { at_exec: from == CountFrom::Exec }, data_pages, stacks);
            let opened = rings_on(pid, &threads, data_pages, attr_format(&enter), |tid, cpu| {
                Ok(vec![open(&enter, tid as libc::pid_t, cpu)?, open(&exit, tid as libc::pid_t, cpu)?])
            });
            match opened {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) && data_pages > MIN_DATA_PAGES => data_pages /= 2,
                other => break other?,
            }
        };
        Ok(SyscallTracer { rings, ids, whose: Whose::Program { pid, children }, open: BTreeMap::new(), held: Vec::new() })
    }


    /// The calls ended up to `until` (ns of the events' clock, read before the rings) into
    /// `batch`; with `last`, every record there is, and the calls still under way unfinished.
    /// `unwind`: a call's stack top unwound (`-g`), where the caller can.
    fn take(&mut self, until: u64, last: bool, batch: &mut RequestsBatch, unwind: &mut Unwind) {
        batch.source = Some(RequestSource::SystemCalls);
        let mut edges = std::mem::take(&mut self.held);
        for ring in &mut self.rings {
            for r in ring.drain() {
                match r {
                    Record::Syscall { pid, tid, time, event, nr, ret, chain, copy } if event == self.ids.enter || event == self.ids.exit => {
                        let enter = event == self.ids.enter;
                        let (chain, copy) = if enter { (chain, copy) } else { (Vec::new(), None) };
                        edges.push(Edge { time, pid, tid, enter, nr, ret, chain, copy });
                    }
                    Record::Lost(n) => batch.lost = batch.lost.saturating_add(n),
                    _ => {}
                }
            }
        }
        edges.retain(|e| match self.whose {
            Whose::Program { pid, children } => e.pid == pid || children,
            Whose::AllBut(pid) => e.pid != pid,
        });
        // In time order (stable: a thread's two records of one instant stay as written).
        edges.sort_by_key(|e| e.time);
        if !last {
            let now = edges.partition_point(|e| e.time <= until);
            self.held = edges.split_off(now);
        }
        for e in edges {
            self.pair(e, batch, unwind);
        }
        if last {
            for (_, o) in std::mem::take(&mut self.open) {
                batch.unfinished.push(o.pid);
            }
        }
    }

    /// One record: a call entered, or one left (timed where its start was seen).
    fn pair(&mut self, e: Edge, batch: &mut RequestsBatch, unwind: &mut Unwind) {
        if e.enter {
            // A thread enters a call only after leaving its last: a start whose end never came
            // (records lost) is unfinished.
            if let Some(o) = self.open.insert(e.tid, Open { pid: e.pid, nr: e.nr, time: e.time, chain: e.chain, copy: e.copy }) {
                batch.unfinished.push(o.pid);
            }
            return;
        }
        match self.open.remove(&e.tid) {
            // rt_sigreturn leaves with the number -1: it restored the registers the signal
            // interrupted, the call's number among them, and -1 keeps it from restarting.
            Some(o) if o.nr == e.nr || e.nr == -1 => {
                let key = RequestKey::call(call_name(o.nr));
                let unwound = o.copy.and_then(|(regs, bytes)| unwind(o.pid, regs, &bytes));
                let stack = joined(o.chain, unwound.map(|u| u.frames).unwrap_or_default());
                let stacks = !stack.is_empty();
                if stacks {
                    batch.stacks.push((batch.done.len(), stack));
                }
                // An exec that succeeded (under -g): the stacks so far are of the image it
                // replaced, its own among them.
                if stacks && EXECS.contains(&o.nr) && e.ret == 0 {
                    batch.execs.push((o.pid, batch.stacks.len()));
                }
                batch.done.push(Request { pid: o.pid, tid: e.tid, key, from: o.time, to: e.time, taken_by: None, site: Default::default(), served: None });
            }
            Some(o) => batch.unfinished.extend([o.pid, e.pid]),
            None => batch.unfinished.push(e.pid),
        }
    }
}

impl RequestRings for SyscallTracer {
    fn rings(&self) -> Vec<&OwnedFd> {
        self.rings.iter().map(|r| &r.fd).collect()
    }

    fn collect(&mut self, until: u64, last: bool, batch: &mut RequestsBatch, unwind: &mut Unwind) {
        self.take(until, last, batch, unwind);
    }
}

/// A call's stack: the frames its stack top's unwind found (by the objects' unwind tables,
/// through code that keeps no frame pointer: the C library's wrappers), where it went past the
/// call's own address, then the kernel's frame-pointer chain on from the unwind's last frame
/// where the chain has it; else the chain alone. Runtime addresses, innermost first.
fn joined(chain: Vec<u64>, unwound: Vec<u64>) -> Vec<u64> {
    let Some(&last) = unwound.last().filter(|_| unwound.len() >= 2) else { return chain };
    let mut frames = unwound;
    if let Some(i) = chain.iter().skip(1).position(|&a| a == last) {
        frames.extend_from_slice(&chain[i + 2..]);
    }
    frames
}

/// x86-64's `execve` and `execveat`.
const EXECS: [i64; 2] = [59, 322];

/// A call's name (`read`), or its number where it has none here (`syscall 1000`).
fn call_name(nr: i64) -> std::borrow::Cow<'static, str> {
    match u64::try_from(nr).ok().and_then(crate::off_cpu::syscall_name) {
        Some(name) => name.into(),
        None => format!("syscall {nr}").into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDS: Ids = Ids { enter: 10, exit: 11 };

    fn tracer(children: bool) -> SyscallTracer {
        SyscallTracer { rings: Vec::new(), ids: IDS, whose: Whose::Program { pid: 7, children }, open: BTreeMap::new(), held: Vec::new() }
    }

    fn edge(time: u64, pid: u32, tid: u32, enter: bool, nr: i64) -> Edge {
        Edge { time, pid, tid, enter, nr, ret: 0, chain: Vec::new(), copy: None }
    }

    /// Records as the rings would give them, in no order, through the tracer's pairing.
    fn run(t: &mut SyscallTracer, edges: &[Edge], until: u64, last: bool) -> RequestsBatch {
        t.held.extend_from_slice(edges);
        let mut b = RequestsBatch::default();
        t.take(until, last, &mut b, &mut |_, _, _| None);
        b
    }

    #[test]
    fn calls_pair_per_thread_in_time_order_across_batches() {
        let mut t = tracer(false);
        // Thread 7 reads (0: read) from 100 to 250, on two CPUs: the exit's ring came first.
        // Thread 8 writes (1) from 120, and leaves it at 400, after the batch's reading (300).
        let b = run(&mut t, &[edge(250, 7, 7, false, 0), edge(120, 7, 8, true, 1), edge(100, 7, 7, true, 0), edge(400, 7, 8, false, 1)], 300, false);
        assert_eq!(b.done, [Request { pid: 7, tid: 7, key: RequestKey::call("read"), from: 100, to: 250, taken_by: None, site: Default::default(), served: None }]);
        assert!(b.unfinished.is_empty());
        // The next batch ends thread 8's write; a child's calls are not the program's.
        let b = run(&mut t, &[edge(410, 9, 9, true, 0), edge(420, 9, 9, false, 0)], 500, false);
        assert_eq!(b.done, [Request { pid: 7, tid: 8, key: RequestKey::call("write"), from: 120, to: 400, taken_by: None, site: Default::default(), served: None }]);
        // The last: exit_group (231) entered, never left; an end without its start (the exec,
        // 59, begun before the events were armed).
        let b = run(&mut t, &[edge(600, 7, 7, true, 231), edge(550, 7, 8, false, 59)], 0, true);
        assert!(b.done.is_empty());
        assert_eq!(b.unfinished, [7, 7]);
        assert_eq!(b.source, Some(RequestSource::SystemCalls));
    }

    #[test]
    fn children_are_kept_where_followed_and_odd_pairs_are_unfinished() {
        let mut t = tracer(true);
        // A child (pid 9): its return from clone (56) without a start, then a read.
        let b = run(&mut t, &[edge(10, 9, 9, false, 56), edge(20, 9, 9, true, 0), edge(30, 9, 9, false, 0)], 100, false);
        assert_eq!(b.done, [Request { pid: 9, tid: 9, key: RequestKey::call("read"), from: 20, to: 30, taken_by: None, site: Default::default(), served: None }]);
        assert_eq!(b.unfinished, [9]);
        // An exit of another call than the one entered (records lost): neither is timed; a
        // second enter before an exit: the first is unfinished.
        let b = run(&mut t, &[edge(110, 7, 7, true, 0), edge(120, 7, 7, false, 1), edge(130, 7, 7, true, 3), edge(140, 7, 7, true, 3)], 200, false);
        assert!(b.done.is_empty());
        assert_eq!(b.unfinished, [7, 7, 7]);
        // rt_sigreturn (15) leaves as call -1.
        let b = run(&mut t, &[edge(150, 7, 7, false, 3), edge(160, 7, 7, true, 15), edge(170, 7, 7, false, -1)], 200, false);
        assert_eq!(b.done, [Request { pid: 7, tid: 7, key: RequestKey::call("close"), from: 140, to: 150, taken_by: None, site: Default::default(), served: None }, Request { pid: 7, tid: 7, key: RequestKey::call("rt_sigreturn"), from: 160, to: 170, taken_by: None, site: Default::default(), served: None }]);
        assert_eq!(call_name(100_000), "syscall 100000");
        assert_eq!(call_name(-1), "syscall -1");
    }

    #[test]
    fn an_enter_s_call_chain_goes_with_its_call_and_every_process_but_one_is_kept_system_wide() {
        let mut t = SyscallTracer { whose: Whose::AllBut(9), ..tracer(false) };
        let with_chain = |mut e: Edge, chain: &[u64]| {
            e.chain = chain.to_vec();
            e
        };
        // Process 5 writes from a chain; process 9 (profil's own) reads; process 6 reads with
        // no chain recorded (none asked for).
        let edges = [
            with_chain(edge(10, 5, 50, true, 1), &[0x7f00_1010, 0x5000_1234, 0x5000_2000]),
            edge(20, 5, 50, false, 1),
            edge(30, 9, 9, true, 0),
            edge(40, 9, 9, false, 0),
            edge(50, 6, 60, true, 0),
            edge(60, 6, 60, false, 0),
        ];
        let b = run(&mut t, &edges, 100, false);
        assert_eq!(b.done, [
            Request { pid: 5, tid: 50, key: RequestKey::call("write"), from: 10, to: 20, taken_by: None, site: Default::default(), served: None },
            Request { pid: 6, tid: 60, key: RequestKey::call("read"), from: 50, to: 60, taken_by: None, site: Default::default(), served: None }
        ]);
        assert_eq!(b.stacks, [(0, vec![0x7f00_1010, 0x5000_1234, 0x5000_2000])], "the first request's");
        // A call left unfinished takes its chain with it: no stack without a request.
        let b = run(&mut t, &[with_chain(edge(110, 5, 50, true, 0), &[0x7f00_1010])], 0, true);
        assert!(b.done.is_empty() && b.stacks.is_empty());
        assert_eq!(b.unfinished, [5]);
    }

    /// The enter event asks for the user chain under -g, the exit for a chain of one (the same
    /// record layout in the ring they share); without -g neither does.
    #[test]
    fn the_chain_is_asked_of_the_enter_event_under_g() {
        let ids = Ids { enter: 1, exit: 2 };
        let chain = b::PERF_SAMPLE_CALLCHAIN as u64;
        let (enter, exit) = attrs(ids, Arming::Process { at_exec: true }, 16, true);
        assert_eq!((enter.sample_type & chain, exit.sample_type & chain), (chain, chain));
        assert_eq!((enter.sample_max_stack, exit.sample_max_stack), (CHAIN_FRAMES, 1));
        assert_eq!((enter.sample_stack_user, exit.sample_stack_user, enter.sample_regs_user), (STACK_TOP, 8, exit.sample_regs_user));
        assert_eq!((enter.exclude_callchain_kernel(), enter.inherit(), enter.enable_on_exec()), (1, 1, 1));
        let (enter, exit) = attrs(ids, Arming::System, 16, false);
        assert_eq!((enter.sample_type & chain, exit.sample_type & chain), (0, 0));
        assert_eq!((enter.inherit(), enter.disabled(), exit.inherit()), (0, 0, 0));
    }

    /// An enter record under -g as the kernel writes it (thread, time, the user chain with its
    /// marker, the raw data, the user registers and stack top), read by perf_event's reader with
    /// the event's own layout: the chain without its marker, the bytes the kernel copied; the
    /// exit's (a chain of one, 8 bytes) is read alike and not kept.
    #[test]
    fn an_enter_record_s_chain_is_read() {
        use linux_perf_event_reader::RawData;
        let (enter, exit) = attrs(IDS, Arming::Process { at_exec: true }, 16, true);
        let words = |w: &[u64]| w.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>();
        // The sample's fields in their order: tid, time, callchain, raw, user regs, user stack.
        let record = |event: u16, chain: &[u64], stack: &[u8]| {
            let mut body = words(&[7 | 8 << 32, 99, chain.len() as u64]);
            body.extend(words(chain));
            // The raw data: its size, then common_type and the other common fields, the call's
            // number at 8, the exit's return value (the enter's first argument) at 16, padded
            // to 8 bytes with the size.
            let mut raw = vec![0u8; 28];
            raw[..2].copy_from_slice(&event.to_ne_bytes());
            raw[8..16].copy_from_slice(&1i64.to_ne_bytes());
            raw[16..24].copy_from_slice(&(-9i64).to_ne_bytes());
            body.extend_from_slice(&28u32.to_ne_bytes());
            body.extend(raw);
            // abi 2 (64-bit): bp, sp, ip; the stack's size, its bytes, the bytes copied.
            body.extend(words(&[2, 0x7ff8, 0x7ff0, 0x7f00_1010, stack.len() as u64]));
            body.extend_from_slice(stack);
            body.extend(words(&[stack.len() as u64 / 2]));
            body
        };
        let user = b::PERF_CONTEXT_USER;
        let regs = UserRegs { bp: 0x7ff8, sp: 0x7ff0, ip: 0x7f00_1010 };
        let body = record(IDS.enter, &[user, 0x7f00_1010, 0x5000_1234], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 9, 9, 9, 9]);
        let r = crate::perf_event::parse_record(b::PERF_RECORD_SAMPLE, 0, RawData::Single(&body), &attr_format(&enter));
        assert_eq!(r, Some(Record::Syscall { pid: 7, tid: 8, time: 99, event: IDS.enter, nr: 1, ret: -9, chain: vec![0x7f00_1010, 0x5000_1234], copy: Some((regs, vec![1, 2, 3, 4, 5, 6, 7, 8])) }));
        let body = record(IDS.exit, &[user, 0x7f00_1012], &[0; 8]);
        let r = crate::perf_event::parse_record(b::PERF_RECORD_SAMPLE, 0, RawData::Single(&body), &attr_format(&exit));
        assert_eq!(r, Some(Record::Syscall { pid: 7, tid: 8, time: 99, event: IDS.exit, nr: 1, ret: -9, chain: vec![0x7f00_1012], copy: Some((regs, vec![0; 4])) }));
    }

    /// A call's stack: the unwind of its stack top where it went past the call's address, the
    /// chain on from its last frame; else the chain. The stack's top, unwound by the process's
    /// unwinder, goes with the call it was copied at.
    #[test]
    fn a_call_s_stack_is_its_unwound_top_then_the_chain() {
        // The chain skipped log_line (0x5010): write's wrapper keeps no frame.
        let chain = vec![0x7f00_1010, 0x5100, 0x7f00_9000];
        assert_eq!(joined(chain.clone(), vec![0x7f00_1010, 0x5010, 0x5100]), [0x7f00_1010, 0x5010, 0x5100, 0x7f00_9000]);
        // The unwind ended where the chain has no frame: the unwind alone.
        assert_eq!(joined(chain.clone(), vec![0x7f00_1010, 0x5010, 0x6000]), [0x7f00_1010, 0x5010, 0x6000]);
        // No further than the call's own address, or none: the chain.
        assert_eq!(joined(chain.clone(), vec![0x7f00_1010]), chain);
        assert_eq!(joined(chain.clone(), Vec::new()), chain);
        assert_eq!(joined(Vec::new(), Vec::new()), Vec::<u64>::new());
        let mut t = tracer(false);
        let regs = UserRegs { ip: 0x7f00_1010, sp: 0x7ff0, bp: 0x7ff8 };
        let mut enter = edge(10, 7, 7, true, 1);
        (enter.chain, enter.copy) = (chain.clone(), Some((regs, vec![1, 2, 3])));
        t.held.extend([enter, edge(20, 7, 7, false, 1)]);
        let mut b = RequestsBatch::default();
        let mut asked = Vec::new();
        t.take(100, false, &mut b, &mut |pid, r, bytes| {
            asked.push((pid, r, bytes.to_vec()));
            Some(prof_core::sample::CallStack { frames: vec![0x7f00_1010, 0x5010, 0x5100], truncated: false })
        });
        assert_eq!(asked, [(7, regs, vec![1, 2, 3])]);
        assert_eq!(b.stacks, [(0, vec![0x7f00_1010, 0x5010, 0x5100, 0x7f00_9000])]);
        assert_eq!((b.done[0].pid, &b.done[0].key), (7, &RequestKey::call("write")));
    }

    /// An execve that succeeded ends the stacks of the image it replaced (after its own); one
    /// that failed does not.
    #[test]
    fn a_successful_exec_is_marked_among_the_stacks() {
        let mut t = tracer(true);
        let with = |mut e: Edge, chain: &[u64], ret: i64| {
            (e.chain, e.ret) = (chain.to_vec(), ret);
            e
        };
        let edges = [
            with(edge(10, 9, 9, true, 59), &[0x10], 0),
            with(edge(20, 9, 9, false, 59), &[], -2),
            with(edge(30, 9, 9, true, 59), &[0x10], 0),
            with(edge(40, 9, 9, false, 59), &[], 0),
            with(edge(50, 9, 9, true, 0), &[0x20], 0),
            edge(60, 9, 9, false, 0),
        ];
        let b = run(&mut t, &edges, 100, false);
        assert_eq!(b.stacks.len(), 3);
        assert_eq!(b.execs, [(9, 2)]);
        // Without stacks (no -g), no marks.
        let b = run(&mut t, &[edge(110, 9, 9, true, 59), edge(120, 9, 9, false, 59)], 200, false);
        assert!(b.execs.is_empty() && b.done.len() == 1);
    }

    /// As root (CI runs as root): the tracepoints open, and a call of this very process's
    /// children is recorded. Elsewhere the reason they cannot is said.
    #[test]
    fn the_tracepoints_open_where_allowed() {
        match available() {
            Ok(()) => assert!(tracepoint_ids().is_ok()),
            Err(why) => {
                // SAFETY: geteuid has no preconditions.
                assert_ne!(unsafe { libc::geteuid() }, 0, "root cannot record system calls: {why}");
            }
        }
    }
}
