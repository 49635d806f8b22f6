//! The text files of the `prof:` scheme: `status`, `bins`, `samples`, `stacks`, `servers`,
//! `timeline`. A stable contract —
//! shell scripts parse these; see docs/prof-scheme.md for the documented keys.

use std::fmt::Write;

use crate::prof_data::ProfData;
pub use crate::session::StackFrame;
use crate::sampler::Account;
use crate::sample::CallStack;
use crate::process::{ProcessSamples, StackTicks};
use crate::session::{ChildProcess, Placed, PlacedSample, ServerProfile, Session, SessionState, StopReason};

/// `/scheme/prof/status`: one line of `key=value` pairs, always the same keys in the same order:
///
/// `state pid reason ticks_in_bins ticks_user ticks_kernel dropped start end bin_sz nr_bins load_base
/// ticks_servers ticks_idle ticks_other source rate later_execs records rate_sent span_ns rings
/// clock_hz`
/// (`ticks_servers`, `ticks_idle`, `ticks_other`: ticks of daemons working for the program, of
/// idle, of other processes, 0 where the backend does not see them; `source` and `rate`: what
/// samples and how often per second and CPU, `timer` or `nmi-hpet` on Redox, `none 0` before
/// the backend said; `rings`: the CPUs sampled, each by its ring, 0 where not said; `clock_hz`:
/// the records' clock's counts a second as the kernel stated them, 0 where it did not)
pub fn status_line(state: SessionState, session: Option<&Session>) -> String {
    let reason = match state {
        SessionState::Stopped(r) => r.as_str(),
        _ => "none",
    };
    let d = session.map(|s| s.data.clone()).unwrap_or_default();
    let (pid, in_bins, user, kernel, lost, base) = match session {
        Some(s) => (s.pid, s.ticks_in_bins(), s.program.user_ticks, s.program.kernel_ticks, s.lost, s.load_base),
        None => (0, 0, 0, 0, 0, None),
    };
    let account = session.map(|s| s.account).unwrap_or_default();
    let base = base.map_or("unknown".to_string(), |b| format!("{b:#x}"));
    let sampling = session.and_then(|s| s.sampling);
    let span = session.and_then(|s| s.record_span).unwrap_or_default();
    // The keys after load_base came later (server attribution, then the sampling source, then
    // the execs after the profiled one, then the records' timing, then the rings, then the
    // kernel's clock rate); earlier ones keep their places.
    format!(
        "state={} pid={pid} reason={reason} ticks_in_bins={in_bins} ticks_user={user} ticks_kernel={kernel} \
         dropped={lost} start={:#x} end={:#x} bin_sz={} nr_bins={} load_base={base} \
         ticks_servers={} ticks_idle={} ticks_other={} source={} rate={} later_execs={} records={} \
         rate_sent={} span_ns={} rings={} clock_hz={}\n",
        state.as_str(),
        d.start_addr,
        d.end_addr,
        d.bin_sz,
        d.nr_bins,
        account.servers(),
        account.idle,
        account.other,
        sampling.map_or("none", |s| s.source),
        sampling.map_or(0, |s| s.rate),
        session.map_or(0, |s| s.later_execs),
        if session.is_some_and(|s| s.typed_records) { "typed" } else { "none" },
        span.rate_sent,
        span.span_ns,
        session.and_then(|s| s.rings).unwrap_or(0),
        session.and_then(|s| s.clock_hz).unwrap_or(0),
    )
}

/// `/scheme/prof/servers` (Redox): where the run's time went besides the program itself. A
/// header line with every account of the run's ticks, then for each daemon that worked for
/// the program (most ticks first) a `server PID TICKS PATH` line followed by its samples,
/// most ticks first, as `stack PID COUNT complete|truncated ADDR…` lines (its stack innermost
/// first; a PC alone, `truncated`, where no walk was made; addresses as the daemon runs them).
/// Without a session: the header with zeros.
pub fn servers_text(session: Option<&Session>) -> String {
    let a = session.map(|s| s.account).unwrap_or_default();
    let (user, kernel) = session.map_or((0, 0), |s| (s.program.user_ticks, s.program.kernel_ticks));
    let total = [user, kernel, a.server_user, a.server_kernel, a.idle, a.other]
        .iter()
        .fold(0u64, |n, &t| n.saturating_add(t));
    let mut out = format!(
        "# own_user={user} own_kernel={kernel} server_user={} server_kernel={} servers_dropped={} \
         idle={} other={} total={total}\n",
        a.server_user, a.server_kernel, a.servers_dropped, a.idle, a.other
    );
    let Some(s) = session else { return out };
    for (pid, server) in servers_in_order(s) {
        let _ = writeln!(out, "server {pid} {} {}", server.ticks(), server.path);
        write_stack_lines(&mut out, *pid, &server.samples.stacks);
    }
    out
}

