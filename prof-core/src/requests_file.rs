//! `/scheme/prof/requests` (Redox): the program's requests to schemes, each timed from the
//! moment its daemon took it to its answer by the kernel's request records, per process of the
//! tree, scheme and daemon; and the requests the daemons made while serving them (the chains).
//! A stable contract (docs/prof-scheme.md); a reader skips kinds of line it does not know.
//!
//! ```text
//! requests version=1 lost=0 waited=switches
//! daemon 7 /scheme/initfs/bin/ramfs
//! request 10 24 7 3 35000 5000 10000 20000 20000 20000
//! values exact 10000 20000 5000
//! waited 10 24 7 3 65000 15000 20000 30000 30000 30000
//! values exact 20000 30000 15000
//! chain 24 7 31 9 1 8000 8000 8000 8000 8000 8000
//! values exact 8000
//! unfinished 10 1
//! split 10 24 7 3 35000 20000 5000 31:10000
//! timed 10 11 24 7 30 250000 260000
//! served 12000 5000 2000 31:3000
//! made 24 7 31 9 3000
//! untimed 0
//! ```
//!
//! * `requests`: the header (`lost`: records the rings had no room for, the counts short by
//!   as many at most; `waited`: what the `waited` lines time, `switches` or `calls`);
//! * `daemon PID NAME`: each daemon of the lines below, its executable as profd names it (the
//!   rest of the line); `0 [bootstrap]`: the bootstrap's process and namespace managers;
//! * `request PID SCHEME DAEMON COUNT TOTAL MIN MEDIAN P90 P99 MAX`: the requests process
//!   `PID` (the program, or a process it started) made to scheme number `SCHEME` (the kernel's:
//!   `st_dev` of a `stat` of any of the scheme's files) that daemon `DAEMON` took: how many,
//!   and in ns their total, minimum, median, 90th and 99th percentile (nearest rank) and
//!   maximum;
//! * `values exact V…` or `values buckets B:N…`: what the line before is made of, for profil
//!   (every latency while there are at most 4096, else the log-linear histogram's buckets);
//! * `waited PID SCHEME DAEMON COUNT TOTAL MIN MEDIAN P90 P99 MAX`: the same requests from
//!   their callers' side, those whose caller was seen to switch into the call and back: with
//!   `waited=calls` (a kernel that records system calls) from the entry of the system call
//!   that made it to its return, what the caller's own clock sees of it; with
//!   `waited=switches`, from the one switch to the other (that, but the call's entry and
//!   exit), in ns;
//! * `chain SCHEME DAEMON INNER_SCHEME INNER_DAEMON COUNT TOTAL MIN MEDIAN P90 P99 MAX`: the
//!   requests daemon `DAEMON` made to `INNER_SCHEME` (taken by `INNER_DAEMON`) while it served
//!   a request on `SCHEME` (the program's, or one of a chain), and their latencies;
//! * `unfinished PID N`: requests of process `PID` taken and not seen answered;
//! * `split PID SCHEME DAEMON COUNT TOTAL ON_CPU OTHER [WAIT_SCHEME:NS]…`: how the daemon's
//!   thread spent those requests' time, from taking each to answering it: on a CPU, blocked in
//!   a request of its own to scheme `WAIT_SCHEME`, and the rest (preempted, runnable, blocked
//!   otherwise); `TOTAL` = `ON_CPU` + `OTHER` + the waits, and is the `request` line's total;
//! * `timed PID TID SCHEME DAEMON DAEMON_TID FROM TO`: each request whole (the first
//!   [`MAX_TIMED`](crate::requests::MAX_TIMED), in the order they were answered): the caller's
//!   process and thread (0: not seen), the scheme, the daemon and its thread that took it, and
//!   taken and answered in ns from the program's start (the `timeline` file's origin);
//! * `served WAITED ON_CPU OTHER [WAIT_SCHEME:NS]…`, after a `timed` line: that request from
//!   its caller's side (as `waited`, ns; `-`: not seen) and how its daemon's thread spent it
//!   (as `split`: the parts add up to `TO` − `FROM`), so a window of the run counts them;
//! * `made SCHEME DAEMON INNER_SCHEME INNER_DAEMON NS`, after a `served` line: a request a
//!   daemon made while serving that one, at any depth (as `chain`), and its latency;
//! * `untimed N`: requests past those, in the figures but not timed whole.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::requests::{DaemonSplit, Latencies, Request, RequestKey, RequestLog, RequestSource, Served, Site, Stacks, MAX_MADE, MAX_STACK_FRAMES};
use crate::session::Session;

