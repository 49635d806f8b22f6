//! How an embedded session fills the run's model (Linux: the program's, its children's, and a
//! system-wide run's processes), and Redox's children through [`process_profiles`].

use std::collections::BTreeMap;

use prof_core::formats::StackFrame;
use prof_core::sampler::Mapping;
use prof_core::session::{ChildProcess, Session};
use prof_core::system::SystemRecord;

use super::{ChildProfile, Clock, Frame, Profile, Source, Stack, ThreadSamples, WaitSite, ANOTHER_PROGRAM};
use super::Parts;

/// The executable a process that exec'd runs: among its mappings, the one whose file name is
/// the name the kernel gave it at the exec (`comm`; where `comm` was cut to 15 bytes, one that
/// begins with it), else its first mapping, which the kernel maps before the dynamic loader.
/// (A prefix alone would take `ld-linux-x86-64.so.2` for `ld`, whose file is `ld.bfd`.)
fn exec_image(comm: &str, mappings: &[Mapping]) -> Option<String> {
    const COMM_LEN: usize = 15;
    let base = |m: &Mapping| m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
    let named = |m: &&Mapping| !comm.is_empty() && (base(m) == comm || (comm.len() >= COMM_LEN && base(m).starts_with(comm)));
    let real = |m: &&Mapping| !m.path.starts_with('[');
    mappings.iter().find(named).or_else(|| mappings.iter().find(real)).map(|m| m.path.clone())
}

/// The followed children of a session, as profiles, by pid. `program` names the session's.
fn child_profiles(s: &Session, program: &str) -> Vec<ChildProfile> {
    let mut children = process_profiles(&s.processes, s.pid, &s.mappings, program);
    // Each in time order from the program's start (found once), its stacks as its profile
    // lists them.
    let origin = s.origin().unwrap_or(0);
    for c in &mut children {
        let Some(process) = s.processes.get(&c.pid) else { continue };
        let (span, placed) = process.placed_timeline(origin, process.samples.stacks.values());
        c.profile.parts.timeline = crate::timeline::Timeline::of_placed(span, &placed);
    }
    children
}

/// `processes` as profiles, by pid: the processes program `main_pid` (which had `main_mappings`
/// and is named `program`) started, or (`main_pid` 0) every process of a system-wide run.
pub(super) fn process_profiles(
    processes: &BTreeMap<u32, ChildProcess>,
    main_pid: u32,
    main_mappings: &[Mapping],
    program: &str,
) -> Vec<ChildProfile> {
    // The program of the process whose exec made `pid`'s address space, else the profiled one.
    let program_of = |pid: u32| -> String {
        let chain = prof_core::sampler::lineage(pid, main_pid, |p| processes.get(&p).map(|c| (c.parent, c.exec.is_some())));
        match chain.last().and_then(|p| processes.get(p)).and_then(|c| Some((c.exec.as_ref()?, c))) {
            Some((comm, c)) => exec_image(comm, &c.mappings).unwrap_or_else(|| comm.clone()),
            None => program.to_string(),
        }
    };
    let mappings_of = |pid: u32| {
        prof_core::sampler::process_mappings(pid, main_pid, main_mappings, |p| {
            processes.get(&p).map(|c| (c.parent, c.exec.is_some(), c.mappings.as_slice()))
        })
    };
    processes
        .iter()
        .map(|(&pid, c)| {
            let stack = |(st, count): (&prof_core::sample::CallStack, u64)| {
                let frames = st.frames.iter().map(|&a| match a >= prof_core::sampler::KERNEL_SPACE_START {
                    true => StackFrame::Kernel(a),
                    false => StackFrame::Other(a),
                });
                Stack::new(frames.collect(), st.truncated, count)
            };
            let profile = Profile::from(Parts {
                foreign_samples: c.samples.user.iter().map(|(&a, &n)| (a, n)).collect(),
                mappings: mappings_of(pid),
                user_ticks: c.samples.user_ticks,
                kernel_ticks: Some(c.samples.kernel_ticks),
                stacks: c.samples.stack_ticks().map(stack).collect(),
                pid,
                ..Default::default()
            });
            ChildProfile { pid, parent: c.parent, program: program_of(pid), profile, running: !c.exited }
        })
        .collect()
}

impl Profile {
    /// The profile of a system-wide run (`-a`): every process as one of `processes`, the
    /// kernel's samples of all of them, idle's ticks; no program.
    pub fn from_system(r: &SystemRecord, stacks_recorded: bool) -> Profile {
        let mut processes = process_profiles(&r.processes, 0, &[], "[unknown]");
        // Times from the run's start (its clock's first reading, else its first sample).
        let first = || r.processes.values().flat_map(|c| c.samples.timeline.entries.iter().map(|e| e.time)).min();
        let origin = r.clock.map(|c| c.0).or_else(first).unwrap_or(0);
        for c in &mut processes {
            c.profile.parts.stacks_recorded = stacks_recorded;
            if let Some(process) = r.processes.get(&c.pid) {
                let (span, placed) = process.placed_timeline(origin, process.samples.stacks.values());
                c.profile.parts.timeline = crate::timeline::Timeline::of_placed(span, &placed);
            }
        }
        Profile::from(Parts {
            processes,
            kernel_samples: r.kernel_samples.iter().map(|(&a, &n)| (a, n)).collect(),
            kernel_ticks: Some(0),
            lost: r.lost,
            stacks_recorded,
            idle_ticks: Some(r.idle_ticks),
            // Each request's times from the run's start, as the samples'.
            requests: r.requests.clone().map(|log| log.timed_from(origin)),
            ..Default::default()
        })
    }