/// The daemons (or processes) as [`servers_text`] lists them: most ticks first.
fn servers_in_order(s: &Session) -> Vec<(&u32, &ServerProfile)> {
    let mut servers: Vec<(&u32, &ServerProfile)> = s.servers.iter().collect();
    servers.sort_by(|a, b| b.1.ticks().cmp(&a.1.ticks()).then_with(|| a.0.cmp(b.0)));
    servers
}

/// A process's stacks as the files list them: most ticks first.
fn stacks_in_order(stacks: &std::collections::BTreeMap<CallStack, StackTicks>) -> Vec<(&CallStack, &StackTicks)> {
    let mut stacks: Vec<_> = stacks.iter().collect();
    stacks.sort_by(|a, b| b.1.ticks.cmp(&a.1.ticks).then_with(|| a.0.cmp(b.0)));
    stacks
}

/// A process's samples in `servers` and `children`: `stack PID COUNT complete|truncated ADDR…`
/// lines, most ticks first (innermost frame first).
fn write_stack_lines(out: &mut String, pid: u32, stacks: &std::collections::BTreeMap<CallStack, StackTicks>) {
    for (stack, StackTicks { ticks: count, .. }) in stacks_in_order(stacks) {
        let _ = write!(out, "stack {pid} {count} {}", if stack.truncated { "truncated" } else { "complete" });
        for frame in &stack.frames {
            let _ = write!(out, " {frame:#x}");
        }
        out.push('\n');
    }
}

/// One line [`write_stack_lines`] wrote, after its `stack `: (pid, stack, count).
fn parse_stack_line(rest: &str) -> Option<(u32, CallStack, u64)> {
    let mut w = rest.split_ascii_whitespace();
    let pid = w.next()?.parse().ok()?;
    let count = w.next()?.parse().ok()?;
    let truncated = match w.next()? {
        "complete" => false,
        "truncated" => true,
        _ => return None,
    };
    let frames = w.map(|f| crate::ctl::number(f).ok()).collect::<Option<Vec<u64>>>()?;
    Some((pid, CallStack { frames, truncated }, count))
}

/// `/scheme/prof/children` (Redox, `--children`): the processes the program started, to any
/// depth. A header line `# processes=N user=U kernel=K missed=M` (their user and kernel ticks;
/// `missed`: processes started that the kernel could not follow), then for each process, in
/// pid order, a `process PID PARENT USER KERNEL running|exited EXEC` line (`PARENT` `-` where
/// its start was not seen; `EXEC` the program it exec'd, `-` for a forked copy that has not:
/// it runs its parent's) followed by its samples, most ticks first, as `stack PID COUNT
/// complete|truncated ADDR…` lines (innermost first; kernel frames first where the kernel was
/// sampled; a sample taken before its exec has no frames). A `process` line with the program's
/// own pid (parent `-`) is the image the program became by an exec after the profiled one: its
/// samples from then on, which the program's own files leave out, with or without
/// `children`. Without a session: the header.
pub fn children_text(session: Option<&Session>) -> String {
    let empty = std::collections::BTreeMap::new();
    let processes = session.map_or(&empty, |s| &s.processes);
    // The header counts the processes the program started, not the image it became.
    let started = processes.iter().filter(|(&pid, c)| session.is_none_or(|s| pid != s.pid || c.parent.is_some()));
    let (n, user, kernel) =
        started.fold((0usize, 0u64, 0u64), |(n, u, k), (_, c)| (n + 1, u.saturating_add(c.samples.user_ticks), k.saturating_add(c.samples.kernel_ticks)));
    let missed = session.map_or(0, |s| s.children_missed);
    let mut out = format!("# processes={n} user={user} kernel={kernel} missed={missed}\n");
    for (pid, c) in processes {
        let parent = c.parent.map_or("-".to_string(), |p| p.to_string());
        let state = if c.exited { "exited" } else { "running" };
        let exec = c.exec.as_deref().unwrap_or("-");
        let _ = writeln!(out, "process {pid} {parent} {} {} {state} {exec}", c.samples.user_ticks, c.samples.kernel_ticks);
        write_stack_lines(&mut out, *pid, &c.samples.stacks);
    }
    out
}

/// What [`children_text`] says, read back by a client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildrenReport {
    /// Each process by pid: its parent, exec, ticks, stacks, and its user samples (its user
    /// stacks' leaves).
    pub processes: std::collections::BTreeMap<u32, ChildProcess>,
    pub missed: u64,
}