/// The file's version (its header says it).
pub const VERSION: u32 = 1;

/// One `request` line read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRow {
    pub pid: u32,
    pub scheme: u64,
    pub daemon: u32,
    pub latencies: Latencies,
}

/// One `chain` line read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainRow {
    pub outer: (u64, u32),
    pub inner: (u64, u32),
    pub latencies: Latencies,
}

/// One `timed` line read back: a request whole, with its `served` and `made` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedRow {
    pub pid: u32,
    pub tid: u32,
    pub scheme: u64,
    pub daemon: u32,
    pub daemon_tid: u32,
    pub from: u64,
    pub to: u64,
    pub served: Option<ServedRow>,
    /// Its `called-from` line: where its call stack is counted.
    pub site: Site,
}

/// One `stacks` line read back: a process's call stacks of one key, by `site` number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StacksRow {
    pub pid: u32,
    pub scheme: u64,
    pub daemon: u32,
    pub other: u64,
    pub earlier: u64,
    pub counts: Vec<(usize, u64)>,
}

/// A `served` line read back, and the `made` lines after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServedRow {
    pub waited: Option<u64>,
    pub on_cpu: u64,
    pub other: u64,
    /// By scheme number.
    pub waiting: BTreeMap<u64, u64>,
    /// (scheme, daemon) served, (scheme, daemon) made, latency.
    pub made: Vec<(SchemeDaemon, SchemeDaemon, u64)>,
}

/// A key as the file has it: a scheme's number and its daemon's pid.
pub type SchemeDaemon = (u64, u32);

/// `A:B` pairs, each word one (`split` and `served` lines end with `SCHEME:NS`, `stacks` lines
/// with `SITE:COUNT`, `values buckets` lines are `BUCKET:COUNT`); `None` where one is not.
fn pairs_of<'w, A: std::str::FromStr, B: std::str::FromStr, C: FromIterator<(A, B)>>(words: impl IntoIterator<Item = &'w str>) -> Option<C> {
    words.into_iter().map(|p| p.split_once(':').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))).collect()
}

/// `SCHEME:NS` pairs, as `split` and `served` lines end.
fn waits_of(words: &[&str]) -> Option<BTreeMap<u64, u64>> {
    pairs_of(words.iter().copied())
}

/// `SCHEME DAEMON`: a key's numbers.
fn scheme_daemon(scheme: &str, daemon: &str) -> Option<SchemeDaemon> {
    Some((scheme.parse().ok()?, daemon.parse().ok()?))
}

/// One `split` line read back: (pid, scheme, daemon), the split, its waits by scheme number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRow {
    pub pid: u32,
    pub scheme: u64,
    pub daemon: u32,
    pub count: u64,
    pub total: u64,
    pub on_cpu: u64,
    pub waiting: BTreeMap<u64, u64>,
}

/// The file read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestsFile {
    pub lost: u64,
    /// `waited=calls`: the `waited` lines time each request by its system call.
    pub sides_in_calls: bool,
    pub daemons: BTreeMap<u32, String>,
    pub requests: Vec<RequestRow>,
    pub waited: Vec<RequestRow>,
    pub chains: Vec<ChainRow>,
    pub unfinished: BTreeMap<u32, u64>,
    pub splits: Vec<SplitRow>,
    pub timed: Vec<TimedRow>,
    pub untimed: u64,
    /// The `site` lines: each call stack once, by its number.
    pub sites: Vec<Vec<u64>>,
    pub stacks: Vec<StacksRow>,
}

/// The figures of a line: `COUNT TOTAL MIN MEDIAN P90 P99 MAX`, then its `values` line.
fn write_latencies(out: &mut String, l: &Latencies) {
    let s = l.summary();
    let _ = writeln!(out, " {} {} {} {} {} {} {}", s.count, s.total, s.min, s.median, s.p90, s.p99, s.max);
    let (exact, buckets) = l.held();
    match buckets.is_empty() {
        true => {
            out.push_str("values exact");
            for v in exact {
                let _ = write!(out, " {v}");
            }
        }
        false => {
            out.push_str("values buckets");
            for (b, n) in buckets {
                let _ = write!(out, " {b}:{n}");
            }
        }
    }
    out.push('\n');
}

