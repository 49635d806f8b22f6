//! `--threads`: the run's samples thread by thread (Linux: each sample carries its thread;
//! Redox: the kernel keeps each call stack under its context's id): each thread's tid, name
//! (`comm`, as the kernel had it when the thread was first sampled; a thread names itself with
//! `pthread_setname_np`; on Redox, the program's), samples, share of the run's samples, and
//! its top functions. A run of several processes (`--children`, `-a`) has every process's
//! threads, each with its pid.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::naming::Names;
use crate::profile::Profile;

/// Functions shown for each thread.
pub const TOP_FUNCTIONS: usize = 3;

/// One thread's line: tid, name, samples, and its functions by samples, most first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadView {
    /// The process it is a thread of.
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    pub samples: u64,
    pub functions: Vec<(String, u64)>,
}

/// Every sampled thread of the run whose program is `program`: the program's, then every
/// process's it started (or `-a`'s), most samples first, their functions named.
pub fn threads(p: &Profile, program: &str, names: &Names) -> Vec<ThreadView> {
    let mut out = process_threads(p, p.pid(), program, names);
    for c in p.processes() {
        out.extend(process_threads(&c.profile, c.pid, &c.program, names));
    }
    out.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.pid.cmp(&b.pid)).then(a.tid.cmp(&b.tid)));
    out
}

/// One process's threads: its samples by thread where the backend keeps them so (the
/// program's), else its samples in time order by thread (a process it started, `-a`'s).
fn process_threads(p: &Profile, pid: u32, program: &str, names: &Names) -> Vec<ThreadView> {
    let space = names.space(p.mappings());
    let mut by_tid: BTreeMap<u32, (String, BTreeMap<std::rc::Rc<str>, u64>)> = BTreeMap::new();
    let mut add = |tid: u32, name: &str, frame: crate::frame::Frame, n: u64| {
        let thread = by_tid.entry(tid).or_insert_with(|| (name.to_string(), BTreeMap::new()));
        let e = thread.1.entry(names.frame(space, frame).name.clone()).or_insert(0);
        *e = e.saturating_add(n);
    };
    match p.by_thread().is_empty() {
        false => {
            for t in p.by_thread() {
                for &(frame, n) in &t.samples {
                    add(t.tid, &t.name, frame, n);
                }
            }
        }
        true => {
            // Each thread's samples by address first: an address is looked up once, however
            // often it was sampled.
            let mut counted: BTreeMap<(u32, crate::frame::Frame), u64> = BTreeMap::new();
            for s in &p.timeline().samples {
                if let crate::timeline::At::Cpu(frame) = s.at {
                    *counted.entry((s.tid, frame)).or_insert(0) += 1;
                }
            }
            for ((tid, frame), n) in counted {
                add(tid, "", frame, n);
            }
        }
    }
    by_tid
        .into_iter()
        .map(|(tid, (name, by_name))| {
            let mut functions: Vec<(String, u64)> = by_name.into_iter().map(|(name, n)| (name.to_string(), n)).collect();
            functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let samples = functions.iter().fold(0u64, |n, f| n.saturating_add(f.1));
            // A thread that ended before the sampler read its name has the one the kernel
            // gives threads that name no other: the program's (`comm`, 15 bytes).
            let name = match name.is_empty() {
                true => crate::processes::base_name(program).chars().take(15).collect(),
                false => name,
            };
            ThreadView { pid, tid, name, samples, functions }
        })
        .collect()
}