/// Parse [`children_text`]; `None` without its header line. Lines that do not parse are
/// skipped.
pub fn parse_children(text: &str) -> Option<ChildrenReport> {
    let mut lines = text.lines();
    let header = lines.next()?.strip_prefix("# ")?;
    let missed = parse_status(header).into_iter().find(|kv| kv.0 == "missed").and_then(|kv| kv.1.parse().ok()).unwrap_or(0);
    let mut report = ChildrenReport { missed, ..Default::default() };
    for line in lines {
        let mut w = line.split_ascii_whitespace();
        match w.next() {
            Some("process") => {
                let parsed = (|| {
                    let pid: u32 = w.next()?.parse().ok()?;
                    let parent = match w.next()? {
                        "-" => None,
                        p => Some(p.parse().ok()?),
                    };
                    let (user_ticks, kernel_ticks) = (w.next()?.parse().ok()?, w.next()?.parse().ok()?);
                    let exited = match w.next()? {
                        "exited" => true,
                        "running" => false,
                        _ => return None,
                    };
                    let exec = w.collect::<Vec<_>>().join(" ");
                    let exec = (exec != "-" && !exec.is_empty()).then_some(exec);
                    let samples = ProcessSamples { user_ticks, kernel_ticks, ..Default::default() };
                    Some((pid, ChildProcess { parent, exec, samples, exited, ..Default::default() }))
                })();
                if let Some((pid, c)) = parsed {
                    report.processes.insert(pid, c);
                }
            }
            Some("stack") => {
                let Some((pid, stack, count)) = line.strip_prefix("stack ").and_then(parse_stack_line) else { continue };
                let Some(c) = report.processes.get_mut(&pid) else { continue };
                // A user sample's address is its stack's leaf (none: taken before its exec).
                match stack.frames.first() {
                    Some(&leaf) if leaf >= crate::sampler::KERNEL_SPACE_START => {}
                    leaf => {
                        let n = c.samples.user.entry(leaf.copied().unwrap_or(0)).or_insert(0);
                        *n = n.saturating_add(count);
                    }
                }
                let n = c.samples.stacks.entry(stack).or_default();
                n.ticks = n.ticks.saturating_add(count);
            }
            _ => {}
        }
    }
    Some(report)
}

/// Where an address is, as the files name it (`text`: the program's, link-time; `other`:
/// runtime; `kernel`), and the address.
fn place_of(frame: StackFrame) -> (&'static str, u64) {
    match frame {
        StackFrame::Text(a) => ("text", a),
        StackFrame::Other(a) => ("other", a),
        StackFrame::Kernel(a) => ("kernel", a),
    }
}

/// The address `addr` at the place named `place` ([`place_of`]'s names).
fn frame_at(place: &str, addr: u64) -> Option<StackFrame> {
    match place {
        "text" => Some(StackFrame::Text(addr)),
        "other" => Some(StackFrame::Other(addr)),
        "kernel" => Some(StackFrame::Kernel(addr)),
        _ => None,
    }
}

/// `/scheme/prof/threads` (Redox): the program's samples by thread, one line per thread and
/// sampled address, by thread then address: `TID ADDR COUNT where` (`where` as in `samples`:
/// `text`, link-time; `other`, runtime; `kernel`). The thread is the kernel's context id, the
/// clock's tid; the samples are those with a call stack (every one where the kernel walks).
pub fn threads_text(session: Option<&Session>) -> String {
    let mut out = String::new();
    let Some(s) = session else { return out };
    for (tid, samples) in &s.thread_samples {
        for (&ip, &count) in samples {
            let (place, addr) = place_of(crate::session::place_frames(&[ip], s.load_base, &s.text)[0]);
            let _ = writeln!(out, "{tid} {addr:#x} {count} {place}");
        }
    }
    out
}

/// Parse [`threads_text`]: (tid, placed address, count). Lines that do not parse are skipped.
pub fn parse_threads(text: &str) -> Vec<(u32, StackFrame, u64)> {
    text.lines()
        .filter_map(|line| {
            let w: Vec<&str> = line.split_ascii_whitespace().collect();
            let [tid, addr, count, place] = w.as_slice() else { return None };
            let (tid, addr, count) = (tid.parse().ok()?, crate::ctl::number(addr).ok()?, count.parse().ok()?);
            Some((tid, frame_at(place, addr)?, count))
        })
        .collect()
}

/// `/scheme/prof/bins`: a header line, then one line per bin: `lo hi count` (lo and hi
/// inclusive, link-time, hex; count decimal).
pub fn bins_text(d: &ProfData) -> String {
    let mut out = format!(
        "# start={:#x} end={:#x} bin_sz={} nr_bins={} total={}\n",
        d.start_addr,
        d.end_addr,
        d.bin_sz,
        d.nr_bins,
        d.total()
    );
    if let Some(layout) = d.layout() {
        for (i, count) in d.bin[..layout.nr_bins].iter().enumerate() {
            let (lo, hi) = layout.bin_bounds(i);
            let _ = writeln!(out, "{lo:#x} {hi:#x} {count}");
        }
    }
    out
}

