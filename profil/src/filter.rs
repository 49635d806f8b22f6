//! Report filters a perf user types by habit (`--comm`, `--pids`, `--tid`, `--dso`, `--time`):
//! the run cut down to the samples they keep before anything is named or reported, so every
//! section and export of a live or loaded run says the same thing. Processes are kept by pid
//! or name (the program, its children, `-a`'s processes); threads by tid (the program's
//! samples by thread); objects by file name (or `[kernel]`); a window of the run by time (the
//! program's samples in time order, remade into every sum). The Minix bins are made again
//! from the program's samples kept.

use std::collections::BTreeMap;
use std::path::Path;

use prof_core::sampler::Mapping;

use crate::profile::{Frame, Outcome, Profile, Stack, ThreadSamples};
use crate::timeline::{At, Window};

/// What the filters keep; an empty list keeps everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// `--pids`: processes by pid.
    pub pids: Vec<u32>,
    /// `--tid`: the program's threads by tid.
    pub tids: Vec<u32>,
    /// `--comm`: processes by program name (the file's name, or its whole path).
    pub comms: Vec<String>,
    /// `--dso`: samples in these objects (a file's name or path; `[kernel]`).
    pub dsos: Vec<String>,
    /// `--time`: the samples of this window of the run.
    pub window: Option<Window>,
    /// `--percentage relative`: shares of the samples kept, not of the run's.
    pub relative: bool,
}

/// What the filters kept, as the report says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The note on standard error: how many samples were kept of how many.
    pub note: String,
    /// The program's samples the flat profile's shares are of (`--percentage absolute`, the
    /// default, as perf report's): those of the run (of its window, with `--time`), kept or
    /// not. `None`: of the samples kept (`relative`).
    pub whole: Option<u64>,
}

/// The kernel's samples, as `--dso` names them.
pub const KERNEL: &str = "[kernel]";

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.tids.is_empty() && self.comms.is_empty() && self.dsos.is_empty() && self.window.is_none()
    }

    fn keeps_process(&self, pid: u32, program: &str) -> bool {
        (self.pids.is_empty() || self.pids.contains(&pid)) && (self.comms.is_empty() || self.comms.iter().any(|c| names_program(c, program)))
    }

    fn keeps_object(&self, object: &str) -> bool {
        self.dsos.is_empty() || self.dsos.iter().any(|d| names(d, object))
    }
}

/// Does `name` (as typed) name `file`: its whole path, or its file name.
fn names(name: &str, file: &str) -> bool {
    name == file || Path::new(file).file_name().is_some_and(|f| f == name)
}

/// The kernel keeps a process's name (its comm) to 15 bytes, and ps and perf print it so.
const COMM_LEN: usize = 15;

/// Does `name` (as typed) name the program `file`: as [`names`] does, or as its comm, the
/// file's name cut to 15 bytes (`x86_64-linux-gn` for `x86_64-linux-gnu-gcc`).
fn names_program(name: &str, file: &str) -> bool {
    names(name, file)
        || (name.len() == COMM_LEN
            && Path::new(file).file_name().is_some_and(|f| f.len() > COMM_LEN && f.as_encoded_bytes().starts_with(name.as_bytes())))
}

