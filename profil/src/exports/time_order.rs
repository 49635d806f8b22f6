//! The run in time order with its functions named, for the exports that keep the order (the
//! per-sample dump, speedscope's evented profiles): each sample's stack as names, root first,
//! each distinct stack named once. A sample on a CPU is its call stack (`-g`) or its function;
//! a look at a blocked thread is the wait's stack ending in its `[off-CPU: call]` frame, as the
//! folded stacks write waits. Each frame keeps where it is (its object and address), for the
//! exports that give addresses (the Firefox Profiler's file).

use rustc_hash::FxHashMap as HashMap;

use prof_objects::symbolize::Location;

use crate::naming::Names;

use super::collapsed::{off_cpu_frame, TRUNCATED};
use crate::timeline::At;
use crate::profile::{Frame, Profile, Stack};

/// One sample: ns from the program's start, its thread, on a CPU or not, its stack (an index
/// of [`NamedTimeline::stacks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedSample {
    pub time: u64,
    pub tid: u32,
    pub on_cpu: bool,
    pub stack: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedTimeline {
    /// The program's span, ns.
    pub span: u64,
    pub samples: Vec<NamedSample>,
    /// Stacks, root first.
    pub stacks: Vec<Vec<NamedFrame>>,
    /// The wait site (an index of the profile's `wait_sites`) of each stack that is a wait's.
    pub waits: Vec<Option<u32>>,
    /// The processes the program started (`--children`), each in time order from the
    /// program's start, where an export takes them.
    pub processes: Vec<ProcessTimeline>,
    /// Whole waits, where the backend times both ends (Redox), in the order they began.
    pub spans: Vec<NamedWait>,
    /// A daemon's work for the program (Redox): each request, whole, with the wait it served.
    pub served: Vec<NamedServed>,
    /// Its requests (`--requests`), whole, where the run kept their times, in the order they
    /// ended.
    pub requests: Vec<NamedRequest>,
    /// Redox: the requests of the run's its threads took, whole (`tid` the thread that took
    /// each, `caller` whose it was), each in the same flow as its caller's.
    pub taken: Vec<NamedRequest>,
}

/// A request of thread `tid` to `to` (a system call; a scheme, and `server`, the daemon that
/// served it), from `from` to `till` (ns from the program's start). On Redox, `flow` names it
/// on both its tracks, the caller's and the daemon's; on the daemon's, `caller` is the
/// process and thread it was for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedRequest {
    pub tid: u32,
    pub from: u64,
    pub till: u64,
    pub to: String,
    pub server: Option<String>,
    pub flow: Option<String>,
    pub caller: Option<(u32, u32)>,
}

/// The flow a request kept whole is in: its place among them (one id a request, both ends).
fn flow_of(i: usize, r: &prof_core::requests::Request) -> Option<String> {
    r.taken_by.map(|_| format!("request-{i}"))
}

/// Process `pid`'s requests that `log` kept whole.
fn requests_of(log: Option<&prof_core::requests::RequestLog>, pid: u32) -> Vec<NamedRequest> {
    let timed = log.map_or(&[][..], |l| &l.timed[..]);
    timed
        .iter()
        .enumerate()
        .filter(|(_, r)| r.pid == pid)
        .map(|(i, r)| NamedRequest { tid: r.tid, from: r.from, till: r.to, to: r.key.to.to_string(), server: r.key.server.clone(), flow: flow_of(i, r), caller: None })
        .collect()
}

/// The requests that daemon `pid`'s threads took (Redox), each on the thread that took it.
fn taken_by(log: Option<&prof_core::requests::RequestLog>, pid: u32) -> Vec<NamedRequest> {
    let timed = log.map_or(&[][..], |l| &l.timed[..]);
    timed
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let (_, tid) = r.taken_by.filter(|t| t.0 == pid)?;
            let to = r.key.to.to_string();
            Some(NamedRequest { tid, from: r.from, till: r.to, to, server: r.key.server.clone(), flow: flow_of(i, r), caller: Some((r.pid, r.tid)) })
        })
        .collect()
}

/// A daemon's thread `tid` working from `from` to `to` (ns from the program's start) for the
/// program's thread `for_tid`, which waited in `call` on `target` (empty where not known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedServed {
    pub tid: u32,
    pub from: u64,
    pub to: u64,
    pub for_tid: u32,
    pub call: String,
    pub target: String,
}

/// A thread blocked from `from` to `to` (ns from the program's start); `stack` is its wait's
/// (an index of [`NamedTimeline::stacks`], whose wait site [`NamedTimeline::waits`] gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedWait {
    pub tid: u32,
    pub from: u64,
    pub to: u64,
    pub stack: u32,
}

/// A followed process's samples in time order, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessTimeline {
    pub pid: u32,
    /// Its program's path.
    pub program: String,
    pub timeline: NamedTimeline,
}