/// `/scheme/prof/samples`: exact `address count where` lines, ascending; `where` is `text`
/// for the program's own code (link-time address), `other` for anything else in user mode
/// (runtime address: shared objects, or the whole program while its load base is unknown),
/// and `kernel` for the kernel's code run for the program (its address; Redox with an NMI
/// source).
pub fn samples_text(session: Option<&Session>) -> String {
    let mut out = String::new();
    if let Some(s) = session {
        for (addr, count) in s.image_samples() {
            let _ = writeln!(out, "{addr:#x} {count} text");
        }
        for (addr, count) in s.foreign_samples() {
            let _ = writeln!(out, "{addr:#x} {count} other");
        }
        for (addr, count) in &s.kernel_samples {
            let _ = writeln!(out, "{addr:#x} {count} kernel");
        }
    }
    out
}

/// `/scheme/prof/stacks`: the recorded call stacks (the kernel's frame-pointer walks), one
/// line each, most ticks first: `count complete|truncated frame...`, frames innermost first
/// (the sampled address, then return addresses), each `text:ADDR` (the program's own code,
/// link-time), `other:ADDR` (runtime) or `kernel:ADDR` (a kernel sample's kernel frames, which
/// come first, above the program's frames of its system call). Ticks whose stack the kernel's
/// table had no room for are `truncated` stacks of their sampled address alone. Empty when no
/// stacks were recorded.
pub fn stacks_text(session: Option<&Session>) -> String {
    let mut out = String::new();
    let Some(s) = session else { return out };
    for (stack, count) in stacks_in_order(&s.program.stacks) {
        let _ = write!(out, "{} {}", count.ticks, if stack.truncated { "truncated" } else { "complete" });
        for frame in s.stack_frames(stack) {
            let (place, addr) = place_of(frame);
            let _ = write!(out, " {place}:{addr:#x}");
        }
        out.push('\n');
    }
    out
}

/// The version of [`timeline_text`]'s lines, its first line's second word (1 had no
/// `process` sections).
pub const TIMELINE_VERSION: u32 = 2;

/// `/scheme/prof/timeline`: the samples in time order. A first line `timeline VERSION span NS`
/// (the program's span, ns from its start to its end), then a line per sample of the program:
/// `TIME TID PLACE:ADDR STACK`: TIME ns from the program's start (to the µs), TID the thread
/// (the kernel's context id, as `threads` and `clock` name it), PLACE `text` (the program's
/// code, link-time), `other` (runtime), `kernel` (a kernel address the kernel's ELF names) or
/// `tick` (a kernel tick, not named), STACK the sample's call stack as its line number (from
/// 0) in `stacks`, or `-`; and each whole wait of its threads, where the kernel times both ends
/// (its switch records): `wait TID FROM TO SITE`, ns from the same start, SITE the wait site's
/// `id` in `clock`. Then, for each process of `servers` (the daemons working for the
/// program, or every process of a system-wide run) with timed samples, in that file's order,
/// a line `process PID span NS` and its samples, the same, times from the same start, STACK
/// its stack's number among that process's `stack` lines there, and each request of the
/// program's it worked on, whole: `served TID FROM TO FOR SITE` (its thread, from taking the
/// request to answering it, the program's thread it was for, that thread's wait site as
/// `clock`'s id, or `-`); then for each process the
/// program started (`children`, pid order) with timed samples `child PID span NS` and its
/// samples, STACK its stack's number among that process's distinct stacks in `children` taken
/// in their order (by frames, innermost first, numerically; complete before truncated). Empty
/// when the backend times no samples.
pub fn timeline_text(session: Option<&Session>) -> String {
    let mut out = String::new();
    let Some(s) = session else { return out };
    let (span, samples) = s.placed_timeline(stacks_in_order(&s.program.stacks).into_iter().map(|(_, c)| c));
    // Every process's times from one start, found once.
    let origin = s.origin().unwrap_or(0);
    let processes: Vec<(u32, u64, Vec<PlacedSample>, Vec<crate::timeline::ServedSpan>)> = servers_in_order(s)
        .into_iter()
        .filter(|(_, server)| !server.samples.timeline.is_empty() || !server.served.is_empty())
        .map(|(&pid, server)| {
            let (span, samples) = crate::session::placed_process_timeline(&server.samples, origin, stacks_in_order(&server.samples.stacks).into_iter().map(|(_, c)| c));
            (pid, span, samples, server.placed_served(origin))
        })
        .collect();
    let children: Vec<(u32, u64, Vec<PlacedSample>)> = s
        .processes
        .iter()
        .filter(|(_, c)| !c.samples.timeline.is_empty())
        .map(|(&pid, c)| {
            let (span, samples) = c.placed_timeline(origin, c.samples.stacks.values());
            (pid, span, samples)
        })
        .collect();
    let waits = s.placed_waits();
    if samples.is_empty() && processes.is_empty() && children.is_empty() && waits.is_empty() {
        return out;
    }
    let _ = writeln!(out, "timeline {TIMELINE_VERSION} span {span}");
    write_placed(&mut out, &samples);
    for w in waits {
        let _ = writeln!(out, "wait {} {} {} {}", w.tid, w.from, w.to, w.site);
    }
    for (pid, span, samples, served) in processes {
        let _ = writeln!(out, "process {pid} span {span}");
        write_placed(&mut out, &samples);
        for w in served {
            let site = w.site.map_or("-".to_string(), |site| site.to_string());
            let _ = writeln!(out, "served {} {} {} {} {site}", w.tid, w.from, w.to, w.for_tid);
        }
    }
    for (pid, span, samples) in children {
        let _ = writeln!(out, "child {pid} span {span}");
        write_placed(&mut out, &samples);
    }
    out
}