/// Cut `run` down to what `filter` keeps. `program_file` is the file of the program's own
/// samples (its text). Returns what the report says of it (how many samples were kept, and
/// of how many its shares are); an error where a window is asked of a run whose samples have
/// no times.
pub fn apply(run: &mut Outcome, program_file: &str, filter: &Filter) -> Result<Option<Kept>, String> {
    if filter.is_empty() {
        return Ok(None);
    }
    let before = samples_of(run);
    let p = &mut run.profile;
    // The window first: it remakes the program's sums from its samples in time order, which
    // the other filters then cut.
    if let Some(window) = &filter.window {
        if !p.has_times() {
            return Err("--time needs a run whose samples have times: this one has none (a run saved by an older profil, or a profd that serves no timeline)".into());
        }
        // One window for every process of the run, on the clock they share.
        let span = p.run_span();
        let (from, to) = window.ns(span);
        keep_window(p, from, to, span);
        for c in p.parts_mut().processes.iter_mut() {
            keep_window(&mut c.profile, from, to, span);
        }
        p.parts_mut().processes.retain(|c| c.profile.ticks() > 0);
    }
    // perf report's --time drops the samples outside the window before anything is counted;
    // its other filters hide samples that still count in the total.
    let whole = (!filter.relative).then(|| flat_samples(p));
    // A system-wide run's own profile is every process's kernel samples: it stays.
    let system_wide = p.is_system_wide() && p.pid() == 0;
    if !system_wide && !filter.keeps_process(p.pid(), &run.program) {
        keep_samples(p, |_| false);
    }
    if !filter.pids.is_empty() || !filter.comms.is_empty() {
        let program = (!system_wide).then_some(run.program.as_str());
        keep_requests(p, program, filter);
    }
    p.parts_mut().processes.retain(|c| filter.keeps_process(c.pid, &c.program));
    if !filter.tids.is_empty() {
        keep_threads(p, &filter.tids);
        // A child's samples are not kept by thread: it is kept whole where its pid (its first
        // thread's tid) is listed.
        p.parts_mut().processes.retain(|c| filter.tids.contains(&c.pid));
    }
    if !filter.dsos.is_empty() {
        let program_kept = filter.keeps_object(program_file) || filter.keeps_object(&run.program);
        keep_objects(p, program_kept, filter);
        // A child's samples are all runtime addresses among its mappings.
        for c in p.parts_mut().processes.iter_mut() {
            keep_objects(&mut c.profile, false, filter);
        }
    }
    let after = samples_of(run);
    let note = format!("Note: the report is of the samples {} keeps: {after} of {before}.", described(filter));
    let whole = whole.filter(|&w| w != flat_samples(&run.profile));
    Ok(Some(Kept { note, whole }))
}

/// The requests of the processes `filter` keeps: the program's (named `program`, where the run
/// has one), each other process's by its pid and program, a process the run has no other
/// record of (none of its samples, its start or its exec was seen) by its pid alone.
fn keep_requests(p: &mut Profile, program: Option<&str>, filter: &Filter) {
    let parts = p.parts_mut();
    let programs: BTreeMap<u32, &str> = parts.processes.iter().map(|c| (c.pid, c.program.as_str())).chain(program.map(|name| (parts.pid, name))).collect();
    if let Some(log) = parts.requests.as_mut() {
        log.retain(|pid| filter.keeps_process(pid, programs.get(&pid).copied().unwrap_or("")));
    }
}

/// The samples a process's flat profile is made of: by address, in its text, elsewhere and
/// in the kernel.
fn flat_samples(p: &Profile) -> u64 {
    count(p.image_samples()).saturating_add(count(p.foreign_samples())).saturating_add(count(p.kernel_samples()))
}

/// The samples of (address, samples) pairs, summed (saturating: counts read back from a
/// scheme's files are not trusted to add up).
fn count(samples: &[(u64, u64)]) -> u64 {
    samples.iter().fold(0u64, |n, s| n.saturating_add(s.1))
}