/// The section: a line per thread, with its process's pid where the run has more than one.
pub fn render(threads: &[ThreadView]) -> String {
    let mut out = String::new();
    let total = threads.iter().fold(0u64, |n, t| n.saturating_add(t.samples));
    let mut pids: Vec<u32> = threads.iter().map(|t| t.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let several = pids.len() > 1;
    let _ = write!(out, "By thread ({} {}", threads.len(), if threads.len() == 1 { "thread" } else { "threads" });
    if several {
        let _ = write!(out, " of {} processes", pids.len());
    }
    let _ = writeln!(out, ", {total} samples):");
    if threads.is_empty() {
        return out;
    }
    let pid_column = |pid: &dyn std::fmt::Display| if several { format!("{pid:>9}") } else { String::new() };
    let _ = writeln!(out, "{}      tid  name             samples       %  top functions", pid_column(&"pid"));
    for t in threads {
        let top: Vec<String> = t.functions.iter().take(TOP_FUNCTIONS).map(|(f, n)| format!("{f} {n}")).collect();
        let more = t.functions.len().saturating_sub(TOP_FUNCTIONS);
        let _ = writeln!(
            out,
            "{}{:>9}  {:<16} {:>7} {:>7.2}  {}{}",
            pid_column(&t.pid),
            t.tid,
            t.name,
            t.samples,
            crate::words::percent(t.samples, total),
            top.join(", "),
            if more > 0 { format!(", … ({more} more)") } else { String::new() }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use crate::profile::{Frame, ThreadSamples};

    /// The threads of `p`, named with the stacks' test symbols.
    fn named(p: &Profile, program: &str) -> Vec<ThreadView> {
        let wanted = crate::naming::Wanted { threads: true, ..Default::default() };
        threads(p, program, &Names::of_run(crate::stacks::tests::symbolizer(), p, wanted))
    }

    #[test]
    fn each_thread_with_its_share_and_functions() {
        let p = Profile::from(Parts {
            by_thread: vec![
                ThreadSamples { tid: 7, name: String::new(), samples: vec![(Frame::Program(0x1010), 2)] },
                ThreadSamples {
                    tid: 8,
                    name: "worker".into(),
                    samples: vec![(Frame::Program(0x1310), 5), (Frame::Program(0x1320), 1), (Frame::Program(0x1150), 2)],
                },
            ],
            ..Default::default()
        });
        let t = named(&p, "/usr/bin/a-program-named-long");
        assert_eq!((t[0].tid, t[0].samples), (8, 8));
        assert_eq!(t[0].functions, [("c".to_string(), 6), ("a".to_string(), 2)]);
        assert_eq!(
            render(&t),
            "By thread (2 threads, 10 samples):\n\
             \x20     tid  name             samples       %  top functions\n\
             \x20       8  worker                 8   80.00  c 6, a 2\n\
             \x20       7  a-program-named        2   20.00  main 2\n"
        );
    }

    /// A run of several processes (`--children`, `-a`): every process's threads, the
    /// program's by its own record of them, a child's from its samples in time order, each
    /// row with its pid.
    #[test]
    fn every_process_s_threads_with_their_pids() {
        use crate::timeline::{At, TimedSample};
        let child = |pid: u32, tids: &[u32]| crate::profile::ChildProfile {
            pid,
            parent: Some(7),
            program: "/bin/abc".into(),
            profile: Profile::from(Parts {
                timeline: crate::timeline::Timeline {
                    samples: tids.iter().map(|&tid| TimedSample { time: 0, tid, at: At::Cpu(Frame::Program(0x1310)), stack: None }).collect(),
                    ..Default::default()
                },
                ..Default::default()
            }),
            running: false,
        };
        let p = Profile::from(Parts {
            pid: 7,
            by_thread: vec![ThreadSamples { tid: 7, name: "sh".into(), samples: vec![(Frame::Program(0x1010), 1)] }],
            processes: vec![child(8, &[8, 8, 8]), child(9, &[9, 10, 10])],
            ..Default::default()
        });
        assert_eq!(
            render(&named(&p, "sh")),
            "By thread (4 threads of 3 processes, 7 samples):\n\
             \x20     pid      tid  name             samples       %  top functions\n\
             \x20       8        8  abc                    3   42.86  c 3\n\
             \x20       9       10  abc                    2   28.57  c 2\n\
             \x20       7        7  sh                     1   14.29  main 1\n\
             \x20       9        9  abc                    1   14.29  c 1\n"
        );
    }
}