/// Samples of [`timeline_text`], a line each.
fn write_placed(out: &mut String, samples: &[PlacedSample]) {
    for p in samples {
        let (place, addr) = match p.at {
            Placed::Cpu(frame) => place_of(frame),
            Placed::Kernel(ip) => ("tick", ip),
            // The kernel times each wait itself (`clock`): no look is a sample here.
            Placed::Blocked(_) => continue,
        };
        let _ = write!(out, "{} {} {place}:{addr:#x} ", p.time, p.tid);
        let _ = match p.stack {
            Some(n) => writeln!(out, "{n}"),
            None => writeln!(out, "-"),
        };
    }
}

/// [`timeline_text`] read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimelineFile {
    /// The program's span and samples.
    pub span: u64,
    pub samples: Vec<PlacedSample>,
    /// Each other process's (`servers`'): (pid, span, samples).
    pub processes: Vec<(u32, u64, Vec<PlacedSample>)>,
    /// Each process's the program started (`children`'s).
    pub children: Vec<(u32, u64, Vec<PlacedSample>)>,
    /// The program's whole waits, their sites as `clock`'s ids.
    pub waits: Vec<crate::timeline::WaitSpan>,
    /// The daemons' work for it, by the daemon's pid, the sites as `clock`'s ids.
    pub served: Vec<(u32, crate::timeline::ServedSpan)>,
}

/// [`timeline_text`] read back; `None` for a version this client does not know, or a damaged
/// line.
pub fn parse_timeline(text: &str) -> Option<TimelineFile> {
    let mut lines = text.lines();
    let Some(first) = lines.next() else { return Some(TimelineFile::default()) };
    let mut file = match first.split_ascii_whitespace().collect::<Vec<_>>()[..] {
        ["timeline", "1" | "2", "span", span] => TimelineFile { span: crate::ctl::number(span).ok()?, ..Default::default() },
        _ => return None,
    };
    // Where the lines go: the program's, or the last section's.
    let mut section: Option<&'static str> = None;
    for line in lines {
        let w: Vec<&str> = line.split_ascii_whitespace().collect();
        if let [kind @ ("process" | "child"), pid, "span", span] = w[..] {
            let pid = u32::try_from(crate::ctl::number(pid).ok()?).ok()?;
            let list = if kind == "process" { &mut file.processes } else { &mut file.children };
            list.push((pid, crate::ctl::number(span).ok()?, Vec::new()));
            section = Some(if kind == "process" { "process" } else { "child" });
            continue;
        }
        if let ["wait", tid, from, to, site] = w[..] {
            let number = |s: &str| crate::ctl::number(s).ok();
            let id = |s: &str| u32::try_from(number(s)?).ok();
            file.waits.push(crate::timeline::WaitSpan { tid: id(tid)?, from: number(from)?, to: number(to)?, site: id(site)? });
            continue;
        }
        if let ["served", tid, from, to, for_tid, site] = w[..] {
            let number = |s: &str| crate::ctl::number(s).ok();
            let id = |s: &str| u32::try_from(number(s)?).ok();
            let pid = file.processes.last()?.0;
            let site = match site {
                "-" => None,
                s => Some(id(s)?),
            };
            file.served.push((pid, crate::timeline::ServedSpan { tid: id(tid)?, from: number(from)?, to: number(to)?, for_tid: id(for_tid)?, site }));
            continue;
        }
        let [time, tid, at, stack] = w[..] else { return None };
        let (place, addr) = at.split_once(':')?;
        let addr = crate::ctl::number(addr).ok()?;
        let sample = PlacedSample {
            time: crate::ctl::number(time).ok()?,
            tid: u32::try_from(crate::ctl::number(tid).ok()?).ok()?,
            at: match place {
                "tick" => Placed::Kernel(addr),
                _ => Placed::Cpu(frame_at(place, addr)?),
            },
            stack: match stack {
                "-" => None,
                n => Some(u32::try_from(crate::ctl::number(n).ok()?).ok()?),
            },
        };
        let list = match section {
            None => &mut file.samples,
            Some("process") => &mut file.processes.last_mut()?.2,
            Some(_) => &mut file.children.last_mut()?.2,
        };
        list.push(sample);
    }
    Some(file)
}

