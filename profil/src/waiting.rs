//! Where the program waited (`--off-cpu`): its threads' blocked time by wait site — the
//! system call, what it waited on, the user stack at the call — named, grouped and ranked.
//!
//! The ledger gives each blocked period of each thread a site (the probe that fell in it) or
//! none (no probe did: a wait shorter than the probes' period). Sites with the same call and
//! the same named stack are one wait here, whatever they waited on (each of its targets is
//! kept with its time), so a loop reading many files is one line.

use std::collections::BTreeMap;
use std::fmt::Write;

use prof_core::ledger::UNSEEN;

use crate::naming::Names;
use crate::profile::{Frame, Profile};

/// Waits the section shows unless `--top` says otherwise.
pub const DEFAULT_TOP: usize = 10;

/// One wait: a call at a stack, its blocked time over every thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// The process that waited where it is not the program: a child it started
    /// (`--children`), by its program's name and pid.
    pub process: Option<(String, u32)>,
    /// The system call (`read`, `futex`), or `not in a system call`.
    pub call: String,
    /// What it waited on, with the time on each, most first (`None`: not known).
    pub targets: Vec<(Option<String>, u64)>,
    /// The stack's functions, innermost first (`clock_nanosleep [libc.so.6]`, …, `main`).
    pub frames: Vec<String>,
    /// The unwind stopped before the stack's root.
    pub truncated: bool,
    /// Blocked time, ns, and blocked periods.
    pub ns: u64,
    pub count: u64,
    /// The threads that waited here, each with its blocked time here, by tid.
    pub by_thread: Vec<(u32, u64)>,
    /// Redox: the daemons' samples while they worked on these waits, by daemon pid.
    pub served: Vec<(u32, u64)>,
}

impl Wait {
    pub fn mean_ns(&self) -> u64 {
        self.ns / self.count.max(1)
    }
}

/// The blocked time no probe saw (periods shorter than the probes' period), over all threads:
/// (ns, periods).
pub fn unseen(p: &Profile) -> (u64, u64) {
    p.clock().threads.iter().flat_map(|t| &t.waits).filter(|w| w.site == UNSEEN).fold((0u64, 0u64), |(ns, n), w| {
        (ns.saturating_add(w.ns), n.saturating_add(w.count))
    })
}

/// Name a stack's frames, innermost first, with the mappings of the process they are of
/// (`pid`: the program, or a child it started).
fn frame_names(p: &Profile, pid: u32, frames: &[Frame], names: &Names) -> Vec<String> {
    let space = names.space(crate::naming::mappings_of(p, pid));
    frames.iter().map(|&f| names.frame(space, f).name.to_string()).collect()
}

/// The run's waits, most blocked time first; empty without `--off-cpu`.
pub fn waits(p: &Profile, names: &Names) -> Vec<Wait> {
    if p.clock().off_cpu.is_none() {
        return Vec::new();
    }
    let named: Vec<Vec<String>> = p.clock().wait_sites.iter().map(|s| frame_names(p, s.pid, &s.stack.frames, names)).collect();
    let mut by_key: BTreeMap<(u32, &str, &[String]), Wait> = BTreeMap::new();
    let mut key_of_site: BTreeMap<u32, (u32, &str, &[String])> = BTreeMap::new();
    for t in &p.clock().threads {
        for w in t.waits.iter().filter(|w| w.site != UNSEEN) {
            let Some(site) = p.clock().wait_sites.get(w.site as usize) else { continue };
            let frames = &named[w.site as usize];
            let process = (site.pid != p.pid()).then(|| {
                let name = p.processes().iter().find(|c| c.pid == site.pid).map_or("?", |c| c.program.as_str());
                (name.rsplit('/').next().unwrap_or(name).to_string(), site.pid)
            });
            // One wait per call and stack in the program; a child's are its own.
            let key_pid = if site.pid == p.pid() { 0 } else { site.pid };
            let key = (key_pid, site.call.as_str(), frames.as_slice());
            key_of_site.insert(w.site, key);
            let e = by_key.entry(key).or_insert_with(|| Wait {
                process,
                call: site.call.clone(),
                targets: Vec::new(),
                frames: frames.clone(),
                truncated: site.stack.truncated,
                ns: 0,
                count: 0,
                by_thread: Vec::new(),
                served: Vec::new(),
            });
            e.ns = e.ns.saturating_add(w.ns);
            e.count = e.count.saturating_add(w.count);
            e.truncated |= site.stack.truncated;
            match e.by_thread.iter_mut().find(|x| x.0 == t.tid) {
                Some(x) => x.1 = x.1.saturating_add(w.ns),
                None => e.by_thread.push((t.tid, w.ns)),
            }
            match e.targets.iter_mut().find(|x| x.0 == site.target) {
                Some(x) => x.1 = x.1.saturating_add(w.ns),
                None => e.targets.push((site.target.clone(), w.ns)),
            }
        }
    }
    for s in &p.clock().served {
        let Some(w) = key_of_site.get(&s.site).and_then(|key| by_key.get_mut(key)) else { continue };
        match w.served.iter_mut().find(|x| x.0 == s.pid) {
            Some(x) => x.1 = x.1.saturating_add(s.count),
            None => w.served.push((s.pid, s.count)),
        }
    }
    let mut out: Vec<Wait> = by_key.into_values().collect();
    for w in &mut out {
        w.served.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        w.targets.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        w.by_thread.sort_unstable();
    }
    out.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.call.cmp(&b.call)).then_with(|| a.frames.cmp(&b.frames)));
    out
}

