//! The report in the layout of the Minix spec's `profil`, plus our summary lines.
//!
//! Everything here is a pure function of its inputs, so the exact text is tested against
//! golden files (`tests/golden/`).

use std::fmt::Write;

use prof_core::layout::{min_bin_size, MAX_BINS};
use prof_core::ProfData;

use prof_core::sampler::CallGraph;

use crate::profile::Profile;
use crate::words::{busiest, count, percent};
use crate::stacks::StackProfile;

/// A signal's name (`SIGSEGV`), or its number where it has none here.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

/// Bar length at 100 %: the spec's sample draws 28 stars for 69.26 %, i.e. ceil(pct * 0.4).
const BAR_AT_100_PERCENT: u64 = 40;

/// `************************* Output of 'prog' ****************************`
pub fn output_banner(program: &str) -> String {
    banner(&format!("Output of '{program}'"))
}

/// `************************* Profile Statistics ****************************`
pub fn statistics_banner() -> String {
    banner("Profile Statistics")
}

fn banner(title: &str) -> String {
    format!("{} {} {}\n", "*".repeat(25), title, "*".repeat(28))
}

/// The statistics and histogram, as the spec's sample run lays them out (its arithmetic
/// slips corrected: the last bin's size is computed).
pub fn minix_statistics(d: &ProfData) -> String {
    let mut out = String::new();
    let Some(layout) = d.layout() else {
        return "No profile data.\n".into();
    };
    let size = layout.size();
    let w = |out: &mut String, s: String| out.push_str(&s);
    w(&mut out, format!("{MAX_BINS} maximum bins\n"));
    w(&mut out, format!("Profiled Text Size = {size} = {size:#x}\n"));
    w(&mut out, format!("{size}/{MAX_BINS} = {:.3}\n", size as f64 / MAX_BINS as f64));
    w(&mut out, format!("Minimum bytes/bin: {}\n", min_bin_size(size)));
    w(&mut out, format!("Bin Size: {}\n", layout.bin_sz));
    w(&mut out, format!("Bins used: {}\n", layout.nr_bins));
    w(&mut out, format!("Last bin represents last {} bytes\n", layout.last_bin_bytes()));
    w(
        &mut out,
        format!(
            "start_addr = {:#x}, end_addr = {:#x}, nr_bins = {}, bin_sz = {}\n",
            d.start_addr, d.end_addr, d.nr_bins, d.bin_sz
        ),
    );
    let total = d.total();
    w(&mut out, format!("Total ticks in all bins: {total}\n"));
    if total == 0 {
        out.push_str("No ticks fell in the profiled range.\n");
        return out;
    }
    // Address columns as wide as the largest address, at least 4 digits as in the spec.
    let width = format!("{:x}", d.end_addr.saturating_sub(1)).len().max(4);
    // In u128: a count times 40 or 100 need not fit in u64.
    let bars = |count: u64| (u128::from(count) * u128::from(BAR_AT_100_PERCENT)).div_ceil(u128::from(total)) as usize;
    let pct = |count: u64| count as f64 * 100.0 / total as f64;
    let rows: Vec<(usize, u64)> =
        d.bin[..layout.nr_bins].iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (i, c)).collect();
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0);
    // The dotted scale line reaches the end of the longest bar.
    let prefix_len = 2 * width + 1 + " (100.00%) : ".len() - 1;
    let _ = writeln!(
        out,
        "{}maximum percentage interval: {}%",
        ".".repeat(prefix_len + bars(max)),
        (u128::from(max) * 100).div_ceil(u128::from(total))
    );
    let mut shown = 0;
    for (i, count) in rows {
        let (lo, hi) = layout.bin_bounds(i);
        let _ = writeln!(out, "{lo:0width$x}-{hi:0width$x} ({:5.2}%) : {} ({count})", pct(count), "*".repeat(bars(count)));
        shown += count;
    }
    let _ = writeln!(out, "Percentage time in shown intervals: {:.2}", pct(shown));
    out
}