/// A `split` or `served` line's end: its ` WAIT_SCHEME:NS` pairs, and the newline.
fn write_waits(out: &mut String, waiting: &BTreeMap<String, u64>) {
    for (on, ns) in waiting {
        let _ = write!(out, " {on}:{ns}");
    }
    out.push('\n');
}

/// The file of a session (its requests, where the backend recorded them: empty where it did
/// not, or there is no session).
pub fn requests_text(session: Option<&Session>) -> String {
    let Some(log) = session.and_then(|s| s.requests.as_ref()).filter(|l| l.source == RequestSource::SchemeRequests) else {
        return String::new();
    };
    let session = session.expect("a log is a session's");
    let waited = if log.sides_in_calls { "calls" } else { "switches" };
    let mut out = format!("requests version={VERSION} lost={} waited={waited}\n", log.lost);
    let mut daemons: BTreeMap<u32, &str> = BTreeMap::new();
    let keys = log.by_pid.values().flat_map(|r| r.by_key.keys()).chain(log.chains.keys().flat_map(|(a, b)| [a, b]));
    for (_, daemon) in keys.filter_map(RequestKey::as_scheme) {
        let name = match daemon {
            0 => "[bootstrap]",
            pid => session.servers.get(&pid).map_or("[exited]", |s| s.path.as_str()),
        };
        daemons.insert(daemon, name);
    }
    for (pid, name) in &daemons {
        let _ = writeln!(out, "daemon {pid} {name}");
    }
    for (pid, r) in &log.by_pid {
        for (word, map) in [("request", &r.by_key), ("waited", &r.waited)] {
            for (key, l) in map {
                let Some((scheme, daemon)) = key.as_scheme() else { continue };
                let _ = write!(out, "{word} {pid} {scheme} {daemon}");
                write_latencies(&mut out, l);
            }
        }
    }
    for ((outer, inner), l) in &log.chains {
        let (Some(o), Some(i)) = (outer.as_scheme(), inner.as_scheme()) else { continue };
        let _ = write!(out, "chain {} {} {} {}", o.0, o.1, i.0, i.1);
        write_latencies(&mut out, l);
    }
    for (pid, r) in log.by_pid.iter().filter(|(_, r)| r.unfinished > 0) {
        let _ = writeln!(out, "unfinished {pid} {}", r.unfinished);
    }
    for (pid, r) in &log.by_pid {
        for (key, d) in &r.split {
            let Some((scheme, daemon)) = key.as_scheme() else { continue };
            let _ = write!(out, "split {pid} {scheme} {daemon} {} {} {} {}", d.count, d.total, d.on_cpu, d.other());
            write_waits(&mut out, &d.waiting);
        }
    }
    // The call stacks (`-g`), each once, and how many requests each key's made.
    let numbers: BTreeMap<&[u64], usize> = log.sites.iter().enumerate().map(|(i, s)| (s.as_slice(), i)).collect();
    for (i, site) in log.sites.iter().enumerate() {
        let _ = write!(out, "site {i}");
        for a in site {
            let _ = write!(out, " {a:#x}");
        }
        out.push('\n');
    }
    for (pid, r) in &log.by_pid {
        for (key, st) in &r.stacks {
            let Some((scheme, daemon)) = key.as_scheme() else { continue };
            let _ = write!(out, "stacks {pid} {scheme} {daemon} {} {}", st.other, st.earlier);
            for (stack, n) in &st.counts {
                if let Some(i) = numbers.get(stack.as_slice()) {
                    let _ = write!(out, " {i}:{n}");
                }
            }
            out.push('\n');
        }
    }
    // Each request whole, from the program's start as `timeline` counts its times.
    let origin = session.origin().unwrap_or(0);
    for r in &log.timed {
        let (Some((scheme, daemon)), Some((_, daemon_tid))) = (r.key.as_scheme(), r.taken_by) else { continue };
        let (from, to) = (r.from.saturating_sub(origin), r.to.saturating_sub(origin));
        let _ = writeln!(out, "timed {} {} {scheme} {daemon} {daemon_tid} {from} {to}", r.pid, r.tid);
        let Some(served) = &r.served else { continue };
        let d = &served.split;
        let waited = served.waited.map_or_else(|| "-".to_string(), |ns| ns.to_string());
        let _ = write!(out, "served {waited} {} {}", d.on_cpu, d.other());
        write_waits(&mut out, &d.waiting);
        for (outer, inner, ns) in &served.made {
            let (Some(o), Some(i)) = (outer.as_scheme(), inner.as_scheme()) else { continue };
            let _ = writeln!(out, "made {} {} {} {} {ns}", o.0, o.1, i.0, i.1);
        }
        let _ = match r.site {
            Site::Unrecorded => Ok(()),
            Site::Stack(i) => writeln!(out, "called-from {i}"),
            Site::Other => writeln!(out, "called-from other"),
            Site::Earlier => writeln!(out, "called-from earlier"),
        };
    }
    let _ = writeln!(out, "untimed {}", log.untimed);
    out
}