/// A frame of a stack: its name, and where it is where it is code (not a label such as
/// `[kernel]` or `[off-CPU: call]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFrame {
    pub name: String,
    pub place: Option<Place>,
}

impl NamedFrame {
    pub fn label(name: impl Into<String>) -> NamedFrame {
        NamedFrame { name: name.into(), place: None }
    }
}

/// Where a frame is: its location, and whether its address is a caller's (a return address
/// less one) rather than the sampled instruction's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub location: Location,
    pub caller: bool,
}

/// What a sample's stack is named from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Stack(u32),
    Frame(Frame),
    Kernel,
    Wait(u32),
}

/// `p`'s samples in time order, named, and (`processes`) its processes' and the daemons' that
/// worked for it (Redox).
pub fn name_with_processes(p: &Profile, names: &Names, processes: bool) -> NamedTimeline {
    let mut t = name(p, names);
    t.requests = requests_of(p.requests(), p.pid());
    if processes {
        for c in p.processes().iter().chain(p.daemons()) {
            let mut timeline = name(&c.profile, names);
            // The run's one log has every followed process's requests, and those each daemon took.
            timeline.requests = requests_of(p.requests(), c.pid);
            timeline.taken = taken_by(p.requests(), c.pid);
            // A daemon's work, named by the program's wait it served.
            timeline.served = c
                .profile
                .timeline()
                .served
                .iter()
                .map(|w| {
                    let site = w.site.and_then(|s| p.clock().wait_sites.get(s as usize));
                    let call = site.map_or_else(String::new, |s| s.call.clone());
                    let target = site.and_then(|s| s.target.clone()).unwrap_or_default();
                    NamedServed { tid: w.tid, from: w.from, to: w.to, for_tid: w.for_tid, call, target }
                })
                .collect();
            if !timeline.samples.is_empty() || !timeline.served.is_empty() || !timeline.requests.is_empty() || !timeline.taken.is_empty() {
                t.processes.push(ProcessTimeline { pid: c.pid, program: c.program.clone(), timeline });
            }
        }
        // A daemon that took the run's requests and is no process of the run (never sampled,
        // serving no wait of it): a track of its own, named as the requests name it.
        let timed = p.requests().map_or(&[][..], |l| &l.timed[..]);
        let mut daemons: Vec<(u32, String)> = timed.iter().filter_map(|r| Some((r.taken_by?.0, r.key.server.clone().unwrap_or_default()))).collect();
        daemons.sort();
        daemons.dedup_by_key(|d| d.0);
        for (pid, server) in daemons {
            if pid == p.pid() || t.processes.iter().any(|c| c.pid == pid) {
                continue;
            }
            let program = server.strip_suffix(&format!(" [pid {pid}]")).unwrap_or(&server).to_string();
            let timeline = NamedTimeline { taken: taken_by(p.requests(), pid), ..Default::default() };
            t.processes.push(ProcessTimeline { pid, program, timeline });
        }
    }
    t
}