/// The filters as typed.
fn described(f: &Filter) -> String {
    let ids = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>();
    let window = f.window.map(|w| vec![w.to_string()]).unwrap_or_default();
    [("--comm", f.comms.clone()), ("--pids", ids(&f.pids)), ("--tid", ids(&f.tids)), ("--dso", f.dsos.clone()), ("--time", window)]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(option, v)| format!("{option} {}", v.join(",")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every sample of the run: the program's, its children's (or `-a`'s processes').
fn samples_of(run: &Outcome) -> u64 {
    run.profile.processes().iter().fold(run.profile.ticks(), |n, c| n.saturating_add(c.profile.ticks()))
}

/// Keep the frames `keep` says of the program's own samples (by address, by thread, the
/// stacks by their sampled frame); the counts and the bins follow.
fn keep_samples(p: &mut Profile, keep: impl Fn(&Frame) -> bool) {
    p.parts_mut().image_samples.retain(|&(a, _)| keep(&Frame::Program(a)));
    p.parts_mut().foreign_samples.retain(|&(a, _)| keep(&Frame::Foreign(a)));
    p.parts_mut().kernel_samples.retain(|&(a, _)| keep(&Frame::Kernel(a)));
    retain_stacks(p, |s| s.frames.first().is_some_and(&keep));
    for t in p.parts_mut().by_thread.iter_mut() {
        t.samples.retain(|(f, _)| keep(f));
    }
    p.parts_mut().by_thread.retain(|t| !t.samples.is_empty());
    // In time order too; a look at a blocked thread is in no object: it stays while any of
    // the program's samples do.
    let any = !(p.image_samples().is_empty() && p.foreign_samples().is_empty() && p.kernel_samples().is_empty() && p.by_thread().is_empty());
    p.parts_mut().timeline.samples.retain(|s| match s.at {
        At::Cpu(f) => keep(&f),
        At::Kernel(a) => keep(&Frame::Kernel(a)),
        At::Blocked(_) => any,
    });
    recount(p);
}

/// Keep the stacks `keep` says; the samples in time order name their stacks by place, so
/// their numbers follow.
fn retain_stacks(p: &mut Profile, keep: impl Fn(&Stack) -> bool) {
    let mut kept = 0u32;
    let number: Vec<Option<u32>> = p
        .stacks()
        .iter()
        .map(|s| {
            keep(s).then(|| {
                kept += 1;
                kept - 1
            })
        })
        .collect();
    let mut i = 0;
    p.parts_mut().stacks.retain(|_| {
        i += 1;
        number[i - 1].is_some()
    });
    for s in p.parts_mut().timeline.samples.iter_mut() {
        s.stack = s.stack.and_then(|n| number.get(n as usize).copied().flatten());
    }
}

/// The ticks and the Minix bins, from the samples kept.
fn recount(p: &mut Profile) {
    p.parts_mut().user_ticks = count(p.image_samples()).saturating_add(count(p.foreign_samples()));
    if p.kernel_ticks().is_some() {
        p.parts_mut().kernel_ticks = Some(count(p.kernel_samples()));
    }
    if let Some(layout) = p.data().layout() {
        let mut data = prof_core::ProfData::new(&layout);
        for &(a, n) in p.image_samples() {
            if let Some(b) = layout.bin_of(a) {
                data.bin[b] = data.bin[b].saturating_add(n);
            }
        }
        p.parts_mut().data = data;
    }
}

/// `--tid`: the program's samples of these threads (its samples by thread); its stacks,
/// which are not kept by thread, go.
fn keep_threads(p: &mut Profile, tids: &[u32]) {
    p.parts_mut().by_thread.retain(|t| tids.contains(&t.tid));
    let kept: Vec<(Frame, u64)> = p.by_thread().iter().flat_map(|t| t.samples.iter().copied()).collect();
    set_samples(p, kept);
    retain_stacks(p, |_| false);
    p.parts_mut().timeline.samples.retain(|s| tids.contains(&s.tid));
    p.parts_mut().timeline.waits.retain(|w| tids.contains(&w.tid));
    p.parts_mut().clock.threads.retain(|t| tids.contains(&t.tid));
    recount(p);
}

/// The program's samples, by place (its text, elsewhere, the kernel), made of `frames`' counts.
fn set_samples(p: &mut Profile, frames: impl IntoIterator<Item = (Frame, u64)>) {
    let mut places: [BTreeMap<u64, u64>; 3] = Default::default();
    for (f, n) in frames {
        let (place, a) = match f {
            Frame::Program(a) => (0, a),
            Frame::Foreign(a) => (1, a),
            Frame::Kernel(a) => (2, a),
        };
        let count = places[place].entry(a).or_insert(0);
        *count = count.saturating_add(n);
    }
    let [image, foreign, kernel] = places.map(|m| m.into_iter().collect());
    let parts = p.parts_mut();
    (parts.image_samples, parts.foreign_samples, parts.kernel_samples) = (image, foreign, kernel);
}

/// `--time`: a process's samples from `from` to `to` (ns from the program's start), every sum
/// of them made again from its samples in time order (the bins, the flat profile, the
/// stacks, the threads). What is not made of samples in time order (the clock, the waits by
/// the clock, the daemons) is of the whole run: it goes. The processes it started are cut by
/// the caller, each in its own time order.
fn keep_window(p: &mut Profile, from: u64, to: u64, span: u64) {
    let kept = p.timeline().between(from, to).to_vec();
    // Each stack's samples in the window, by its place among the run's stacks.
    let mut stacks: BTreeMap<u32, u64> = BTreeMap::new();
    let mut threads: BTreeMap<u32, BTreeMap<Frame, u64>> = BTreeMap::new();
    let mut unnamed_kernel = 0u64;
    for s in &kept {
        let frame = match s.at {
            At::Cpu(f) => f,
            At::Kernel(a) => {
                // The kernel's tick, not a sample of it: the thread's as the sampler counted it.
                unnamed_kernel += 1;
                *threads.entry(s.tid).or_default().entry(Frame::Kernel(a)).or_insert(0) += 1;
                continue;
            }
            At::Blocked(_) => continue,
        };
        *threads.entry(s.tid).or_default().entry(frame).or_insert(0) += 1;
        if let Some(st) = s.stack {
            *stacks.entry(st).or_insert(0) += 1;
        }
    }
    set_samples(p, kept.iter().filter_map(|s| match s.at {
        At::Cpu(f) => Some((f, 1)),
        _ => None,
    }));
    p.parts_mut().timeline.samples = kept;
    p.parts_mut().timeline.waits.retain(|w| w.from < to && w.to > from);
    // The requests that began in the window, counted again from those kept whole.
    p.parts_mut().requests = p.parts_mut().requests.take().map(|log| log.within(from, to));
    for (i, st) in p.parts_mut().stacks.iter_mut().enumerate() {
        st.count = stacks.get(&(i as u32)).copied().unwrap_or(0);
    }
    retain_stacks(p, |st| st.count > 0);
    let names: BTreeMap<u32, String> = p.by_thread().iter().map(|t| (t.tid, t.name.clone())).collect();
    p.parts_mut().by_thread = threads
        .into_iter()
        .map(|(tid, samples)| ThreadSamples { tid, name: names.get(&tid).cloned().unwrap_or_default(), samples: samples.into_iter().collect() })
        .collect();
    p.parts_mut().clock.threads.clear();
    p.parts_mut().children = (0, 0);
    p.parts_mut().servers = None;
    p.parts_mut().clock.served.clear();
    recount(p);
    // Kernel ticks without their addresses are counted in time order too.
    if let Some(k) = p.parts_mut().kernel_ticks.as_mut() {
        *k = k.saturating_add(unnamed_kernel);
    }
    // The window's time, as the run's: the report's time line is of the window.
    p.parts_mut().clock.elapsed = Some(std::time::Duration::from_nanos(to.min(span).saturating_sub(from.min(span))));
}

/// `--dso`: the program's samples in the objects kept. `[kernel]` keeps the kernel's ticks
/// whether or not their addresses were recorded (named with `--kernel`).
fn keep_objects(p: &mut Profile, program_kept: bool, filter: &Filter) {
    let mappings = p.mappings().to_vec();
    let kernel_kept = filter.keeps_object(KERNEL);
    let named = count(p.kernel_samples());
    let unnamed = p.kernel_ticks().map(|k| k.saturating_sub(named));
    keep_samples(p, |f| match *f {
        Frame::Program(_) => program_kept,
        Frame::Kernel(_) => kernel_kept,
        Frame::Foreign(a) => Mapping::at(&mappings, a).is_some_and(|m| filter.keeps_object(&m.path)),
    });
    if let (true, Some(k), Some(unnamed)) = (kernel_kept, p.parts_mut().kernel_ticks.as_mut(), unnamed) {
        *k = k.saturating_add(unnamed);
    }
}


#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use crate::profile::{ChildProfile, Stack, ThreadSamples};
    use crate::report::ExitKind;
    use prof_core::layout::BinLayout;
    use prof_core::sampler::Mapping;

    fn run() -> Outcome {
        let layout = BinLayout { start: 0x1000, end: 0x2000, bin_sz: 0x100, nr_bins: 16 };
        let mut data = prof_core::ProfData::new(&layout);
        data.bin[0] = 5;
        data.bin[1] = 3;
        let libc = Mapping { start: 0x7000_0000, len: 0x1000, path: "/lib/libc.so.6".into(), ..Default::default() };
        let profile = Profile::from(Parts {
            pid: 10,
            data,
            image_samples: vec![(0x1010, 5), (0x1110, 3)],
            foreign_samples: vec![(0x7000_0010, 4)],
            kernel_samples: vec![(0xffff_ffff_8000_0000, 2)],
            mappings: vec![libc.clone()],
            user_ticks: 12,
            kernel_ticks: Some(2),
            stacks: vec![
                Stack { frames: vec![Frame::Program(0x1010)], truncated: false, count: 5 },
                Stack { frames: vec![Frame::Foreign(0x7000_0010), Frame::Program(0x1110)], truncated: false, count: 4 },
            ],
            by_thread: vec![
                ThreadSamples { tid: 10, name: "main".into(), samples: vec![(Frame::Program(0x1010), 5), (Frame::Kernel(0xffff_ffff_8000_0000), 2)] },
                ThreadSamples { tid: 11, name: "worker".into(), samples: vec![(Frame::Program(0x1110), 3), (Frame::Foreign(0x7000_0010), 4)] },
            ],
            processes: vec![ChildProfile {
                pid: 12,
                parent: Some(10),
                program: "/usr/bin/gzip".into(),
                profile: Profile::from(Parts { pid: 12, foreign_samples: vec![(0x7000_0020, 6)], mappings: vec![libc], user_ticks: 6, kernel_ticks: Some(0), ..Default::default() }),
                running: false,
            }],
            ..Default::default()
        });
        Outcome { program: "./prog".into(), arguments: vec![], frequency_hz: 1000, profile, exit: ExitKind::Exited(0), interpreters: vec![] }
    }

    #[test]
    fn no_filter_changes_nothing() {
        let mut r = run();
        assert_eq!(apply(&mut r, "/bin/prog", &Filter::default()), Ok(None));
        assert_eq!(r.profile.user_ticks(), 12);
    }

    #[test]
    fn dso_keeps_the_samples_in_those_objects_and_remakes_the_bins() {
        let mut r = run();
        let note = apply(&mut r, "/bin/prog", &Filter { dsos: vec!["libc.so.6".into()], ..Default::default() }).unwrap();
        assert_eq!(note.as_ref().map(|k| k.note.as_str()), Some("Note: the report is of the samples --dso libc.so.6 keeps: 10 of 20."));
        let p = &r.profile;
        assert_eq!((p.image_samples().len(), p.foreign_samples().to_vec(), p.kernel_samples().len()), (0, vec![(0x7000_0010, 4)], 0));
        assert_eq!((p.user_ticks(), p.kernel_ticks(), p.data().total()), (4, Some(0), 0));
        assert_eq!(p.stacks().len(), 1);
        assert_eq!(p.stacks()[0].frames.first(), Some(&Frame::Foreign(0x7000_0010)), "a stack by its sampled frame");
        assert_eq!(p.by_thread().iter().map(|t| t.tid).collect::<Vec<_>>(), [11]);
        assert_eq!(p.processes()[0].profile.user_ticks(), 6);
        // The program by its file's name, and the kernel.
        let mut r = run();
        apply(&mut r, "/bin/prog", &Filter { dsos: vec!["prog".into(), KERNEL.into()], ..Default::default() }).unwrap();
        let p = &r.profile;
        assert_eq!((p.user_ticks(), p.kernel_ticks(), p.data().total(), p.data().bin[0], p.data().bin[1]), (8, Some(2), 8, 5, 3));
        assert_eq!(p.processes()[0].profile.user_ticks(), 0);
    }

    /// An address range unmapped and mapped again is the later object's, as the report names
    /// its samples.
    #[test]
    fn dso_takes_the_latest_mapping_of_an_address() {
        let remapped = || {
            let mut r = run();
            r.profile.parts_mut().mappings.push(Mapping { start: 0x7000_0000, len: 0x1000, path: "/opt/libnew.so".into(), ..Default::default() });
            r
        };
        let mut r = remapped();
        apply(&mut r, "/bin/prog", &Filter { dsos: vec!["libc.so.6".into()], ..Default::default() }).unwrap();
        assert!(r.profile.foreign_samples().is_empty());
        let mut r = remapped();
        apply(&mut r, "/bin/prog", &Filter { dsos: vec!["libnew.so".into()], ..Default::default() }).unwrap();
        assert_eq!(r.profile.foreign_samples(), [(0x7000_0010, 4)]);
    }

    #[test]
    fn tid_keeps_those_threads_samples_and_drops_the_stacks() {
        let mut r = run();
        apply(&mut r, "/bin/prog", &Filter { tids: vec![11], ..Default::default() }).unwrap();
        let p = &r.profile;
        assert_eq!((p.image_samples().to_vec(), p.foreign_samples().to_vec(), p.kernel_samples().len()), (vec![(0x1110, 3)], vec![(0x7000_0010, 4)], 0));
        assert_eq!((p.user_ticks(), p.kernel_ticks(), p.data().bin[0], p.data().bin[1]), (7, Some(0), 0, 3));
        assert!(p.stacks().is_empty() && p.processes().is_empty());
    }

    #[test]
    fn comm_and_pids_keep_processes() {
        let mut r = run();
        let note = apply(&mut r, "/bin/prog", &Filter { comms: vec!["gzip".into()], ..Default::default() }).unwrap();
        assert_eq!(note.as_ref().map(|k| k.note.as_str()), Some("Note: the report is of the samples --comm gzip keeps: 6 of 20."));
        assert_eq!((r.profile.user_ticks(), r.profile.data().total(), r.profile.processes().len()), (0, 0, 1));
        let mut r = run();
        apply(&mut r, "/bin/prog", &Filter { pids: vec![10], ..Default::default() }).unwrap();
        assert_eq!((r.profile.user_ticks(), r.profile.processes().len()), (12, 0));
        let mut r = run();
        apply(&mut r, "/bin/prog", &Filter { comms: vec!["./prog".into()], pids: vec![10, 12], ..Default::default() }).unwrap();
        assert_eq!((r.profile.user_ticks(), r.profile.processes().len()), (12, 0));
    }

    /// --comm and --pids keep the requests of the processes they keep, whole and timed.
    #[test]
    fn comm_and_pids_keep_those_processes_requests() {
        use prof_core::requests::{Request, RequestKey, RequestLog, RequestSource};
        let logged = || {
            let mut r = run();
            let mut log = RequestLog::new(RequestSource::SystemCalls);
            // Process 13 is in the log alone (none of its samples, start or exec seen).
            for (pid, call) in [(10, "read"), (12, "write"), (12, "write"), (13, "open")] {
                log.add(Request { pid, tid: pid, key: RequestKey::call(call), from: 0, to: 1, taken_by: None, site: Default::default(), served: None });
            }
            r.profile.parts_mut().requests = Some(log);
            r
        };
        let calls = |r: &Outcome| {
            let log = r.profile.requests().unwrap();
            (log.by_pid.iter().map(|(&pid, q)| (pid, q.count())).collect::<Vec<_>>(), log.timed.iter().map(|q| q.pid).collect::<Vec<_>>())
        };
        let mut r = logged();
        apply(&mut r, "/bin/prog", &Filter { comms: vec!["gzip".into()], ..Default::default() }).unwrap();
        assert_eq!(calls(&r), (vec![(12, 2)], vec![12, 12]));
        let mut r = logged();
        apply(&mut r, "/bin/prog", &Filter { pids: vec![10], ..Default::default() }).unwrap();
        assert_eq!(calls(&r), (vec![(10, 1)], vec![10]));
        let mut r = logged();
        apply(&mut r, "/bin/prog", &Filter { pids: vec![13, 12], ..Default::default() }).unwrap();
        assert_eq!(calls(&r), (vec![(12, 2), (13, 1)], vec![12, 12, 13]));
        let mut r = logged();
        apply(&mut r, "/bin/prog", &Filter { comms: vec!["prog".into()], ..Default::default() }).unwrap();
        assert_eq!(calls(&r), (vec![(10, 1)], vec![10]));
        // The other filters keep every process's.
        let mut r = logged();
        apply(&mut r, "/bin/prog", &Filter { dsos: vec!["libc.so.6".into()], ..Default::default() }).unwrap();
        assert_eq!(calls(&r).0.len(), 3);
    }

    #[test]
    fn comm_takes_the_15_byte_comm_ps_and_perf_print() {
        let long = |r: &mut Outcome| r.profile.parts_mut().processes[0].program = "/usr/bin/x86_64-linux-gnu-gcc-14".into();
        for (comm, kept) in [("x86_64-linux-gn", 1), ("x86_64-linux-gnu-gcc-14", 1), ("x86_64-linux-g", 0), ("x86_64-linux-gnu", 0)] {
            let mut r = run();
            long(&mut r);
            apply(&mut r, "/bin/prog", &Filter { comms: vec![comm.into()], ..Default::default() }).unwrap();
            assert_eq!(r.profile.processes().len(), kept, "{comm}");
        }
        // A name of 15 bytes or fewer is its own comm: no prefix of it is.
        let mut r = run();
        apply(&mut r, "/bin/prog", &Filter { comms: vec!["gzi".into()], ..Default::default() }).unwrap();
        assert!(r.profile.processes().is_empty());
    }

    /// `--dso [kernel]` keeps the kernel's ticks whose addresses were not recorded (a run
    /// without `--kernel`): they are counted, not named.
    #[test]
    fn dso_kernel_keeps_the_kernel_s_ticks_named_or_not() {
        let mut r = run();
        r.profile.parts_mut().kernel_ticks = Some(9);
        apply(&mut r, "/bin/prog", &Filter { dsos: vec![KERNEL.into()], ..Default::default() }).unwrap();
        assert_eq!((r.profile.user_ticks(), r.profile.kernel_ticks(), r.profile.kernel_samples().len()), (0, Some(9), 1));
        let mut r = run();
        r.profile.parts_mut().kernel_ticks = Some(9);
        apply(&mut r, "/bin/prog", &Filter { dsos: vec!["libc.so.6".into()], ..Default::default() }).unwrap();
        assert_eq!((r.profile.user_ticks(), r.profile.kernel_ticks()), (4, Some(0)));
    }

    /// The flat profile's shares are of the run's samples, kept or not (perf report's
    /// `--percentage absolute`, its default); `relative`, of those kept. A window is cut
    /// first: the shares are then of the window's samples.
    #[test]
    fn shares_are_of_the_whole_run_unless_relative() {
        let kept = |filter: Filter| apply(&mut run(), "/bin/prog", &filter).unwrap().unwrap().whole;
        // The program's 14 samples by address (8 in its text, 4 in libc, 2 in the kernel).
        assert_eq!(kept(Filter { dsos: vec!["libc.so.6".into()], ..Default::default() }), Some(14));
        assert_eq!(kept(Filter { dsos: vec!["libc.so.6".into()], relative: true, ..Default::default() }), None);
        assert_eq!(kept(Filter { tids: vec![11], ..Default::default() }), Some(14));
        // Nothing cut from the program: its shares are as they were.
        assert_eq!(kept(Filter { pids: vec![10], ..Default::default() }), None);
        let window = Some(crate::timeline::Window::parse("10%,50%").unwrap());
        assert_eq!(apply(&mut timed_run(), "/bin/prog", &Filter { window, ..Default::default() }).unwrap().unwrap().whole, None);
        let mut r = timed_run();
        let f = Filter { window, dsos: vec!["libc.so.6".into()], ..Default::default() };
        assert_eq!(apply(&mut r, "/bin/prog", &f).unwrap().unwrap().whole, Some(2));
    }

    /// [`run`] with its samples in time order: tid 10 in the program's text (stack 0), 11
    /// in libc (stack 1), the kernel without its address, the program again, a blocked look.
    fn timed_run() -> Outcome {
        use crate::timeline::{At, TimedSample, Timeline};
        let mut r = run();
        let sample = |time, tid, at, stack| TimedSample { time, tid, at, stack };
        r.profile.parts_mut().timeline = Timeline {
            span: 1_000,
            waits: Vec::new(),
            served: Vec::new(),
            samples: vec![
                sample(0, 10, At::Cpu(Frame::Program(0x1010)), Some(0)),
                sample(100, 11, At::Cpu(Frame::Foreign(0x7000_0010)), Some(1)),
                sample(200, 10, At::Kernel(0xffff_ffff_8000_0010), None),
                sample(300, 11, At::Cpu(Frame::Program(0x1110)), Some(1)),
                sample(400, 10, At::Blocked(0), None),
                sample(900, 10, At::Cpu(Frame::Program(0x1010)), Some(0)),
            ],
        };
        r
    }

    #[test]
    fn time_keeps_a_window_and_makes_every_sum_again_from_it() {
        let mut r = timed_run();
        let window = Some(crate::timeline::Window::parse("10%,50%").unwrap());
        let note = apply(&mut r, "/bin/prog", &Filter { window, ..Default::default() }).unwrap();
        assert_eq!(note.as_ref().map(|k| k.note.as_str()), Some("Note: the report is of the samples --time 10%,50% keeps: 3 of 20."));
        let p = &r.profile;
        assert_eq!((p.image_samples().to_vec(), p.foreign_samples().to_vec(), p.kernel_samples().len()), (vec![(0x1110, 1)], vec![(0x7000_0010, 1)], 0));
        assert_eq!((p.user_ticks(), p.kernel_ticks(), p.data().total(), p.data().bin[1]), (2, Some(1), 1, 1));
        assert_eq!(p.stacks().iter().map(|s| (s.frames[0], s.count)).collect::<Vec<_>>(), [(Frame::Foreign(0x7000_0010), 2)]);
        let threads: Vec<(u32, u64)> = p.by_thread().iter().map(|t| (t.tid, t.samples.iter().map(|s| s.1).sum())).collect();
        assert_eq!(threads, [(10, 1), (11, 2)]);
        assert_eq!(p.by_thread()[1].name, "worker", "a thread keeps its name");
        // What is not in time order is of the whole run: it goes.
        assert!(p.processes().is_empty() && p.clock().threads.is_empty());
        assert_eq!(p.timeline().samples.len(), 4);
        assert_eq!(p.clock().elapsed, Some(std::time::Duration::from_nanos(400)));
        // A run without samples in time order has no window.
        let mut r = run();
        let window = Some(crate::timeline::Window::parse("1,2").unwrap());
        assert!(apply(&mut r, "/bin/prog", &Filter { window, ..Default::default() }).unwrap_err().starts_with("--time needs a run whose samples have times"));
    }

    #[test]
    fn the_other_filters_cut_the_samples_in_time_order_too() {
        let at = |r: &Outcome| r.profile.timeline().samples.iter().map(|s| (s.time, s.stack)).collect::<Vec<_>>();
        // --dso: the samples in the objects kept; their stacks renumbered as the stacks go.
        let mut r = timed_run();
        apply(&mut r, "/bin/prog", &Filter { dsos: vec!["libc.so.6".into()], ..Default::default() }).unwrap();
        assert_eq!(at(&r), [(100, Some(0)), (400, None)]);
        assert_eq!(r.profile.stacks()[0].frames[0], Frame::Foreign(0x7000_0010));
        // --tid: those threads' samples; stacks are not kept by thread.
        let mut r = timed_run();
        apply(&mut r, "/bin/prog", &Filter { tids: vec![10], ..Default::default() }).unwrap();
        assert_eq!(at(&r), [(0, None), (200, None), (400, None), (900, None)]);
        // A process not kept: nothing of it.
        let mut r = timed_run();
        apply(&mut r, "/bin/prog", &Filter { comms: vec!["gzip".into()], ..Default::default() }).unwrap();
        assert_eq!(at(&r), []);
    }
}