/// Parse [`stacks_text`] back into (frames, truncated, count), for clients. Lines that do not
/// parse are skipped.
pub fn parse_stacks(text: &str) -> Vec<(Vec<StackFrame>, bool, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut w = line.split_ascii_whitespace();
            let count = crate::ctl::number(w.next()?).ok()?;
            let truncated = match w.next()? {
                "complete" => false,
                "truncated" => true,
                _ => return None,
            };
            let frames = w
                .map(|f| {
                    let (place, addr) = f.split_once(':')?;
                    frame_at(place, crate::ctl::number(addr).ok()?)
                })
                .collect::<Option<Vec<_>>>()?;
            // No frames at all: ticks whose stack the kernel could not keep (truncated).
            (!frames.is_empty() || truncated).then_some((frames, truncated, count))
        })
        .collect()
}

/// What [`servers_text`] says, read back by a client.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServersReport {
    /// The program's own user and kernel ticks.
    pub own_user: u64,
    pub own_kernel: u64,
    pub account: Account,
    /// Each daemon that worked for the program, most ticks first.
    pub servers: Vec<ServerEntry>,
}

/// One daemon of a [`ServersReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServerEntry {
    pub pid: u32,
    pub ticks: u64,
    pub path: String,
    /// (frames innermost first, truncated, count), most ticks first.
    pub stacks: Vec<(Vec<u64>, bool, u64)>,
}

/// Parse [`servers_text`]; `None` without its header line. Lines that do not parse are skipped.
pub fn parse_servers(text: &str) -> Option<ServersReport> {
    let mut lines = text.lines();
    let header = lines.next()?.strip_prefix("# ")?;
    let field = |key: &str| -> u64 {
        parse_status(header).into_iter().find(|kv| kv.0 == key).and_then(|kv| kv.1.parse().ok()).unwrap_or(0)
    };
    let mut report = ServersReport {
        own_user: field("own_user"),
        own_kernel: field("own_kernel"),
        account: Account {
            server_user: field("server_user"),
            server_kernel: field("server_kernel"),
            servers_dropped: field("servers_dropped"),
            idle: field("idle"),
            other: field("other"),
        },
        servers: Vec::new(),
    };
    for line in lines {
        if let Some(rest) = line.strip_prefix("server ") {
            let mut w = rest.splitn(3, ' ');
            let (Some(pid), Some(ticks), Some(path)) = (w.next(), w.next(), w.next()) else { continue };
            let (Ok(pid), Ok(ticks)) = (pid.parse(), ticks.parse()) else { continue };
            report.servers.push(ServerEntry { pid, ticks, path: path.to_string(), stacks: Vec::new() });
        } else if let Some((pid, stack, count)) = line.strip_prefix("stack ").and_then(parse_stack_line) {
            if let Some(server) = report.servers.iter_mut().rev().find(|s| s.pid == pid) {
                server.stacks.push((stack.frames, stack.truncated, count));
            }
        }
    }
    Some(report)
}

/// What [`samples_text`] says, read back by a client: (address, count) in each place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples {
    pub text: Vec<(u64, u64)>,
    pub other: Vec<(u64, u64)>,
    pub kernel: Vec<(u64, u64)>,
}

/// Parse [`samples_text`], for clients. Lines that do not parse are skipped.
pub fn parse_samples(text: &str) -> Samples {
    let mut out = Samples::default();
    for line in text.lines() {
        let w: Vec<&str> = line.split_ascii_whitespace().collect();
        if let [addr, count, place] = w.as_slice() {
            let (Ok(a), Ok(n)) = (crate::ctl::number(addr), crate::ctl::number(count)) else { continue };
            match *place {
                "text" => out.text.push((a, n)),
                "other" => out.other.push((a, n)),
                "kernel" => out.kernel.push((a, n)),
                _ => {}
            }
        }
    }
    out
}