/// The run's time, by the clock and on the CPU: its wall time (as profil measured it), and
/// the CPU time of the program: on Linux what its ticks stand for (a tick per
/// `1 / frequency_hz` s of CPU time), on Redox the kernel's clock of its threads (its ticks
/// are of every CPU, at a rate); so a program that mostly waits is not read as "99 % its own
/// code". Empty where the wall time or the CPU time is not known.
pub fn time_line(p: &Profile, frequency_hz: u64) -> String {
    let Some(wall) = p.clock().elapsed else { return String::new() };
    // A tree (--children): the CPU time of every process of it, as the report's rows have it.
    let tree = !p.is_system_wide() && !p.processes().is_empty();
    let ticks = match tree {
        true => p.with_processes().fold(0u64, |n, q| n.saturating_add(q.ticks())),
        false => p.ticks(),
    } as f64;
    let sent = p.source().record_span.map_or(0, |r| r.rate_sent);
    let clocked = |q: &Profile| q.clock().threads.iter().fold(0u64, |n, t| n.saturating_add(t.on_cpu()));
    let mut lost = String::new();
    let (cpu, how) = match p.source().sampling {
        None if frequency_hz > 0 => (ticks / frequency_hz as f64, String::new()),
        Some(_) if !p.clock().threads.is_empty() => {
            // The processes the kernel's records clock; those it does not, by their samples.
            let theirs = p.processes().iter().filter(|_| tree).map(|c| match c.profile.clock().threads.is_empty() {
                false => clocked(&c.profile) as f64 / 1e9,
                true if sent > 0 => c.profile.ticks() as f64 / sent as f64,
                true => 0.0,
            });
            (clocked(p) as f64 / 1e9 + theirs.sum::<f64>(), String::new())
        }
        // Upstream's records without switches: by the gaps between its samples where they
        // are timed (samples the source never delivered leave gaps, not idle time), else its
        // samples at the rate their clock gives, less what the kernel leaves out.
        Some(s) if s.is_upstreams() && sent > 0 => match on_cpu_by_gaps(p, sent) {
            Some(g) => {
                // The records' clock (the TSC) and profil's elapsed time (the guest's clock,
                // which loses ticks under a loaded host) differ by several percent: the CPU
                // time is put on the elapsed time's clock by the session's span in both.
                let records = g.ns as f64 / 1e9;
                let scale = match p.source().record_span.map_or(0, |r| r.span_ns) {
                    0 => 1.0,
                    span => (wall.as_secs_f64() * 1e9 / span as f64).clamp(0.8, 1.25),
                };
                let cpu = records * scale;
                let expected = (records * sent as f64).round() as u64;
                if g.samples < expected {
                    lost = format!(
                        "      {} of the {expected} samples its source sent while it ran were recorded: the rest were lost before the kernel's ring (the sending CPU's timer late, NMIs merged)\n",
                        g.samples
                    );
                }
                (cpu, " by the gaps between its samples".to_string())
            }
            None => (ticks / sent as f64, " by its samples".to_string()),
        },
        _ => return String::new(),
    };
    let wall = wall.as_secs_f64();
    let share = if wall > 0.0 { cpu * 100.0 / wall } else { 0.0 };
    let whose = match p.processes().len() {
        _ if !tree => String::new(),
        1 => " in its 2 processes".to_string(),
        n => format!(" in its {} processes", n + 1),
    };
    let mut out = format!("Time: {wall:.2} s elapsed, {cpu:.2} s of it on a CPU{whose}{how} ({share:.0} % of the elapsed time");
    // Only several threads (or processes) can be on CPUs longer than the run lasted; one that
    // seems to was measured by two clocks (the kernel's records', profil's elapsed time).
    let one_thread = p.clock().threads.len().max(p.by_thread().len()) == 1;
    out.push_str(match share {
        s if s > 105.0 && tree => ": several processes ran at once)\n",
        s if s > 105.0 && !one_thread => ": several threads ran at once)\n",
        s if s > 105.0 => ": one thread, its CPU time by the kernel's clock, the elapsed time by profil's)\n",
        s if s < 90.0 => "; the rest the program waited or was not running)\n",
        _ => ")\n",
    });
    out + &lost
}

/// A thread's samples this many source periods apart or less ran it all along: the samples
/// between were lost before the kernel recorded them (on upstream's profiler the sending CPU's
/// timer runs late and skips periods, and NMIs merge: a quarter to a third of them in QEMU on
/// a loaded host, in runs of up to 8 periods and more). A wait that short (16 ms at the
/// kernel's 954 a second) is counted as CPU time.
const RUN_GAP_PERIODS: u64 = 16;

/// The program's time on a CPU from its timed samples (upstream's records, no switches): per
/// thread, the gap to its next sample where that is at most [`RUN_GAP_PERIODS`] periods of the
/// source's `rate`, else one period; and the samples counted.
struct GapTime {
    ns: u64,
    samples: u64,
}

fn on_cpu_by_gaps(p: &Profile, rate: u64) -> Option<GapTime> {
    let period = 1_000_000_000 / rate.max(1);
    let mut by_tid: std::collections::BTreeMap<u32, Vec<u64>> = std::collections::BTreeMap::new();
    for t in p.timeline().samples.iter().filter(|t| !matches!(t.at, crate::timeline::At::Blocked(_))) {
        by_tid.entry(t.tid).or_default().push(t.time);
    }
    let samples: u64 = by_tid.values().map(|v| v.len() as u64).sum();
    if samples == 0 {
        return None;
    }
    let mut ns = 0u64;
    for times in by_tid.values_mut() {
        times.sort_unstable();
        for w in times.windows(2) {
            let gap = w[1] - w[0];
            ns = ns.saturating_add(if gap <= RUN_GAP_PERIODS * period { gap } else { period });
        }
        ns = ns.saturating_add(period);
    }
    Some(GapTime { ns, samples })
}