/// `p`'s samples in time order, named.
pub fn name(p: &Profile, names: &Names) -> NamedTimeline {
    let mut ids: HashMap<Key, u32> = HashMap::default();
    let mut stacks: Vec<Vec<NamedFrame>> = Vec::new();
    let mut waits: Vec<Option<u32>> = Vec::new();
    let space = names.space(p.mappings());
    let named_frame = |f: Frame, caller: bool| {
        let named = names.frame(space, f);
        NamedFrame { name: named.name.to_string(), place: Some(Place { location: named.location.clone(), caller }) }
    };
    let named_stack = |st: &Stack| -> Vec<NamedFrame> {
        let mut names: Vec<NamedFrame> = Vec::with_capacity(st.frames.len() + 1);
        if st.truncated {
            names.push(NamedFrame::label(TRUNCATED));
        }
        let leaf = st.frames.len().saturating_sub(1);
        names.extend(st.frames.iter().rev().enumerate().map(|(i, &f)| named_frame(f, i < leaf)));
        names
    };
    // Each key's named stack, once: its number among `stacks`.
    let mut id_of = |key: Key| -> u32 {
        *ids.entry(key).or_insert_with(|| {
            let names = match key {
                Key::Stack(i) => named_stack(&p.stacks()[i as usize]),
                Key::Frame(f) => vec![named_frame(f, false)],
                Key::Kernel => vec![NamedFrame::label("[kernel]")],
                Key::Wait(site) => match p.clock().wait_sites.get(site as usize) {
                    Some(w) => {
                        let mut names = named_stack(&w.stack);
                        names.push(NamedFrame::label(off_cpu_frame(&w.call)));
                        names
                    }
                    None => vec![NamedFrame::label(off_cpu_frame("[unknown]"))],
                },
            };
            stacks.push(names);
            waits.push(match key {
                Key::Wait(site) => Some(site).filter(|&s| (s as usize) < p.clock().wait_sites.len()),
                _ => None,
            });
            (stacks.len() - 1) as u32
        })
    };
    let mut samples = Vec::with_capacity(p.timeline().samples.len());
    for s in &p.timeline().samples {
        let stack = s.stack.filter(|&i| (i as usize) < p.stacks().len());
        let key = match (s.at, stack) {
            (At::Blocked(site), _) => Key::Wait(site),
            (_, Some(i)) => Key::Stack(i),
            (At::Cpu(f), None) => Key::Frame(f),
            (At::Kernel(_), None) => Key::Kernel,
        };
        let id = id_of(key);
        samples.push(NamedSample { time: s.time, tid: s.tid, on_cpu: !matches!(s.at, At::Blocked(_)), stack: id });
    }
    let spans = p
        .timeline()
        .waits
        .iter()
        .map(|w| NamedWait { tid: w.tid, from: w.from, to: w.to, stack: id_of(Key::Wait(w.site)) })
        .collect();
    NamedTimeline { span: p.timeline().span, samples, stacks, waits, processes: Vec::new(), spans, served: Vec::new(), requests: Vec::new(), taken: Vec::new() }
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use prof_core::requests::{Request, RequestKey, RequestLog, RequestSource};

    /// Redox: a request whole is on the caller's thread and on the daemon's thread that took
    /// it, one flow; a daemon that is no process of the run (never sampled, serving no wait of
    /// the program's: a child's request) gets a process of its own, named as the key names it.
    #[test]
    fn a_request_is_on_the_callers_thread_and_the_daemons_in_one_flow() {
        let (_, names) = crate::stacks::tests::with_a_server();
        let mut log = RequestLog::new(RequestSource::SchemeRequests);
        let key = RequestKey { to: "tmp:".into(), server: Some("ramfs [pid 7]".into()) };
        log.add(Request { pid: 42, tid: 43, key: key.clone(), from: 1_000, to: 3_000, taken_by: Some((7, 70)), site: Default::default(), served: None });
        log.add(Request { pid: 50, tid: 50, key, from: 4_000, to: 5_000, taken_by: Some((7, 71)), site: Default::default(), served: None });
        let child = crate::profile::ChildProfile { pid: 50, parent: Some(42), program: "/bin/cat".into(), profile: Profile::from(Parts { pid: 50, ..Default::default() }), running: false };
        let p = Profile::from(Parts { pid: 42, requests: Some(log), processes: vec![child], ..Default::default() });
        let t = name_with_processes(&p, &names, true);
        let flows = |rs: &[NamedRequest]| rs.iter().map(|r| (r.tid, r.from, r.till, r.flow.clone(), r.caller)).collect::<Vec<_>>();
        assert_eq!(flows(&t.requests), [(43, 1_000, 3_000, Some("request-0".to_string()), None)]);
        let cat = t.processes.iter().find(|c| c.pid == 50).unwrap();
        assert_eq!(flows(&cat.timeline.requests), [(50, 4_000, 5_000, Some("request-1".to_string()), None)]);
        let ramfs = t.processes.iter().find(|c| c.pid == 7).unwrap();
        assert_eq!(ramfs.program, "ramfs");
        assert_eq!(
            flows(&ramfs.timeline.taken),
            [(70, 1_000, 3_000, Some("request-0".to_string()), Some((42, 43))), (71, 4_000, 5_000, Some("request-1".to_string()), Some((50, 50)))]
        );
        // A system call has no flow.
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        log.add(Request { pid: 42, tid: 42, key: RequestKey::call("read"), from: 0, to: 1, taken_by: None, site: Default::default(), served: None });
        let t = name_with_processes(&Profile::from(Parts { pid: 42, requests: Some(log), ..Default::default() }), &names, true);
        assert_eq!((t.requests[0].flow.as_ref(), t.processes.len()), (None, 0));
    }

    /// Every process's track finds its frames among the run's names: the program's and each
    /// child's samples over time, the same runtime address named in each child's own space.
    #[test]
    fn every_process_s_track_is_named_by_the_pass() {
        let (symbolizer, p) = crate::naming::tests::tree();
        let names = Names::of_run(symbolizer, &p, crate::naming::Wanted { timeline: true, ..Default::default() });
        let t = name_with_processes(&p, &names, true);
        assert_eq!(names.misses(), 0);
        let leaf = |t: &NamedTimeline| t.stacks[t.samples[0].stack as usize][0].name.clone();
        let children: Vec<String> = t.processes.iter().map(|c| leaf(&c.timeline)).collect();
        assert_eq!((leaf(&t), children), ("fib".to_string(), vec!["[libm.so]".to_string(), "[libc.so.6]".to_string()]));
    }
}