/// Parse a [`status_line`] back into pairs (for clients and tests).
pub fn parse_status(line: &str) -> Vec<(String, String)> {
    line.split_ascii_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A status line's number at `key` (0 where it has none, or no number).
fn status_number(status: &[(String, String)], key: &str) -> u64 {
    status.iter().find(|kv| kv.0 == key).and_then(|kv| crate::ctl::number(&kv.1).ok()).unwrap_or(0)
}

/// The sampling a status line names (`source`, `rate`); `None` for no source or one not among
/// [`crate::sampler::SOURCES`] (the field is a `&'static str`; a profd from before the NMI
/// source has no such keys).
pub fn sampling(status: &[(String, String)]) -> Option<crate::sampler::Sampling> {
    let named = status.iter().find(|kv| kv.0 == "source").map(|kv| kv.1.as_str());
    let source = crate::sampler::SOURCES.into_iter().find(|&name| Some(name) == named)?;
    Some(crate::sampler::Sampling { source, rate: status_number(status, "rate") })
}

/// The records' timing a status line gives (`rate_sent`, `span_ns`); `None` where it gives no
/// span (a profd from before them, a backend whose records have no times).
pub fn record_span(status: &[(String, String)]) -> Option<crate::sampler::RecordSpan> {
    let span = crate::sampler::RecordSpan { rate_sent: status_number(status, "rate_sent"), span_ns: status_number(status, "span_ns") };
    (span.span_ns > 0).then_some(span)
}

/// The CPUs a status line says the kernel samples, a ring each (`rings`); `None` where it
/// says none (a profd from before the key, a backend that does not say).
pub fn rings(status: &[(String, String)]) -> Option<u64> {
    Some(status_number(status, "rings")).filter(|&n| n > 0)
}

/// The stop reason named in a status line.
pub fn reason_from_str(s: &str) -> Option<StopReason> {
    [StopReason::Request, StopReason::Exit, StopReason::Overflow].into_iter().find(|r| r.as_str() == s)
}

/// A run's stop reason by its name (`"exit"`, or `null` for none), as a saved run holds it:
/// `#[serde(with = "prof_core::formats::reason_name")]` on an `Option<StopReason>`.
pub mod reason_name {
    use super::{reason_from_str, StopReason};
    use serde::{de::Error, Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(reason: &Option<StopReason>, s: S) -> Result<S::Ok, S::Error> {
        reason.map(StopReason::as_str).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<StopReason>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(name) => reason_from_str(&name).map(Some).ok_or_else(|| D::Error::custom(format!("unknown stop reason {name:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_status_has_every_key() {
        let line = status_line(SessionState::Idle, None);
        assert_eq!(
            line,
            "state=idle pid=0 reason=none ticks_in_bins=0 ticks_user=0 ticks_kernel=0 dropped=0 \
             start=0x0 end=0x0 bin_sz=0 nr_bins=0 load_base=unknown ticks_servers=0 ticks_idle=0 ticks_other=0 \
             source=none rate=0 later_execs=0 records=none rate_sent=0 span_ns=0 rings=0 clock_hz=0\n"
        );
        let keys: Vec<String> = parse_status(&line).into_iter().map(|kv| kv.0).collect();
        assert_eq!(
            keys,
            [
                "state", "pid", "reason", "ticks_in_bins", "ticks_user", "ticks_kernel", "dropped", "start", "end",
                "bin_sz", "nr_bins", "load_base", "ticks_servers", "ticks_idle", "ticks_other", "source", "rate",
                "later_execs", "records", "rate_sent", "span_ns", "rings", "clock_hz"
            ]
        );
    }

    /// The sampling and the records' timing read back from a status line: a known source
    /// with its rate, none for an unknown or missing one; no span where it says none.
    #[test]
    fn sampling_and_record_span_from_a_status_line() {
        use crate::sampler::{RecordSpan, Sampling};
        let st = parse_status("state=running source=timer rate=0 records=typed rate_sent=246 span_ns=2000");
        assert_eq!(sampling(&st), Some(Sampling { source: "timer", rate: 0 }));
        assert_eq!(record_span(&st), Some(RecordSpan { rate_sent: 246, span_ns: 2000 }));
        let st = parse_status("source=nmi-ipi rate=4000 rate_sent=0 span_ns=0");
        assert_eq!(sampling(&st), Some(Sampling { source: "nmi-ipi", rate: 4000 }));
        assert_eq!(record_span(&st), None);
        assert_eq!(sampling(&parse_status("source=none rate=0")), None);
        assert_eq!(sampling(&parse_status("state=idle")), None);
        // The CPUs sampled: none said by a profd from before the key, nor by 0.
        assert_eq!(rings(&parse_status("source=nmi-ipi rate=0 rings=1")), Some(1));
        assert_eq!(rings(&parse_status("source=nmi-ipi rate=0 rings=0")), None);
        assert_eq!(rings(&parse_status("source=nmi-ipi rate=0 rate_sent=0 span_ns=0")), None);
    }

    #[test]
    fn bins_of_an_empty_profile() {
        assert_eq!(bins_text(&ProfData::default()), "# start=0x0 end=0x0 bin_sz=0 nr_bins=0 total=0\n");
    }

    #[test]
    fn a_timeline_of_another_version_or_damaged_is_not_read() {
        let good = "timeline 2 span 9000\n1000 7 text:0x401000 0\n2000 8 tick:0xffff800000001000 -\nwait 7 2500 8000 40\nprocess 20 span 3000\n3000 21 other:0x402000 1\nserved 21 2600 2900 7 40\nchild 30 span 4000\n4000 31 other:0x402000 -\n";
        let file = parse_timeline(good).unwrap();
        assert_eq!(file.span, 9000);
        assert_eq!(
            file.samples,
            [
                PlacedSample { time: 1000, tid: 7, at: Placed::Cpu(StackFrame::Text(0x40_1000)), stack: Some(0) },
                PlacedSample { time: 2000, tid: 8, at: Placed::Kernel(0xffff_8000_0000_1000), stack: None },
            ]
        );
        let daemon = PlacedSample { time: 3000, tid: 21, at: Placed::Cpu(StackFrame::Other(0x40_2000)), stack: Some(1) };
        assert_eq!(file.processes, [(20, 3000, vec![daemon])]);
        assert_eq!(file.waits, [crate::timeline::WaitSpan { tid: 7, from: 2500, to: 8000, site: 40 }]);
        assert_eq!(file.served, [(20, crate::timeline::ServedSpan { tid: 21, from: 2600, to: 2900, for_tid: 7, site: Some(40) })]);
        let child = PlacedSample { time: 4000, tid: 31, at: Placed::Cpu(StackFrame::Other(0x40_2000)), stack: None };
        assert_eq!(file.children, [(30, 4000, vec![child])]);
        assert_eq!(parse_timeline(""), Some(TimelineFile::default()));
        // Version 1, without processes, still reads; a later one does not.
        assert_eq!(parse_timeline("timeline 1 span 9000\n").map(|f| f.span), Some(9000));
        assert_eq!(parse_timeline("timeline 3 span 9000\n"), None);
        for damaged in ["1000 7 text:0x401000 0\n", "timeline 1 span 9000\n1000 7 text:0x401000\n", "timeline 1 span 9000\n1000 7 here:0x1 0\n", "timeline 1 span 9000\n1000 7 text:0x1 0 9\n"] {
            assert_eq!(parse_timeline(damaged), None, "{damaged}");
        }
    }

    #[test]
    fn samples_round_trip() {
        use crate::image::{ImageLayout, LoadSegment, TextSegment};
        use crate::sampler::{SampleBatch, Sampler};
        use crate::session::{Profd, StartRequest};
        struct One(Option<SampleBatch>);
        impl Sampler for One {
            fn process_owner(&mut self, _: u32) -> Result<u32, crate::ProfError> {
                Ok(0)
            }
            fn start(&mut self, _: u32, _: &ImageLayout, _: crate::sampler::CountFrom, _: Option<u64>, _: bool) -> Result<(), crate::ProfError> {
                Ok(())
            }
            fn collect(&mut self) -> Result<SampleBatch, crate::ProfError> {
                Ok(self.0.take().unwrap_or_default())
            }
            fn stop(&mut self) {}
        }
        let base = 0x5555_0000_0000;
        let batch = SampleBatch {
            samples: crate::sample::user_runs(&[(base + 0x1010, 3), (base + 0x1fff, 1), (0x7f00_0000_0042, 2)])
                .into_iter()
                .chain((0..4).map(|_| crate::sample::Sample::kernel(None, 1, 0xffff_ffff_8000_1234, true, None)))
                .collect(),
            load_base: Some(base),
            ..Default::default()
        };
        let image = ImageLayout {
            text: TextSegment { start: 0x1000, end: 0x2000 },
            exec_segments: vec![LoadSegment { vaddr: 0x1000, memsz: 0x1000, offset: 0x1000 }],
        };
        let mut p = Profd::new(One(Some(batch)));
        p.profile(0, StartRequest { pid: 1, start: 0, end: 0, interval: 0, from: crate::sampler::CountFrom::Now, rate: None, children: false }, &image).unwrap();
        p.pump().unwrap();
        let s = p.last_session().unwrap();
        let text = samples_text(Some(s));
        assert_eq!(text, "0x1010 3 text\n0x1fff 1 text\n0x7f0000000042 2 other\n0xffffffff80001234 4 kernel\n");
        let back = parse_samples(&text);
        assert_eq!((back.text, back.other), (s.image_samples(), s.foreign_samples()));
        assert_eq!(back.kernel, vec![(0xffff_ffff_8000_1234, 4)]);
        assert_eq!(parse_samples("junk\n0x10 x text\n0x10 1 elsewhere\n"), Samples::default());
    }

    #[test]
    fn reasons_round_trip() {
        for r in [StopReason::Request, StopReason::Exit, StopReason::Overflow] {
            assert_eq!(reason_from_str(r.as_str()), Some(r));
        }
        assert_eq!(reason_from_str("none"), None);
    }
}