    /// The profile of a finished session of `program`.
    pub fn from_session(s: &Session, program: &str, counts_kernel: bool, stacks_recorded: bool) -> Profile {
        let mut processes = child_profiles(s, program);
        for c in &mut processes {
            c.profile.parts.stacks_recorded = stacks_recorded;
            c.profile.parts.kernel_ticks = c.profile.parts.kernel_ticks.filter(|_| counts_kernel);
        }
        // Each wait site's stack as the program's own frames, a child's as its runtime addresses.
        let wait_sites = s
            .clock.wait_sites
            .iter()
            .map(|w| WaitSite {
                pid: w.pid,
                call: w.call.clone(),
                target: w.target.clone(),
                stack: match w.pid == s.pid {
                    true => Stack::new(s.stack_frames(&w.stack), w.stack.truncated, 0),
                    false => Stack::new(w.stack.frames.iter().map(|&a| prof_core::formats::StackFrame::Other(a)).collect(), w.stack.truncated, 0),
                },
            })
            .collect();
        let threads = s.clock.span.map(|(begin, end)| s.clock.ledger.accounts(begin, end)).unwrap_or_default();
        Profile::from(Parts {
            pid: s.pid,
            processes,
            data: s.data.clone(),
            image_samples: s.image_samples(),
            foreign_samples: s.foreign_samples(),
            kernel_samples: s.kernel_samples.iter().map(|(&a, &n)| (a, n)).collect(),
            children: (s.children.len() as u64, s.children.values().fold(0u64, |n, &c| n.saturating_add(c))),
            mappings: s.mappings.clone(),
            user_ticks: s.program.user_ticks,
            kernel_ticks: counts_kernel.then_some(s.program.kernel_ticks),
            lost: s.lost,
            stop_reason: match s.state {
                prof_core::SessionState::Stopped(r) => Some(r),
                _ => None,
            },
            later_execs: later_exec_images(s),
            stacks_recorded,
            stacks: s.program.stacks.iter().map(|(st, c)| Stack::new(s.stack_frames(st), st.truncated, c.ticks)).collect(),
            servers: None,
            source: Source { sampling: s.sampling, cpus: None, rings: s.rings, record_span: s.record_span, typed_records: s.typed_records, kernel: None },
            clock: Clock { elapsed: None, threads, wait_sites, off_cpu: None, served: Vec::new() },
            idle_ticks: None,
            daemons: Vec::new(),
            timeline: crate::timeline::Timeline::of_session(s),
            // Each request's times from the run's start, as the timeline's samples.
            requests: s.requests.clone().map(|log| log.timed_from(s.origin().unwrap_or(0))),
            by_thread: s
                .thread_samples
                .iter()
                .map(|(&tid, samples)| ThreadSamples {
                    tid,
                    name: s.thread_names.get(&tid).cloned().unwrap_or_default(),
                    samples: samples
                        .iter()
                        .map(|(&ip, &n)| (Frame::placed(prof_core::session::place_frames(&[ip], s.load_base, &s.text)[0]), n))
                        .collect(),
                })
                .collect(),
        })
    }
}

/// The files a process exec'd after the profiled program: among its mappings, the mapped
/// files that are programs themselves (`ET_EXEC`, or an interpreter and no soname), other than
/// the profiled one, busiest first (by their own files' samples, then the last exec'd);
/// "another program" for each exec beyond them.
fn later_exec_images(s: &Session) -> Vec<String> {
    if s.later_execs == 0 {
        return Vec::new();
    }
    let first = s.mappings.iter().find(|m| s.link_address(m.start).is_some()).map(|m| m.path.as_str());
    let mut found: Vec<String> = Vec::new();
    for m in &s.mappings {
        if Some(m.path.as_str()) == first || found.contains(&m.path) || m.path.starts_with('[') {
            continue;
        }
        if prof_objects::elf::is_program(std::path::Path::new(&m.path)) {
            found.push(m.path.clone());
        }
    }
    // Busiest first: the program a chain of shims became is the one that did the work.
    let samples_in = |path: &String| -> u64 {
        s.mappings
            .iter()
            .filter(|m| &m.path == path)
            .map(|m| s.program.user.range(m.start..m.start.saturating_add(m.len)).map(|(_, n)| n).sum::<u64>())
            .sum()
    };
    // Where no program's own file has more samples (a chain of shims whose last program
    // works in its libraries: python3 in libpython), the last one exec'd is the busiest.
    found.reverse();
    found.sort_by_cached_key(|p| std::cmp::Reverse(samples_in(p)));
    found.resize(found.len().max(s.later_execs as usize), ANOTHER_PROGRAM.to_string());
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_named_by_the_file_it_exec_d_not_by_a_prefix() {
        let at = |path: &str| Mapping { start: 0, len: 1, pgoff: 0, path: path.into(), file: None, build_id: None };
        // `ld` runs ld.bfd (through a link), mapped before the dynamic loader.
        let ld = [at("/usr/bin/x86_64-linux-gnu-ld.bfd"), at("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), at("[vdso]")];
        assert_eq!(exec_image("ld", &ld).as_deref(), Some("/usr/bin/x86_64-linux-gnu-ld.bfd"));
        // The file of the name, wherever it was mapped.
        let make = [at("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), at("/usr/bin/make")];
        assert_eq!(exec_image("make", &make).as_deref(), Some("/usr/bin/make"));
        // A name the kernel cut to 15 bytes names the file it begins.
        let long = [at("/lib/ld-linux-x86-64.so.2"), at("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus-wrapper-x")];
        assert_eq!(exec_image("cc1plus-wrapper", &long).as_deref(), Some("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus-wrapper-x"));
        assert_eq!(exec_image("x", &[at("[vdso]")]), None);
    }
}