/// Linux: the program's threads by the clock, from the kernel's scheduler statistics: time on a CPU,
/// and off it, blocked (asleep, waiting for I/O, a lock, a child) or waiting for a CPU
/// (preempted: other tasks had it). Seconds of thread time (a thread's life, from its start or
/// the session's to its end); a line per thread where there are several.
pub fn clock_section(p: &Profile) -> String {
    let mut out = String::new();
    if p.clock().threads.is_empty() {
        return out;
    }
    let sum = |f: &dyn Fn(&prof_core::ledger::ThreadTime) -> u64| p.clock().threads.iter().fold(0u64, |n, t| n.saturating_add(f(t)));
    let (wall, on, blocked, preempted) = (sum(&|t| t.wall), sum(&|t| t.on_cpu()), sum(&|t| t.blocked), sum(&|t| t.preempted));
    let unknown = sum(&|t| t.unknown);
    let seconds = |ns: u64| ns as f64 / 1e9;
    let threads = match p.clock().threads.len() {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    let _ = writeln!(out, "By the clock ({threads}, {:.2} s of thread time):", seconds(wall));
    let _ = writeln!(out, "  seconds       %  where");
    for (ns, what) in [
        (on, "on a CPU"),
        (blocked, "off it, blocked (asleep, waiting for I/O, a lock, a child)"),
        (preempted, "off it, waiting for a CPU (other tasks had it)"),
    ] {
        let _ = writeln!(out, "{:>9.3} {:>7.2}  {what}", seconds(ns), percent(ns, wall));
    }
    if unknown > 0 {
        let seen = p.clock().threads.iter().filter(|t| t.unknown > 0).count() as u64;
        // Switch records (Redox): a record lost; looks (Linux): a thread no look saw.
        let why = match p.source().typed_records {
            true => format!("{} lost a switch record (the time around it is none of the three)", count(seen, "thread")),
            false => format!("{} began and ended between two looks (on a CPU: what their ticks show)", count(seen, "thread")),
        };
        let _ = writeln!(out, "{:>9.3} {:>7.2}  not known: {why}", seconds(unknown), percent(unknown, wall));
    }
    if p.clock().threads.len() > 1 {
        let _ = writeln!(out, "      tid  seconds on CPU blocked preempted{}", if unknown > 0 { " not known" } else { "" });
        let (shown, rest) = busiest(&p.clock().threads, |t| t.on_cpu());
        for t in shown {
            let not_known = match unknown {
                0 => String::new(),
                _ => format!(" {:>9.3}", seconds(t.unknown)),
            };
            let _ = writeln!(
                out,
                "{:>9} {:>8.3} {:>6.3} {:>7.3} {:>9.3}{not_known}",
                t.tid,
                seconds(t.wall),
                seconds(t.on_cpu()),
                seconds(t.blocked),
                seconds(t.preempted)
            );
        }
        if !rest.is_empty() {
            let on = rest.iter().fold(0u64, |n, t| n.saturating_add(t.on_cpu()));
            let _ = writeln!(out, "{:>9} {:>8} {:>6.3}  ({}, each on a CPU less: --json has each)", "", "", seconds(on), count(rest.len() as u64, "more thread"));
        }
    }
    out
}

/// How the program ended (the run's model has it).
pub use crate::profile::ExitKind;

/// Our lines after the histogram: where the ticks went, why the session ended, how the
/// program exited.
/// `stacks` is the run's named stacks (`-g`): its counts are the ones every other section shows.
/// `interpreters`: the program is a `#!` script these ran (the last one's text is binned).
pub fn summary(p: &Profile, stacks: Option<&StackProfile>, program: &str, interpreters: &[String], exit: ExitKind) -> String {
    let mut out = String::new();
    let kernel = match p.kernel_ticks() {
        Some(k) => format!("{k} kernel"),
        None => "kernel not counted (not permitted)".into(),
    };
    let _ = writeln!(out, "Ticks: {} user ({} in bins), {kernel}, {} lost", p.user_ticks(), p.data().total(), p.lost());
    sampling_lines(&mut out, p);
    if p.lost() > 0 {
        let were = if p.lost() == 1 { "was" } else { "were" };
        let _ = writeln!(out, "Warning: {} {were} lost; the profile undercounts.", count(p.lost(), "sample"));
    }
    if let Some(sp) = stacks {
        let kernel = p.kernel_samples().iter().fold(0u64, |n, s| n.saturating_add(s.1));
        let of = match kernel {
            0 => count(p.user_ticks(), "user sample"),
            k => format!("{} (user and kernel)", count(p.user_ticks().saturating_add(k), "sample")),
        };
        let _ = writeln!(out, "Call stacks: {} of {of}, {} truncated (their outermost callers are missing)", sp.total, sp.truncated);
    }
    // With --children they have a section of their own.
    if p.children().1 > 0 && p.processes().is_empty() {
        let (processes, samples) = p.children();
        let processes = if processes == 1 { "1 process".to_string() } else { format!("{processes} processes") };
        let _ = writeln!(
            out,
            "Note: {} in {processes} '{program}' started were not counted: the profile is of one process (--children profiles them too).",
            count(samples, "sample")
        );
    }
    if let Some(r) = p.stop_reason() {
        let _ = writeln!(out, "Session ended by: {}", r.as_str());
    }
    // The text the bins cover: the program's, or its interpreter's.
    let binned = match interpreters.last() {
        Some(interpreter) => {
            let by = interpreters.join(", then ");
            let _ = writeln!(out, "Note: '{program}' is a script, run by {by}: the bins cover the text of {interpreter}");
            interpreter.clone()
        }
        None => format!("'{program}'"),
    };
    // One line for a chain of execs (a version manager's shims exec several times).
    if !p.later_execs().is_empty() {
        let other = crate::profile::ANOTHER_PROGRAM;
        let known: Vec<&str> = p.later_execs().iter().map(String::as_str).filter(|e| *e != other).collect();
        let unknown = p.later_execs().len() - known.len();
        let mut names = known.join(", ");
        match (known.is_empty(), unknown) {
            (_, 0) => {}
            (true, 1) => names = other.to_string(),
            (true, n) => names = format!("{n} other programs"),
            (false, 1) => names += " and 1 other",
            (false, n) => names += &format!(" and {n} others"),
        }
        let (what, became) = match p.later_execs().len() {
            1 => (names, "the program it became"),
            n => (format!("{n} times ({names}; busiest first)"), "the programs it became"),
        };
        // Bins of a program that handed its run over at once are empty: say why, plainly.
        let empty = match p.data().total() {
            0 => ", which had none of the samples (the flat profile has the work)",
            _ => "",
        };
        let _ = writeln!(out, "Note: '{program}' exec'd {what}: the bins cover the text of {binned}{empty}, not of {became}");
    }
    let _ = match exit {
        ExitKind::Exited(code) => writeln!(out, "'{program}' exited with status {code}"),
        ExitKind::Signaled(sig) => writeln!(out, "'{program}' was killed by {} ({sig})", signal_name(sig)),
        ExitKind::Attached { pid, exited: true } => writeln!(out, "'{program}' (pid {pid}, attached) exited"),
        ExitKind::Attached { pid, exited: false } => {
            writeln!(out, "'{program}' (pid {pid}, attached) was still running when profiling stopped")
        }
    };
    out
}

/// Hints after the summary, where the call stacks say something is missing (Linux, where the
/// user chooses how stacks are taken).
pub fn hints(stacks: Option<&StackProfile>, call_graph: CallGraph) -> String {
    let mut out = String::new();
    let Some(sp) = stacks.filter(|sp| sp.total > 0 && crate::platform::STACKS_ARE_CHOSEN) else { return out };
    let percent = |n: u64| (n as f64 * 100.0 / sp.total as f64).round();
    match call_graph {
        CallGraph::Dwarf { stack_size } if sp.truncated * 10 > sp.total => {
            let _ = writeln!(
                out,
                "Hint: {}% of the call stacks were cut short; a larger --stack-size (this run copied {} bytes \
                 of each, at most {}) may reach their roots.",
                percent(sp.truncated),
                stack_size,
                prof_core::sampler::MAX_STACK_SIZE
            );
        }
        CallGraph::FramePointers if sp.rooted * 2 < sp.total => {
            let _ = writeln!(
                out,
                "Hint: {}% of the frame-pointer stacks end before a process start routine: the code was \
                 built without frame pointers (gcc -fno-omit-frame-pointer, rustc -C force-frame-pointers=yes); \
                 --call-graph dwarf needs none.",
                percent(sp.total - sp.rooted)
            );
        }
        _ => {}
    }
    out
}

/// The row a report's table of where the ticks went has for idle on upstream's profiler (its
/// `samples` and `%` columns empty), where its records have no idle sample.
pub const UPSTREAM_IDLE_ROW: &str = "        -       -  idle: not recorded by upstream's profiler (nor kernel code with interrupts on)";
/// ...and what the row says where they have some (a counted row: the rows add up).
pub const UPSTREAM_IDLE: &str = "idle, what upstream's profiler records of it (kernel code with interrupts off only)";

/// The `Sampling:` line (the source, its rate asked and delivered, what it samples), and a
/// warning where the source delivered much less than asked; nothing where the run has no
/// source to name.
pub fn sampling_lines(out: &mut String, p: &Profile) {
    if let Some(s) = p.source().sampling {
        // Upstream's sender runs at the kernel's rate; with kernel-patch/events at the one asked.
        let at = match s.rate {
            0 => "at the kernel's rate (-F has no effect)",
            _ => "at the rate asked (-F)",
        };
        let what = match s.source {
            "timer" if p.source().typed_records => "upstream's profiler with typed records (kernel-patch/events) on one CPU, none to give to \
                 NMIs: its timer tick, idle and kernel code with interrupts on included (a system call, run with interrupts \
                 off, shows at the instruction after it); the clock and the daemons' work from its switch and request records"
                .to_string(),
            // Runs saved under the earlier, in-kernel design (`--load`): its timer and HPET.
            "timer" => {
                "the kernel's timer tick, user mode only (no NMI source for -F: the kernel has none, or the machine no HPET it can use)".to_string()
            }
            "nmi-ipi" if !p.source().typed_records => format!(
                "upstream's profiler: NMIs from a CPU of its own {at}, kernel code with interrupts off only; the daemons' \
                 work for the program, the clock and the waits need kernel-patch/events"
            ),
            "nmi-ipi" => format!(
                "upstream's profiler with typed records (kernel-patch/events): NMIs from a CPU of its own {at}, kernel \
                 code with interrupts off only; the clock and the daemons' work from its switch and request records"
            ),
            _ => "NMIs, the kernel's work for the program included".to_string(),
        };
        let achieved = p.achieved_rate();
        // The NMI source runs at the rate asked (-F); the timer at its own.
        let nmi = s.source != "timer";
        // The rate the source sent, where its records time it: what it delivered is less where
        // the kernel leaves samples out (idle, kernel code with interrupts on).
        let sent = p.source().record_span.map(|r| r.rate_sent).filter(|&n| n > 0);
        let delivered = achieved.map_or(String::new(), |r| format!(", {r:.0} delivered"));
        let rate = match (achieved, nmi, sent) {
            (_, _, Some(n)) if s.rate == 0 => format!("the kernel's rate, {n} a second per CPU by its records' clock{delivered}"),
            (_, true, Some(n)) => format!("{} a second per CPU asked, {n} sent{delivered}", s.rate),
            // The kernel's own rate, which it does not say.
            (Some(r), true, None) if s.rate == 0 => format!("{r:.0} a second per CPU delivered"),
            (None, _, _) if s.rate == 0 => "the kernel's rate".to_string(),
            (Some(r), true, None) => format!("{} a second per CPU asked, {r:.0} delivered", s.rate),
            (Some(r), false, _) => format!("{} a second per CPU, {r:.0} delivered", s.rate),
            (None, _, _) => format!("{} a second per CPU", s.rate),
        };
        let _ = writeln!(out, "Sampling: {}, {rate}: {what}", s.source);
        // QEMU's HPET skips periods when the host is busy; the report's shares are then of
        // fewer samples, and less even ones. Where the records time the source, its own rate
        // is what it sent.
        if let Some(r) = sent.map(|n| n as f64).or(achieved).filter(|&r| nmi && r < s.rate as f64 * 0.95) {
            let _ = writeln!(
                out,
                "Warning: the source delivered {:.0} % of the rate asked; shares rest on fewer samples than -F says (a busy host under QEMU skips timer periods).",
                r * 100.0 / s.rate as f64
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use prof_core::image::TextSegment;
    use prof_core::BinLayout;

    fn data(start: u64, end: u64, interval: u64, counts: &[(usize, u64)]) -> ProfData {
        let text = TextSegment { start: 0x0, end: 0x10_0000 };
        let mut d = ProfData::new(&BinLayout::new(text, start, end, interval).unwrap());
        for &(i, c) in counts {
            d.bin[i] = c;
        }
        d
    }

    #[test]
    fn banners_match_the_spec() {
        assert_eq!(
            output_banner("fib"),
            "************************* Output of 'fib' ****************************\n"
        );
        assert_eq!(
            statistics_banner(),
            "************************* Profile Statistics ****************************\n"
        );
    }

    #[test]
    fn spec_sample_run_i128() {
        // The spec's first sample: -s 0x50 -e 0x300 -i 128, bins 83, 2, 6, 205.
        let d = data(0x50, 0x300, 128, &[(0, 83), (1, 2), (2, 6), (3, 205)]);
        expect_test::expect_file!["../tests/golden/spec_sample_i128.txt"].assert_eq(&minix_statistics(&d));
    }

    #[test]
    fn spec_sample_run_i0x49() {
        let d = data(0x50, 0x300, 0x49, &[(0, 76), (2, 2), (4, 10), (5, 7), (6, 210)]);
        expect_test::expect_file!["../tests/golden/spec_sample_i0x49.txt"].assert_eq(&minix_statistics(&d));
    }

    #[test]
    fn wide_addresses_and_full_last_bin() {
        let d = data(0x8000, 0x18000, 0x4000, &[(0, 1), (3, 3)]);
        expect_test::expect_file!["../tests/golden/wide_full_last_bin.txt"].assert_eq(&minix_statistics(&d));
    }

    #[test]
    fn no_ticks() {
        let d = data(0x50, 0x300, 128, &[]);
        expect_test::expect_file!["../tests/golden/no_ticks.txt"].assert_eq(&minix_statistics(&d));
    }

    #[test]
    fn huge_counts_do_not_overflow_the_bars() {
        // Bins as read from /scheme/prof/data may hold any count: count * 40 must not overflow.
        let half = u64::MAX / 2;
        let s = minix_statistics(&data(0x50, 0x300, 128, &[(0, half), (3, half)]));
        assert!(s.contains("maximum percentage interval: 50%\n"), "{s}");
        assert!(s.contains(&format!("0050-00cf (50.00%) : {} ({half})\n", "*".repeat(20))), "{s}");
    }

    /// Upstream's profiler: what the run lacks is named, until the records give the clock.
    #[test]
    fn the_sampling_line_of_upstreams_profiler_says_what_its_records_give() {
        let sampling = Some(prof_core::sampler::Sampling::upstream());
        let mut stock = Profile::from(Parts { source: crate::profile::Source { sampling, ..Default::default() }, ..Default::default() });
        let mut out = String::new();
        sampling_lines(&mut out, &stock);
        assert_eq!(
            out,
            "Sampling: nmi-ipi, the kernel's rate: upstream's profiler: NMIs from a CPU of its own at the kernel's rate (-F has no effect), \
             kernel code with interrupts off only; the daemons' work for the program, the clock and the waits need kernel-patch/events\n"
        );
        stock.parts_mut().source.typed_records = true;
        out.clear();
        sampling_lines(&mut out, &stock);
        assert_eq!(
            out,
            "Sampling: nmi-ipi, the kernel's rate: upstream's profiler with typed records (kernel-patch/events): NMIs from a CPU of its \
             own at the kernel's rate (-F has no effect), kernel code with interrupts off only; the clock and the daemons' work from \
             its switch and request records\n"
        );
        // A kernel with the rate patch took -F.
        let asked = Profile::from(Parts { source: crate::profile::Source { sampling: Some(prof_core::sampler::Sampling { source: "nmi-ipi", rate: 4000 }), ..stock.source().clone() }, ..stock.into_parts() });
        out.clear();
        sampling_lines(&mut out, &asked);
        assert_eq!(
            out,
            "Sampling: nmi-ipi, 4000 a second per CPU: upstream's profiler with typed records (kernel-patch/events): NMIs from a CPU of \
             its own at the rate asked (-F), kernel code with interrupts off only; the clock and the daemons' work from its switch and \
             request records\n"
        );
    }

    #[test]
    fn the_time_line_sets_cpu_time_beside_the_wall_time() {
        let p = |user, elapsed: f64| Profile::from(Parts {
            user_ticks: user,
            kernel_ticks: Some(20),
            clock: crate::profile::Clock { elapsed: Some(std::time::Duration::from_secs_f64(elapsed)), ..Default::default() },
            ..Default::default()
        });
        // 480 + 20 ticks at 1 kHz: 0.5 s of CPU in 3.2 s.
        assert_eq!(
            time_line(&p(480, 3.2), 1000),
            "Time: 3.20 s elapsed, 0.50 s of it on a CPU (16 % of the elapsed time; the rest the program waited or was not running)\n"
        );
        assert_eq!(time_line(&p(1980, 2.0), 1000), "Time: 2.00 s elapsed, 2.00 s of it on a CPU (100 % of the elapsed time)\n");
        assert!(time_line(&p(3980, 2.0), 1000).ends_with("(200 % of the elapsed time: several threads ran at once)\n"));
        // A tree (--children): every process's CPU time, said so.
        let mut tree = p(980, 2.0);
        let child = |pid, user| crate::profile::ChildProfile {
            pid,
            parent: Some(1),
            program: "/bin/busy".into(),
            profile: Profile::from(Parts { user_ticks: user, kernel_ticks: Some(0), ..Default::default() }),
            running: false,
        };
        tree.parts_mut().processes = vec![child(2, 1000), child(3, 2000)];
        assert_eq!(
            time_line(&tree, 1000),
            "Time: 2.00 s elapsed, 4.00 s of it on a CPU in its 3 processes (200 % of the elapsed time: several processes ran at once)\n"
        );
        tree.parts_mut().user_ticks = 0;
        tree.parts_mut().kernel_ticks = Some(0);
        tree.parts_mut().processes.truncate(1);
        assert_eq!(
            time_line(&tree, 1000),
            "Time: 2.00 s elapsed, 1.00 s of it on a CPU in its 2 processes (50 % of the elapsed time; the rest the program waited or was not running)\n"
        );
        // No wall time, or Redox's ticks (of every CPU, at a rate) without the kernel's clock:
        // no line.
        assert_eq!(time_line(&Profile::default(), 1000), "");
        let mut redox = p(10, 1.0);
        redox.parts_mut().source.sampling = Some(prof_core::sampler::Sampling { source: "nmi-hpet", rate: 1000 });
        assert_eq!(time_line(&redox, 1000), "");
        // With it: the threads' time on a CPU by the kernel's clock.
        redox.parts_mut().clock.threads = vec![prof_core::ledger::ThreadTime { tid: 1, wall: 990_000_000, preempted: 0, blocked: 740_000_000, waits: vec![], unknown: 0 }];
        assert_eq!(
            time_line(&redox, 1000),
            "Time: 1.00 s elapsed, 0.25 s of it on a CPU (25 % of the elapsed time; the rest the program waited or was not running)\n"
        );
        // One thread cannot have run longer than the run: two clocks disagree (`sleep 0`).
        redox.parts_mut().clock.elapsed = Some(std::time::Duration::from_millis(200));
        assert_eq!(
            time_line(&redox, 1000),
            "Time: 0.20 s elapsed, 0.25 s of it on a CPU (125 % of the elapsed time: one thread, its CPU time by the kernel's clock, the elapsed time by profil's)\n"
        );
        // A stock kernel: no clock, but the rate its records' clock gives: 490 ticks at 980 a
        // second. Without that rate, no line.
        let span = prof_core::sampler::RecordSpan { rate_sent: 980, span_ns: 2_000_000_000 };
        let mut stock = p(470, 2.0);
        stock.parts_mut().source.sampling = Some(prof_core::sampler::Sampling::upstream());
        assert_eq!(time_line(&stock, 1000), "");
        stock.parts_mut().source.record_span = Some(span);
        assert_eq!(
            time_line(&stock, 1000),
            "Time: 2.00 s elapsed, 0.50 s of it on a CPU by its samples (25 % of the elapsed time; the rest the program waited or was not running)\n"
        );
        // Timed samples: the gaps between them. At 1000 a second, a run of 1 s with every
        // third sample lost and a run of 10 lost (gaps of 2 and 11 periods: it ran through
        // them), a wait of half a second (one period counted), a run of 0.2 s: 1.20 s on a
        // CPU, 861 of 1,200 samples recorded.
        stock.parts_mut().source.record_span = Some(prof_core::sampler::RecordSpan { rate_sent: 1000, ..span });
        let run = |from: u64, to: u64| (from..to).map(|ms| ms * 1_000_000);
        let lost = |t: &u64| (t / 1_000_000) % 3 != 2 && !(500..510).contains(&(t / 1_000_000));
        let times = run(0, 1000).filter(lost).chain(run(1500, 1700));
        stock.parts_mut().timeline.samples =
            times.map(|time| crate::timeline::TimedSample { time, tid: 1, at: crate::timeline::At::Cpu(crate::frame::Frame::Program(0x1000)), stack: None }).collect();
        assert_eq!(
            time_line(&stock, 1000),
            "Time: 2.00 s elapsed, 1.20 s of it on a CPU by the gaps between its samples (60 % of the elapsed time; the rest the program waited or was not running)\n      \
             861 of the 1200 samples its source sent while it ran were recorded: the rest were lost before the kernel's ring (the sending CPU's timer late, NMIs merged)\n"
        );
        // The records' clock 10 % ahead of profil's (the guest's, losing ticks): the session's
        // span is 2.2 s by the records, 2.0 s by profil: the CPU time on profil's clock.
        stock.parts_mut().source.record_span = Some(prof_core::sampler::RecordSpan { rate_sent: 1000, span_ns: 2_200_000_000 });
        assert!(time_line(&stock, 1000).starts_with("Time: 2.00 s elapsed, 1.09 s of it on a CPU by the gaps between its samples (55 % "), "{}", time_line(&stock, 1000));
    }

    /// Where the records time the source: the rate it sent beside the one delivered, which is
    /// counted over the records' span, not profil's wall time; the warning goes by what it
    /// sent (idle left out is no fault of the source).
    #[test]
    fn the_sampling_line_with_the_records_clock() {
        use prof_core::formats::ServersReport;
        use prof_core::sampler::Account;
        use prof_core::sampler::{RecordSpan, Sampling};
        // 3 s of records on the one sampled CPU of two: 2,700 samples (the program's 2,000,
        // others' 700), where profil's wall time was 4 s.
        let servers = ServersReport { account: Account { other: 700, ..Default::default() }, ..Default::default() };
        let mut p = Profile::from(Parts {
            user_ticks: 1990,
            kernel_ticks: Some(10),
            servers: Some(servers),
            source: crate::profile::Source { sampling: Some(Sampling::upstream()), cpus: Some(2), record_span: Some(RecordSpan { rate_sent: 954, span_ns: 3_000_000_000 }), ..Default::default() },
            clock: crate::profile::Clock { elapsed: Some(std::time::Duration::from_secs(4)), ..Default::default() },
            ..Default::default()
        });
        assert_eq!(p.achieved_rate(), Some(900.0));
        let line = |p: &Profile| {
            let mut out = String::new();
            sampling_lines(&mut out, p);
            out.split(": upstream's").next().unwrap().to_string()
        };
        assert_eq!(line(&p), "Sampling: nmi-ipi, the kernel's rate, 954 a second per CPU by its records' clock, 900 delivered");
        // Asked for 1000: 954 sent, 900 delivered: no warning (over 95 % sent); 940 sent is.
        p.parts_mut().source.sampling = Some(Sampling { source: "nmi-ipi", rate: 1000 });
        assert_eq!(line(&p), "Sampling: nmi-ipi, 1000 a second per CPU asked, 954 sent, 900 delivered");
        let mut out = String::new();
        sampling_lines(&mut out, &p);
        assert!(!out.contains("Warning"), "{out}");
        p.parts_mut().source.record_span = Some(RecordSpan { rate_sent: 940, span_ns: 3_000_000_000 });
        out.clear();
        sampling_lines(&mut out, &p);
        assert!(out.contains("Warning: the source delivered 94 % of the rate asked"), "{out}");
        // Records too few to time the source (`profil sleep 0`): no rate delivered, no
        // warning; without the records' timing at all, over profil's wall time.
        p.parts_mut().source.record_span = Some(RecordSpan { rate_sent: 0, span_ns: 2_000_000 });
        assert_eq!(p.achieved_rate(), None);
        out.clear();
        sampling_lines(&mut out, &p);
        assert!(out.starts_with("Sampling: nmi-ipi, 1000 a second per CPU: upstream's"), "{out}");
        p.parts_mut().source.record_span = None;
        assert_eq!(p.achieved_rate(), Some(675.0));
        // One CPU, the tick (kernel-patch/events): every CPU is sampled; idle is.
        let tick = Profile::from(Parts {
            source: crate::profile::Source { sampling: Some(Sampling { source: "timer", rate: 0 }), typed_records: true, cpus: Some(1), rings: None, record_span: Some(RecordSpan { rate_sent: 246, span_ns: 10_000_000_000 }), kernel: None },
            ..p.into_parts()
        });
        assert_eq!(tick.achieved_rate(), Some(270.0));
        let mut out = String::new();
        sampling_lines(&mut out, &tick);
        assert!(
            out.starts_with("Sampling: timer, the kernel's rate, 246 a second per CPU by its records' clock, 270 delivered: upstream's profiler with typed records (kernel-patch/events) on one CPU"),
            "{out}"
        );
    }

    #[test]
    fn the_clock_section_by_thread() {
        use prof_core::ledger::ThreadTime;
        let p = Profile::from(Parts {
            clock: crate::profile::Clock { threads: vec![
                ThreadTime { tid: 7, wall: 800_000_000, preempted: 0, blocked: 799_000_000, waits: Vec::new(), unknown: 0 },
                ThreadTime { tid: 8, wall: 500_000_000, preempted: 3_000_000, blocked: 0, waits: Vec::new(), unknown: 0 },
            ], ..Default::default() },
            ..Default::default()
        });
        assert_eq!(
            clock_section(&p),
            "By the clock (2 threads, 1.30 s of thread time):\n\
             \x20 seconds       %  where\n\
             \x20   0.498   38.31  on a CPU\n\
             \x20   0.799   61.46  off it, blocked (asleep, waiting for I/O, a lock, a child)\n\
             \x20   0.003    0.23  off it, waiting for a CPU (other tasks had it)\n\
             \x20     tid  seconds on CPU blocked preempted\n\
             \x20       7    0.800  0.001   0.799     0.000\n\
             \x20       8    0.500  0.497   0.000     0.003\n"
        );
        assert_eq!(clock_section(&Profile::default()), "");
        // A thread no look saw, which its ticks show ran 20 ms of its 100: 80 ms not known.
        let mut p = p;
        p.parts_mut().clock.threads.push(ThreadTime { tid: 9, wall: 100_000_000, preempted: 0, blocked: 0, waits: Vec::new(), unknown: 80_000_000 });
        let text = clock_section(&p);
        assert!(
            text.contains("\n    0.080    5.71  not known: 1 thread began and ended between two looks (on a CPU: what their ticks show)\n"),
            "{text}"
        );
        assert!(text.contains("\n      tid  seconds on CPU blocked preempted not known\n"), "{text}");
        // From switch records (Redox), the same time is a lost record's.
        let redox = Profile::from(Parts { source: crate::profile::Source { typed_records: true, ..p.source().clone() }, ..p.clone().into_parts() });
        let text = clock_section(&redox);
        assert!(text.contains("not known: 1 thread lost a switch record (the time around it is none of the three)\n"), "{text}");
        assert!(text.ends_with("\n        9    0.100  0.020   0.000     0.000     0.080\n"), "{text}");
    }

    /// A server of many threads (5 s of `-p` on http.server printed 759 lines): the busiest
    /// 20, in tid order, then one line for the rest.
    #[test]
    fn a_table_of_many_threads_lists_the_busiest() {
        use prof_core::ledger::ThreadTime;
        // Thread 100 + i was on a CPU for i ms.
        let threads = (0..30u32)
            .map(|i| ThreadTime { tid: 100 + i, wall: 100_000_000, preempted: 0, blocked: 100_000_000 - u64::from(i) * 1_000_000, waits: Vec::new(), unknown: 0 })
            .collect();
        let p = Profile::from(Parts { clock: crate::profile::Clock { threads, ..Default::default() }, ..Default::default() });
        let text = clock_section(&p);
        let rows: Vec<&str> = text.lines().skip(6).collect();
        assert_eq!(rows.len(), 21, "{text}");
        assert_eq!(rows[0], "      110    0.100  0.010   0.090     0.000");
        assert_eq!(rows[19], "      129    0.100  0.029   0.071     0.000");
        // The ten idlest: 0 + 1 + ... + 9 ms on a CPU.
        assert_eq!(rows[20], "                    0.045  (10 more threads, each on a CPU less: --json has each)");
    }

    #[test]
    fn summary_lines() {
        let mut p = Profile::from(Parts { data: data(0x50, 0x300, 128, &[(0, 3)]), user_ticks: 5, ..Default::default() });
        p.parts_mut().kernel_ticks = Some(2);
        p.parts_mut().stop_reason = Some(prof_core::StopReason::Exit);
        assert_eq!(
            summary(&p, None, "fib", &[], ExitKind::Exited(0)),
            "Ticks: 5 user (3 in bins), 2 kernel, 0 lost\nSession ended by: exit\n'fib' exited with status 0\n"
        );
        p.parts_mut().kernel_ticks = None;
        p.parts_mut().lost = 4;
        assert_eq!(
            summary(&p, None, "fib", &[], ExitKind::Signaled(9)),
            "Ticks: 5 user (3 in bins), kernel not counted (not permitted), 4 lost\n\
             Warning: 4 samples were lost; the profile undercounts.\n\
             Session ended by: exit\n'fib' was killed by SIGKILL (9)\n"
        );
    }

    #[test]
    fn counts_are_singular_or_plural() {
        assert_eq!((count(0, "sample"), count(1, "sample"), count(2, "sample")), ("0 samples".into(), "1 sample".into(), "2 samples".into()));
        let mut p = Profile::from(Parts { data: data(0x50, 0x300, 128, &[(0, 1)]), user_ticks: 1, lost: 1, ..Default::default() });
        p.parts_mut().kernel_ticks = Some(0);
        let s = summary(&p, None, "fib", &[], ExitKind::Signaled(libc::SIGSEGV));
        assert!(s.contains("Warning: 1 sample was lost; the profile undercounts.\n"), "{s}");
        assert!(s.ends_with("'fib' was killed by SIGSEGV (11)\n"), "{s}");
        assert_eq!(signal_name(64), "signal 64");
    }

    /// Hints where the stacks say something is missing: a stack copy too small for the
    /// program's stacks (dwarf), code without frame pointers (fp).
    #[test]
    fn hints_for_cut_stacks() {
        let sp = crate::stacks::tests::built(crate::stacks::tests::symbolizer(), &crate::stacks::tests::profile()).0.unwrap();
        // 1 of 10 truncated: no hint (10 %, not more); 2 of 9: one.
        let few = StackProfile { truncated: 1, total: 10, ..sp.clone() };
        assert_eq!(hints(Some(&few), CallGraph::Dwarf { stack_size: 16384 }), "");
        let cut = StackProfile { truncated: 2, ..sp.clone() };
        assert_eq!(
            hints(Some(&cut), CallGraph::Dwarf { stack_size: 16384 }),
            "Hint: 22% of the call stacks were cut short; a larger --stack-size (this run copied 16384 bytes \
             of each, at most 65528) may reach their roots.\n"
        );
        // No stack reaches a start routine: the code has no frame pointers.
        assert_eq!(sp.rooted, 0);
        assert!(hints(Some(&sp), CallGraph::FramePointers).starts_with("Hint: 100% of the frame-pointer stacks end before"));
        let rooted = StackProfile { rooted: 9, ..sp.clone() };
        assert_eq!(hints(Some(&rooted), CallGraph::FramePointers), "");
        assert_eq!(hints(None, CallGraph::FramePointers), "");
    }

    /// The stacks line counts what the call graph counts: a stack the walk cut above a
    /// process's start routine is whole (`stacks::StackProfile`), in the summary too.
    #[test]
    fn the_stacks_line_counts_the_named_stacks() {
        let mut p = crate::stacks::tests::profile();
        p.parts_mut().user_ticks = 9;
        let sp = crate::stacks::tests::built(crate::stacks::tests::symbolizer(), &p).0.unwrap();
        let line = summary(&p, Some(&sp), "abc", &[], ExitKind::Exited(0));
        assert!(line.contains("Call stacks: 9 of 9 user samples, 1 truncated (their outermost callers are missing)\n"), "{line}");
        // The raw walks: a relibc start routine ends them "truncated"; named, they are whole.
        let symbols = prof_objects::symbols::SymbolTable::new(vec![
            prof_objects::symbols::Function { addr: 0x1000, size: 0x100, name: "main".into() },
            prof_objects::symbols::Function { addr: 0x1100, size: 0x100, name: "relibc_start_v1".into() },
        ]);
        let s = prof_objects::symbolize::Symbolizer::new(
            prof_objects::object_file::ObjectFile::from_symbols(std::path::Path::new("/bin/fib"), symbols),
            "fib", Default::default(),
        );
        let walked = Profile::from(Parts {
            stacks_recorded: true,
            stacks: vec![crate::profile::Stack {
                frames: vec![crate::profile::Frame::Program(0x1010), crate::profile::Frame::Program(0x1120)],
                truncated: true,
                count: 4,
            }],
            user_ticks: 4,
            ..Default::default()
        });
        let sp = crate::stacks::tests::built(s, &walked).0.unwrap();
        let line = summary(&walked, Some(&sp), "fib", &[], ExitKind::Exited(0));
        assert!(line.contains("Call stacks: 4 of 4 user samples, 0 truncated"), "{line}");
    }
}