/// What a wait waited on, in a few words: the target, or how many and the one with most time.
fn on_what(w: &Wait) -> String {
    let known: Vec<&(Option<String>, u64)> = w.targets.iter().filter(|t| t.0.is_some()).collect();
    match known.as_slice() {
        [] => String::new(),
        [(Some(t), _)] => format!(" on {t}"),
        [(Some(t), _), rest @ ..] => format!(" on {} targets (most: {t})", rest.len() + 1),
        _ => String::new(),
    }
}

/// The stack as one line: innermost first, at most `MAX_SHOWN` functions.
fn stack_line(w: &Wait) -> String {
    const MAX_SHOWN: usize = 8;
    let mut line = w.frames.iter().take(MAX_SHOWN).cloned().collect::<Vec<_>>().join(" <- ");
    if w.frames.len() > MAX_SHOWN {
        let _ = write!(line, " <- … ({} more)", w.frames.len() - MAX_SHOWN);
    } else if w.truncated {
        line.push_str(" <- [truncated]");
    }
    line
}

/// The function that waited, for a reader: the innermost on the stack that is the program's
/// own code, not a library's (those are named with their object, `read [libc.so.6]`) nor
/// Rust's standard library linked into it; else the innermost of the program; else the
/// innermost.
pub fn own_function(w: &Wait) -> &str {
    const RUNTIME: [&str; 6] = ["std::", "core::", "alloc::", "<std::", "<core::", "<alloc::"];
    let in_program = |f: &&String| !f.ends_with(']');
    w.frames
        .iter()
        .filter(in_program)
        .find(|f| !RUNTIME.iter().any(|r| f.starts_with(r)))
        .or_else(|| w.frames.iter().find(in_program))
        .or(w.frames.first())
        .map_or("?", String::as_str)
}

fn waits_word(n: u64) -> String {
    match n {
        1 => "1 wait".into(),
        n => format!("{n} waits"),
    }
}

fn ms(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.2} s", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} ms", n as f64 / 1e6),
        n => format!("{:.0} us", n as f64 / 1e3),
    }
}

/// A wait's mean length, where the looks can tell it: waits shorter than about two looks'
/// periods are mostly seen once or not at all, so their count is low and their time over
/// their count comes out near the period whatever they lasted: "< 2.0 ms" at 1,000 looks a
/// second.
fn mean(w: &Wait, rate: u64) -> String {
    let bound = 2_000_000_000 / rate.max(1);
    match w.count {
        0 => "-".into(),
        _ if w.mean_ns() < bound => format!("< {}", ms(bound)),
        _ => ms(w.mean_ns()),
    }
}