/// `COUNT TOTAL MIN MEDIAN P90 P99 MAX` and the `values` line after: the latencies (the
/// quantiles are recomputed from the values).
fn latencies_of(figures: &[&str], values: Option<&str>) -> Option<Latencies> {
    let n: Vec<u64> = figures.iter().map(|w| w.parse().ok()).collect::<Option<_>>()?;
    let &[count, total, min, _, _, _, max] = n.as_slice() else { return None };
    let mut w = values?.strip_prefix("values ")?.split_ascii_whitespace();
    let (mut exact, mut buckets) = (Vec::new(), BTreeMap::new());
    match w.next()? {
        "exact" => exact = w.map(|v| v.parse().ok()).collect::<Option<_>>()?,
        "buckets" => buckets = pairs_of(w)?,
        _ => return None,
    }
    Some(Latencies::from_held(count, total, min, max, exact, buckets))
}

/// The file read back; `None`: not this version's header (or no session).
pub fn parse_requests(text: &str) -> Option<RequestsFile> {
    let mut lines = text.lines().peekable();
    let mut header = lines.next()?.split_ascii_whitespace();
    if header.next()? != "requests" || header.next()? != format!("version={VERSION}") {
        return None;
    }
    let (mut lost, mut sides_in_calls) = (0, false);
    for w in header {
        if let Some(n) = w.strip_prefix("lost=") {
            lost = n.parse().unwrap_or(0);
        }
        sides_in_calls |= w == "waited=calls";
    }
    let mut file = RequestsFile { lost, sides_in_calls, ..Default::default() };
    while let Some(line) = lines.next() {
        let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
        let w: Vec<&str> = rest.split_ascii_whitespace().collect();
        match kind {
            "daemon" => {
                let Some((pid, name)) = rest.split_once(' ') else { continue };
                let Ok(pid) = pid.parse() else { continue };
                file.daemons.insert(pid, name.to_string());
            }
            "request" | "waited" if w.len() == 10 => {
                let values = lines.next_if(|l| l.starts_with("values "));
                let (Ok(pid), Ok(scheme), Ok(daemon)) = (w[0].parse(), w[1].parse(), w[2].parse()) else { continue };
                let Some(latencies) = latencies_of(&w[3..], values) else { continue };
                let rows = if kind == "request" { &mut file.requests } else { &mut file.waited };
                rows.push(RequestRow { pid, scheme, daemon, latencies });
            }
            "chain" if w.len() == 11 => {
                let values = lines.next_if(|l| l.starts_with("values "));
                let ids: Vec<u64> = w[..4].iter().filter_map(|v| v.parse().ok()).collect();
                let &[os, od, is, id] = ids.as_slice() else { continue };
                let (Ok(od), Ok(id)) = (u32::try_from(od), u32::try_from(id)) else { continue };
                let Some(latencies) = latencies_of(&w[4..], values) else { continue };
                file.chains.push(ChainRow { outer: (os, od), inner: (is, id), latencies });
            }
            "unfinished" if w.len() == 2 => {
                if let (Ok(pid), Ok(n)) = (w[0].parse(), w[1].parse()) {
                    file.unfinished.insert(pid, n);
                }
            }
            "split" if w.len() >= 7 => {
                let n: Vec<u64> = w[..7].iter().filter_map(|v| v.parse().ok()).collect();
                let &[pid, scheme, daemon, count, total, on_cpu, _] = n.as_slice() else { continue };
                let (Ok(pid), Ok(daemon)) = (u32::try_from(pid), u32::try_from(daemon)) else { continue };
                let Some(waiting) = waits_of(&w[7..]) else { continue };
                file.splits.push(SplitRow { pid, scheme, daemon, count, total, on_cpu, waiting });
            }
            "timed" if w.len() == 7 => {
                let n: Vec<u64> = w.iter().filter_map(|v| v.parse().ok()).collect();
                let &[pid, tid, scheme, daemon, daemon_tid, from, to] = n.as_slice() else { continue };
                let ids = [pid, tid, daemon, daemon_tid].map(u32::try_from);
                let [Ok(pid), Ok(tid), Ok(daemon), Ok(daemon_tid)] = ids else { continue };
                file.timed.push(TimedRow { pid, tid, scheme, daemon, daemon_tid, from, to, served: None, site: Site::Unrecorded });
            }
            "served" if w.len() >= 3 => {
                let waited = match w[0] {
                    "-" => None,
                    ns => match ns.parse() {
                        Ok(ns) => Some(ns),
                        Err(_) => continue,
                    },
                };
                let (Ok(on_cpu), Ok(other), Some(waiting)) = (w[1].parse(), w[2].parse(), waits_of(&w[3..])) else { continue };
                // Of the timed line before it (one of its own).
                if let Some(t) = file.timed.last_mut().filter(|t| t.served.is_none()) {
                    t.served = Some(ServedRow { waited, on_cpu, other, waiting, made: Vec::new() });
                }
            }
            "made" if w.len() == 5 => {
                let (Some(outer), Some(inner), Ok(ns)) = (scheme_daemon(w[0], w[1]), scheme_daemon(w[2], w[3]), w[4].parse()) else { continue };
                if let Some(served) = file.timed.last_mut().and_then(|t| t.served.as_mut()).filter(|s| s.made.len() < MAX_MADE) {
                    served.made.push((outer, inner, ns));
                }
            }
            "untimed" if w.len() == 1 => file.untimed = w[0].parse().unwrap_or(0),
            // In order, each at most a stack's frames (the log keeps no more).
            "site" if !w.is_empty() && w.len() <= MAX_STACK_FRAMES + 1 && w[0].parse() == Ok(file.sites.len()) => {
                let frames: Option<Vec<u64>> = w[1..].iter().map(|a| u64::from_str_radix(a.strip_prefix("0x")?, 16).ok()).collect();
                if let Some(frames) = frames {
                    file.sites.push(frames);
                }
            }
            "stacks" if w.len() >= 5 => {
                let n: Vec<u64> = w[..5].iter().filter_map(|v| v.parse().ok()).collect();
                let &[pid, scheme, daemon, other, earlier] = n.as_slice() else { continue };
                let (Ok(pid), Ok(daemon)) = (u32::try_from(pid), u32::try_from(daemon)) else { continue };
                let counts: Option<Vec<(usize, u64)>> = pairs_of(w[5..].iter().copied());
                let Some(counts) = counts.filter(|c| c.iter().all(|&(i, _)| i < file.sites.len())) else { continue };
                file.stacks.push(StacksRow { pid, scheme, daemon, other, earlier, counts });
            }
            "called-from" if w.len() == 1 => {
                let site = match w[0] {
                    "other" => Site::Other,
                    "earlier" => Site::Earlier,
                    i => match i.parse::<u32>() {
                        Ok(i) if (i as usize) < file.sites.len() => Site::Stack(i),
                        _ => continue,
                    },
                };
                if let Some(t) = file.timed.last_mut().filter(|t| t.site == Site::Unrecorded) {
                    t.site = site;
                }
            }
            _ => {}
        }
    }
    Some(file)
}