/// Redox: a daemon's share of a wait for it: its samples while it worked on the wait's
/// requests, as time at the sampling rate; the rest of the wait it spent waiting itself (on a
/// disk, another daemon) or for a CPU.
fn served_line(p: &Profile, w: &Wait, pid: u32, samples: u64) -> String {
    let name = p
        .servers()
        .as_ref()
        .and_then(|r| r.servers.iter().find(|s| s.pid == pid))
        .map_or("", |s| s.path.rsplit('/').next().unwrap_or(&s.path));
    let daemon = crate::profile::process_label(name, pid);
    let samples_word = if samples == 1 { "sample" } else { "samples" };
    match p.source().sampling.map(|s| s.rate).filter(|&r| r > 0) {
        Some(rate) => {
            let ns = samples.saturating_mul(1_000_000_000) / rate;
            // Samples stand for time in steps of a period: a wait the daemon worked through
            // can come out a little over 100 %; it is all of it.
            format!(
                "{daemon} on a CPU for it: {} ({samples} {samples_word}, {:.1} % of the wait); the rest it waited itself or for a CPU",
                ms(ns),
                crate::words::percent(ns, w.ns).min(100.0)
            )
        }
        None => format!("{daemon} on a CPU for it: {samples} {samples_word}"),
    }
}

/// A wait's mean length where every wait was timed (Redox's kernel).
fn exact_mean(w: &Wait) -> String {
    match w.count {
        0 => "-".into(),
        _ => ms(w.mean_ns()),
    }
}

/// The "Waiting" section: the top `top` waits (call, what on, time, waits seen, their mean,
/// stack), the time no look named, then a line per thread. Empty without `--off-cpu`.
pub fn render(p: &Profile, waits: &[Wait], top: usize) -> String {
    let mut out = String::new();
    let Some(off) = &p.clock().off_cpu else { return out };
    let total_wall = p.clock().threads.iter().fold(0u64, |n, t| n.saturating_add(t.wall));
    let blocked = p.clock().threads.iter().fold(0u64, |n, t| n.saturating_add(t.blocked));
    let periods = p.clock().threads.iter().flat_map(|t| &t.waits).fold(0u64, |n, w| n.saturating_add(w.count));
    let (unseen_ns, _) = unseen(p);
    if off.kernel {
        let _ = writeln!(out, "Waiting (--off-cpu: the kernel timed every block of the program's threads, at the user stack it blocked at):");
    } else {
        let _ = writeln!(
            out,
            "Waiting (--off-cpu: each thread looked at {} times a second; its blocked time, the kernel's figure, is split over the calls by the looks that found it there):",
            off.rate,
        );
    }
    if let Some(problem) = &off.problem {
        let _ = writeln!(out, "  Note: {problem}");
    }
    let _ = writeln!(
        out,
        "  {} blocked, {} {}; {} ({:.1} %) at the calls below, {} {}",
        ms(blocked),
        waits_word(periods),
        if off.kernel { "in all" } else { "seen" },
        ms(blocked.saturating_sub(unseen_ns)),
        crate::words::percent(blocked.saturating_sub(unseen_ns), blocked),
        ms(unseen_ns),
        if off.kernel { "where the kernel kept no site" } else { "where no look found the thread blocked" },
    );
    if waits.is_empty() {
        return out;
    }
    let _ = writeln!(out, "   seconds  % time    seen       mean  call");
    for w in waits.iter().take(top) {
        // A child's wait (--children) says whose it is.
        let process = w.process.as_ref().map_or(String::new(), |(name, pid)| format!(" ({name} [pid {pid}])"));
        let _ = writeln!(
            out,
            "{:>10.3} {:>7.2} {:>7} {:>10}  {}{}, in {}{process}",
            w.ns as f64 / 1e9,
            crate::words::percent(w.ns, total_wall),
            w.count,
            if off.kernel { exact_mean(w) } else { mean(w, off.rate) },
            w.call,
            on_what(w),
            own_function(w)
        );
        let _ = writeln!(out, "{:>39}{}", "at ", stack_line(w));
        for &(pid, samples) in &w.served {
            let _ = writeln!(out, "{:>39}{}", "", served_line(p, w, pid, samples));
        }
    }
    if waits.len() > top {
        let rest = &waits[top..];
        let ns = rest.iter().fold(0u64, |n, w| n.saturating_add(w.ns));
        let _ = writeln!(out, "{:>10.3} {:>7.2}  ({} more calls)", ns as f64 / 1e9, crate::words::percent(ns, total_wall), rest.len());
    }
    if p.clock().threads.len() > 1 {
        let _ = writeln!(out, "  By thread:");
        // A thread's call with the most blocked time, all its waits there together (the
        // looks do not see single waits end to end).
        let _ = writeln!(out, "       tid   blocked  its most blocked call (all its waits there)");
        let (shown, rest) = crate::words::busiest(&p.clock().threads, |t| t.blocked);
        for t in shown {
            let longest = waits
                .iter()
                .filter_map(|w| w.by_thread.iter().find(|x| x.0 == t.tid).map(|x| (w, x.1)))
                .max_by_key(|(_, ns)| *ns);
            let what = match longest {
                Some((w, ns)) => format!("{} {}{}, in {}", ms(ns), w.call, on_what(w), own_function(w)),
                None => "-".to_string(),
            };
            let _ = writeln!(out, "{:>10} {:>9.3}  {what}", t.tid, t.blocked as f64 / 1e9);
        }
        if !rest.is_empty() {
            let ns = rest.iter().fold(0u64, |n, t| n.saturating_add(t.blocked));
            let more = crate::words::count(rest.len() as u64, "more thread");
            let _ = writeln!(out, "{:>10} {:>9.3}  ({more}, each blocked less: --json has each)", "", ns as f64 / 1e9);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use crate::profile::{OffCpu, Stack, WaitSite};
    use prof_core::ledger::{ThreadTime, Wait as Charged};

    fn site(call: &str, target: Option<&str>, frames: &[u64]) -> WaitSite {
        WaitSite {
            pid: 0,
            call: call.into(),
            target: target.map(Into::into),
            stack: Stack { frames: frames.iter().map(|&a| Frame::Program(a)).collect(), truncated: false, count: 0 },
        }
    }

    /// Two threads: main waits in `a` on two files (one wait, two targets) and in `b` on a
    /// child; thread 8 in `c`; 5 ms no look saw. Sites with the same call and stack are one.
    fn profile() -> Profile {
        Profile::from(Parts {
            clock: crate::profile::Clock { threads: vec![
                ThreadTime {
                    tid: 7,
                    wall: 2_000_000_000,
                    preempted: 0,
                    blocked: 1_505_000_000,
                    waits: vec![
                        Charged { site: 0, ns: 900_000_000, count: 3 },
                        Charged { site: 1, ns: 100_000_000, count: 1 },
                        Charged { site: 2, ns: 500_000_000, count: 1 },
                        Charged { site: UNSEEN, ns: 5_000_000, count: 10 },
                    ],
                    unknown: 0,
                },
                ThreadTime {
                    tid: 8,
                    wall: 1_000_000_000,
                    preempted: 0,
                    blocked: 400_000_000,
                    waits: vec![Charged { site: 3, ns: 400_000_000, count: 4 }],
                    unknown: 0,
                },
            ], wait_sites: vec![
                site("read", Some("/etc/a"), &[0x1110, 0x1020]),
                site("read", Some("/etc/b"), &[0x1120, 0x1020]),
                site("wait4", Some("pid 99"), &[0x1210, 0x1020]),
                site("futex", None, &[0x1310]),
            ], off_cpu: Some(OffCpu { rate: 1000, problem: None, kernel: false }), ..Default::default() },
            ..Default::default()
        })
    }

    #[test]
    fn waits_are_grouped_named_and_ranked() {
        let p = profile();
        let w = waits(&p, &Names::of_run(crate::stacks::tests::symbolizer(), &p, Default::default()));
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].call.as_str(), w[0].ns, w[0].count), ("read", 1_000_000_000, 4));
        assert_eq!(w[0].frames, ["a", "main"]);
        assert_eq!(w[0].targets, [(Some("/etc/a".to_string()), 900_000_000), (Some("/etc/b".to_string()), 100_000_000)]);
        assert_eq!(w[1].by_thread, [(7, 500_000_000)]);
        assert_eq!(unseen(&p), (5_000_000, 10));
    }

    #[test]
    fn the_waiting_section() {
        let p = profile();
        let w = waits(&p, &Names::of_run(crate::stacks::tests::symbolizer(), &p, Default::default()));
        assert_eq!(
            render(&p, &w, 2),
            "Waiting (--off-cpu: each thread looked at 1000 times a second; its blocked time, the kernel's figure, is split over the calls by the looks that found it there):\n\
             \x20 1.91 s blocked, 19 waits seen; 1.90 s (99.7 %) at the calls below, 5.0 ms where no look found the thread blocked\n\
             \x20  seconds  % time    seen       mean  call\n\
             \x20    1.000   33.33       4   250.0 ms  read on 2 targets (most: /etc/a), in a\n\
             \x20                                   at a <- main\n\
             \x20    0.500   16.67       1   500.0 ms  wait4 on pid 99, in b\n\
             \x20                                   at b <- main\n\
             \x20    0.400   13.33  (1 more calls)\n\
             \x20 By thread:\n\
             \x20      tid   blocked  its most blocked call (all its waits there)\n\
             \x20        7     1.505  1.00 s read on 2 targets (most: /etc/a), in a\n\
             \x20        8     0.400  400.0 ms futex, in c\n"
        );
        assert_eq!(render(&Profile::default(), &[], 10), "");
    }

    /// Redox: the kernel timed every block, so the section says so and every mean is exact.
    #[test]
    fn the_waiting_section_of_the_kernels_account() {
        let mut p = profile();
        p.parts_mut().clock.off_cpu = Some(OffCpu { rate: 0, problem: None, kernel: true });
        let w = waits(&p, &Names::of_run(crate::stacks::tests::symbolizer(), &p, Default::default()));
        let text = render(&p, &w, 1);
        assert!(
            text.starts_with(
                "Waiting (--off-cpu: the kernel timed every block of the program's threads, at the user stack it blocked at):\n\
                 \x20 1.91 s blocked, 19 waits in all; 1.90 s (99.7 %) at the calls below, 5.0 ms where the kernel kept no site\n\
                 \x20  seconds  % time    seen       mean  call\n\
                 \x20    1.000   33.33       4   250.0 ms  read on 2 targets (most: /etc/a), in a\n"
            ),
            "{text}"
        );
        // ramfs's samples while it served the read: its share of the wait.
        p.parts_mut().clock.served = vec![crate::profile::ServedStack { site: 0, pid: 7, frames: vec![0x7000], truncated: false, count: 250 }];
        p.parts_mut().servers = Some(prof_core::formats::ServersReport {
            servers: vec![prof_core::formats::ServerEntry { pid: 7, ticks: 250, path: "/scheme/initfs/bin/ramfs".into(), stacks: vec![] }],
            ..Default::default()
        });
        p.parts_mut().source.sampling = Some(prof_core::sampler::Sampling { source: "nmi-hpet", rate: 1000 });
        let w = waits(&p, &Names::of_run(crate::stacks::tests::symbolizer(), &p, Default::default()));
        assert_eq!(w[0].served, [(7, 250)]);
        let text = render(&p, &w, 1);
        let under_the_stack = format!(
            "{:>39}a <- main\n{:39}ramfs [pid 7] on a CPU for it: 250.0 ms (250 samples, 25.0 % of the wait); the rest it waited itself or for a CPU\n",
            "at ", ""
        );
        assert!(text.contains(&under_the_stack), "{text}");
        // A mean the looks could not tell is the kernel's exact one.
        let many = Wait { process: None, call: "read".into(), targets: vec![], frames: vec![], truncated: false, ns: 1_500_000, count: 1500, by_thread: vec![], served: vec![] };
        assert_eq!(exact_mean(&many), "1 us");
    }

    /// Waits shorter than two periods have no mean the looks can tell.
    #[test]
    fn a_mean_is_shown_only_where_the_looks_can_tell_it() {
        let w = |ns, count| Wait { process: None, call: "read".into(), targets: vec![], frames: vec![], truncated: false, ns, count, by_thread: vec![], served: vec![] };
        assert_eq!(mean(&w(900_000_000, 3), 1000), "300.0 ms");
        // 1.5 s over 1,500 waits seen: about a period each, whatever they lasted.
        assert_eq!(mean(&w(1_500_000_000, 1500), 1000), "< 2.0 ms");
        assert_eq!(mean(&w(1_500_000_000, 1500), 100), "< 20.0 ms");
        assert_eq!(mean(&w(0, 0), 1000), "-");
    }
}