impl RequestsFile {
    /// As the run's request log, each key named by `key` (a scheme's number and a daemon's
    /// pid and name).
    pub fn log(&self, key: impl Fn(u64, u32, Option<&str>) -> RequestKey) -> RequestLog {
        let mut log = RequestLog::new(RequestSource::SchemeRequests);
        (log.lost, log.sides_in_calls) = (self.lost, self.sides_in_calls);
        let named = |(scheme, daemon): (u64, u32)| key(scheme, daemon, self.daemons.get(&daemon).map(String::as_str));
        for r in &self.requests {
            log.by_pid.entry(r.pid).or_default().by_key.entry(named((r.scheme, r.daemon))).or_default().merge(&r.latencies);
        }
        for r in &self.waited {
            log.by_pid.entry(r.pid).or_default().waited.entry(named((r.scheme, r.daemon))).or_default().merge(&r.latencies);
        }
        for c in &self.chains {
            log.chains.entry((named(c.outer), named(c.inner))).or_default().merge(&c.latencies);
        }
        for (&pid, &n) in &self.unfinished {
            log.by_pid.entry(pid).or_default().unfinished = n;
        }
        // A scheme a daemon waited on, as the keys name schemes.
        let named_waits = |waiting: &BTreeMap<u64, u64>| -> BTreeMap<String, u64> { waiting.iter().map(|(&s, &ns)| (key(s, 0, None).to.into_owned(), ns)).collect() };
        for r in &self.splits {
            let waiting = named_waits(&r.waiting);
            let split = DaemonSplit { count: r.count, total: r.total, on_cpu: r.on_cpu, waiting };
            log.by_pid.entry(r.pid).or_default().split.entry(named((r.scheme, r.daemon))).or_default().merge(&split);
        }
        let served = |s: &ServedRow| {
            let waiting = named_waits(&s.waiting);
            let total = waiting.values().fold(s.on_cpu.saturating_add(s.other), |n, &w| n.saturating_add(w));
            let split = DaemonSplit { count: 1, total, on_cpu: s.on_cpu, waiting };
            let made = s.made.iter().map(|&(o, i, ns)| (named(o), named(i), ns)).collect();
            Box::new(Served { waited: s.waited, split, made })
        };
        log.timed = self
            .timed
            .iter()
            .map(|r| {
                let served = r.served.as_ref().map(served);
                Request { pid: r.pid, tid: r.tid, key: named((r.scheme, r.daemon)), from: r.from, to: r.to, taken_by: Some((r.daemon, r.daemon_tid)), site: r.site, served }
            })
            .collect();
        log.untimed = self.untimed;
        log.sites.clone_from(&self.sites);
        for r in &self.stacks {
            let counts = r.counts.iter().filter_map(|&(i, n)| Some((self.sites.get(i)?.clone(), n))).collect();
            let stacks = Stacks { counts, other: r.other, earlier: r.earlier };
            log.by_pid.entry(r.pid).or_default().stacks.insert(named((r.scheme, r.daemon)), stacks);
        }
        log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_reads_back_whole() {
        let text = "\
requests version=1 lost=2 waited=calls
daemon 0 [bootstrap]
daemon 7 /scheme/initfs/bin/ramfs two words
request 10 24 7 3 35000 5000 10000 20000 20000 20000
values exact 10000 20000 5000
request 11 3 0 1 40 40 40 40 40 40
values buckets 70:1
waited 10 24 7 1 9000 9000 9000 9000 9000 9000
values exact 9000
chain 24 7 31 9 1 8000 8000 8000 8000 8000 8000
values exact 8000
unfinished 10 1
split 10 24 7 3 35000 20000 5000 31:8000 9:2000
split 10 24 7 x 1 1 1
site 0 0x401000 0x402005
site 1 0x401100
site 3 0x1
site 2 zz
stacks 10 24 7 1 2 0:2 1:1
stacks 10 31 9 0 0 9:1
timed 10 11 24 7 30 250000 260000
served 4000 5000 2000 31:3000
made 24 7 31 9 3000
made 24 7 31 x 3000
called-from 0
called-from 1
timed 10 11 24 7 30 250000
served - 1 1
timed 10 12 24 7 30 270000 271000
served - 1000 0
called-from earlier
untimed 4
later kinds are skipped
";
        let f = parse_requests(text).unwrap();
        assert_eq!(f.lost, 2);
        assert_eq!(f.daemons[&7], "/scheme/initfs/bin/ramfs two words");
        assert_eq!((f.requests.len(), f.chains.len(), f.unfinished[&10]), (2, 1, 1));
        let s = f.requests[0].latencies.summary();
        assert_eq!((s.count, s.total, s.min, s.median, s.max), (3, 35000, 5000, 10000, 20000));
        assert!(!f.requests[1].latencies.is_exact());
        let log = f.log(|s, d, name| RequestKey { to: format!("scheme {s}").into(), server: Some(format!("{} {d}", name.unwrap_or("?"))) });
        assert_eq!(log.by_pid[&10].count(), 3);
        assert_eq!(log.by_pid[&10].waited.values().map(|l| l.total).sum::<u64>(), 9000);
        assert_eq!(log.chains.len(), 1);
        // The daemon's split, its waits' schemes named as the keys name them; each request
        // whole (a line cut short is skipped), who took it, and those past the kept ones.
        let split = &log.by_pid[&10].split[&RequestKey { to: "scheme 24".into(), server: Some("/scheme/initfs/bin/ramfs two words 7".into()) }];
        assert_eq!((split.count, split.total, split.on_cpu, split.other()), (3, 35000, 20000, 5000));
        assert_eq!(split.waiting, [("scheme 31".to_string(), 8000), ("scheme 9".to_string(), 2000)].into());
        let served = ServedRow { waited: Some(4000), on_cpu: 5000, other: 2000, waiting: [(31, 3000)].into(), made: vec![((24, 7), (31, 9), 3000)] };
        assert_eq!(f.timed, [
            TimedRow { pid: 10, tid: 11, scheme: 24, daemon: 7, daemon_tid: 30, from: 250_000, to: 260_000, served: Some(served), site: Site::Stack(0) },
            TimedRow { pid: 10, tid: 12, scheme: 24, daemon: 7, daemon_tid: 30, from: 270_000, to: 271_000, served: Some(ServedRow { on_cpu: 1000, ..Default::default() }), site: Site::Earlier }
        ]);
        // The callers' side by their system calls; the call sites (`-g`): each stack once, in
        // order (a line out of order or not hex is skipped, and so is a count of a site none
        // names), counted by key, and each request's (its first `called-from` line).
        assert!(f.sides_in_calls && log.sides_in_calls);
        assert_eq!(log.sites, [vec![0x40_1000, 0x40_2005], vec![0x40_1100]]);
        let stacks = &log.by_pid[&10].stacks;
        assert_eq!(stacks.len(), 1);
        let read = stacks.values().next().unwrap();
        assert_eq!((read.counts.get(&vec![0x40_1000, 0x40_2005]), read.counts.get(&vec![0x40_1100]), read.other, read.earlier), (Some(&2), Some(&1), 1, 2));
        assert_eq!(log.timed.iter().map(|r| (r.pid, r.tid, r.key.to.as_ref(), r.from, r.to, r.taken_by)).collect::<Vec<_>>(), [
            (10, 11, "scheme 24", 250_000, 260_000, Some((7, 30))),
            (10, 12, "scheme 24", 270_000, 271_000, Some((7, 30)))
        ]);
        // Each with its caller's side, its daemon's split (its parts adding up to its time)
        // and the chains under it, named as the run's are.
        let s = log.timed[0].served.as_deref().unwrap();
        assert_eq!((s.waited, s.split.count, s.split.total, s.split.on_cpu, s.split.other()), (Some(4000), 1, 10_000, 5000, 2000));
        assert_eq!(s.split.waiting, [("scheme 31".to_string(), 3000)].into());
        assert_eq!(s.made.iter().map(|(o, i, ns)| (o.to.as_ref(), i.to.as_ref(), *ns)).collect::<Vec<_>>(), [("scheme 24", "scheme 31", 3000)]);
        assert_eq!(log.timed[1].served.as_deref().map(|s| (s.waited, s.split.total)), Some((None, 1000)));
        assert_eq!(log.untimed, 4);
        // Another version, or none: not read.
        assert_eq!(parse_requests("requests version=2 lost=0\n"), None);
        assert_eq!(parse_requests(""), None);
    }
}
