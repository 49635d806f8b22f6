//! The Requests section (`--requests`): what the program asked of the system and how long each
//! request took, per what it went to — on Linux each system call, enter to exit (the kernel's
//! tracepoints); on Redox each request to a scheme, taken to answered, by scheme and daemon —
//! as one table, whichever system filled it: count, total, minimum, median, 90th and 99th
//! percentile, maximum, most total time first, and a log2 histogram of the busiest.
//!
//! With `-g` (Linux), under each of the top rows its call sites: the program's site that made
//! those calls and that site's caller, named by [`crate::request_sites`], the busiest
//! [`SITES`] of them, the rest as one line.
//!
//! Where the tracepoints were refused (Linux without privilege), the same table holds what the
//! off-CPU looks measured instead, blocked time per call, and says so: no latency columns, a
//! hint how to get them.

use std::collections::BTreeMap;
use std::fmt::Write;

use prof_core::ledger::UNSEEN;
use prof_core::requests::{DaemonSplit, Latencies, RequestKey, RequestLog, RequestSource, Requests, Summary};

use crate::profile::Profile;
use crate::request_sites::KeySites;

/// Rows the table shows unless `--top` says otherwise; the rest are summed in one line.
pub const DEFAULT_TOP: usize = 20;

/// Keys whose latency histogram is drawn (the most total time first).
pub const HISTOGRAMS: usize = 3;

/// Call sites shown under a row (`-g`); the rest are summed in one line.
pub const SITES: usize = 3;

/// Width of a histogram's longest bar.
const BAR: u64 = 40;

/// What a table's figures are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Measured {
    /// Every request timed from its start to its end.
    Latencies(RequestSource),
    /// The tracepoints were refused (why): blocked time per call, as the looks saw it.
    BlockedTime(String),
}

/// One row: what the requests went to and their figures; the quantiles and the histogram
/// where each request was timed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: RequestKey,
    pub count: u64,
    pub total: u64,
    pub latencies: Option<(Summary, Vec<(u32, u64)>)>,
}

/// The section's table: whose requests, what they measure, the rows most total time first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTable {
    pub measured: Measured,
    /// The processes whose requests these are: the program's alone (1), or its tree's.
    pub processes: usize,
    pub rows: Vec<Row>,
    /// Requests seen to start or end alone, not timed.
    pub unfinished: u64,
    /// Records the backend lost.
    pub lost: u64,
    /// Redox: what the daemons asked of other schemes while serving these requests, by (the
    /// request served, the one made), most total time first.
    pub chains: Vec<Chain>,
    /// Redox: the same requests from their callers' side (the caller's switch into the call to
    /// its switch back, or with `waited_in_calls` the system call's entry to its return), in
    /// the rows' order.
    pub waited: Vec<(RequestKey, Summary)>,
    pub waited_in_calls: bool,
    /// Redox: how the daemons spent these requests' time, from taking each to answering it, in
    /// the rows' order.
    pub split: Vec<(RequestKey, DaemonSplit)>,
    /// `-g`: each key's call sites, named; empty where no stacks were recorded.
    pub sites: BTreeMap<RequestKey, KeySites>,
}

/// A link of a chain: the requests a daemon made of another scheme while it served one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    pub served: RequestKey,
    pub made: RequestKey,
    pub latencies: Summary,
}

impl RequestTable {
    /// The table of `requests`, from `source`, of `processes` processes.
    pub fn of(requests: &Requests, source: RequestSource, processes: usize, lost: u64) -> RequestTable {
        let rows = requests
            .by_key
            .iter()
            .map(|(key, l): (&RequestKey, &Latencies)| Row {
                key: key.clone(),
                count: l.count,
                total: l.total,
                latencies: Some((l.summary(), l.log2_histogram())),
            })
            .collect();
        RequestTable {
            measured: Measured::Latencies(source),
            processes,
            rows: ranked(rows),
            unfinished: requests.unfinished,
            lost,
            chains: Vec::new(),
            waited: Vec::new(),
            waited_in_calls: false,
            split: Vec::new(),
            sites: BTreeMap::new(),
        }
    }
}

impl RequestTable {
    /// Redox: the rows' callers' side and their daemons' split, from `requests`; with `chains`,
    /// the log's chains, most total time first.
    fn with_scheme_parts(mut self, requests: &Requests, log: &RequestLog, chains: bool) -> RequestTable {
        self.waited = self.rows.iter().filter_map(|r| Some((r.key.clone(), requests.waited.get(&r.key)?.summary()))).collect();
        self.waited_in_calls = log.sides_in_calls;
        self.split = self.rows.iter().filter_map(|r| Some((r.key.clone(), requests.split.get(&r.key)?.clone()))).collect();
        if chains {
            self.chains = log.chains.iter().map(|((served, made), l)| Chain { served: served.clone(), made: made.clone(), latencies: l.summary() }).collect();
            self.chains.sort_by(|a, b| b.latencies.total.cmp(&a.latencies.total).then(b.latencies.count.cmp(&a.latencies.count)).then_with(|| (&a.served, &a.made).cmp(&(&b.served, &b.made))));
        }
        self
    }
}

/// Most total time first; then most requests, then by name.
fn ranked(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| b.total.cmp(&a.total).then(b.count.cmp(&a.count)).then_with(|| a.key.cmp(&b.key)));
    rows
}

/// The run's requests as a table, where `--requests` recorded them (or said why it could
/// not): the program's, or, where it followed the processes the program started, the tree's;
/// with the call sites of `sites` (by pid, [`crate::request_sites::sites`]), the tree's
/// together.
pub fn table(p: &Profile, sites: &BTreeMap<u32, BTreeMap<RequestKey, KeySites>>) -> Option<RequestTable> {
    let log = p.requests()?;
    if let Some(why) = &log.refused {
        return Some(blocked_table(p, why));
    }
    let processes = log.by_pid.len().max(1);
    let tree = log.by_pid.keys().any(|&pid| pid != p.pid());
    let requests = match tree {
        true => log.merged(),
        false => log.by_pid.get(&p.pid()).cloned().unwrap_or_default(),
    };
    let mut t = RequestTable::of(&requests, log.source, processes, log.lost);
    for (_, by_key) in sites.iter().filter(|&(&pid, _)| tree || pid == p.pid()) {
        for (key, s) in by_key {
            t.sites.entry(key.clone()).or_default().merge(s);
        }
    }
    Some(t.with_scheme_parts(&requests, log, true))
}

/// The blocked time per call the off-CPU looks saw (every thread's, the calls no look named
/// left out), as a table without latencies.
fn blocked_table(p: &Profile, why: &str) -> RequestTable {
    let mut by_call: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for w in p.clock().threads.iter().flat_map(|t| &t.waits).filter(|w| w.site != UNSEEN) {
        let Some(site) = p.clock().wait_sites.get(w.site as usize) else { continue };
        let e = by_call.entry(site.call.as_str()).or_insert((0, 0));
        *e = (e.0.saturating_add(w.count), e.1.saturating_add(w.ns));
    }
    let rows = by_call
        .into_iter()
        .map(|(call, (count, total))| Row { key: RequestKey::call(call.to_string()), count, total, latencies: None })
        .collect();
    let processes = 1 + p.processes().len();
    RequestTable {
        measured: Measured::BlockedTime(why.to_string()),
        processes,
        rows: ranked(rows),
        unfinished: 0,
        lost: 0,
        chains: Vec::new(),
        waited: Vec::new(),
        waited_in_calls: false,
        split: Vec::new(),
        sites: BTreeMap::new(),
    }
}

/// A latency in the unit that suits it: `850 ns`, `12.3 us`, `4.56 ms`, `1.23 s`.
pub fn latency(ns: u64) -> String {
    // Each unit up to where its figure would round to 1000.
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..999_950 => format!("{:.1} us", ns as f64 / 1e3),
        999_950..999_995_000 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// What a key is called in the table: the call (`read`), or the scheme and its daemon
/// (`file: (ramfs [pid 7])`).
fn key_name(k: &RequestKey) -> String {
    match &k.server {
        Some(server) => format!("{} ({server})", k.to),
        None => k.to.to_string(),
    }
}

/// The Requests section of program `name` (pid `pid`): the heading, the table's top `top`
/// rows, the rest in one line, the histograms of the busiest; a hint where the figures are
/// not latencies.
pub fn render(t: &RequestTable, name: &str, pid: u32, top: usize) -> String {
    let whose = match t.processes {
        0 | 1 => format!("{name} [pid {pid}]"),
        n => format!("{name} [pid {pid}] and the processes it started, {} in all", n),
    };
    render_of(t, &whose, top)
}

/// The section of table `t` of the requests of `whose` (`fib [pid 42]`).
fn render_of(t: &RequestTable, whose: &str, top: usize) -> String {
    let mut out = String::new();
    let (heading, word) = match &t.measured {
        Measured::Latencies(RequestSource::SystemCalls) => {
            (format!("Requests (system calls of {whose}, each timed from its enter to its exit by the kernel's raw_syscalls tracepoints):"), "call")
        }
        Measured::Latencies(RequestSource::SchemeRequests) => {
            (format!("Requests (to schemes, of {whose}, each timed from taken to answered by the kernel's request records):"), "scheme (daemon)")
        }
        Measured::BlockedTime(_) => (
            format!("Requests: not measured; blocked time per call of {whose} instead, as --off-cpu's looks saw it (not system-call latencies):"),
            "call",
        ),
    };
    let _ = writeln!(out, "{heading}");
    let count = t.rows.iter().fold(0u64, |n, r| n.saturating_add(r.count));
    let total = t.rows.iter().fold(0u64, |n, r| n.saturating_add(r.total));
    let timed = matches!(t.measured, Measured::Latencies(_));
    let mut summary = match timed {
        true => format!("  {}, {:.6} s in them", crate::words::count(count, "request"), total as f64 / 1e9),
        false => format!("  {} seen, {:.6} s blocked", crate::words::count(count, "wait"), total as f64 / 1e9),
    };
    if t.unfinished > 0 {
        let _ = write!(summary, "; {} seen to start or end alone, not timed (under way when the events were armed, as the program's own exec; a child's return from clone; exit_group)", t.unfinished);
    }
    if t.lost > 0 {
        let _ = write!(summary, "; {} lost: the counts are short", crate::words::count(t.lost, "record"));
    }
    let _ = writeln!(out, "{summary}");
    // Redox's requests without a stack: their caller was not seen to block in the call, or the
    // program made them after a later exec (whose image its symbols would misname).
    let scheme_requests = t.measured == Measured::Latencies(RequestSource::SchemeRequests);
    let unstacked_why = if scheme_requests { "no stack kept" } else { "no user stack" };
    if !t.sites.is_empty() {
        let note = match scheme_requests {
            true => SCHEME_SITES_NOTE,
            false => SITES_NOTE,
        };
        let _ = writeln!(out, "  {note}");
    }
    if let Measured::BlockedTime(why) = &t.measured {
        let _ = writeln!(out, "  Note: {why}");
    }
    if t.rows.is_empty() {
        if let Measured::BlockedTime(_) = t.measured {
            let _ = writeln!(out, "  {}", HINT);
        }
        return out;
    }
    let more = (t.rows.len() > top).then(|| format!("({} more)", t.rows.len() - top));
    let width = t.rows.iter().take(top).map(|r| key_name(&r.key).len()).chain(more.as_ref().map(String::len)).max().unwrap_or(0).max(word.len());
    let count_word = if timed { "count" } else { "seen" };
    let _ = writeln!(
        out,
        "  {word:<width$} {count_word:>9} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "total s", "min", "median", "p90", "p99", "max"
    );
    for r in t.rows.iter().take(top) {
        let figures = match &r.latencies {
            Some((s, _)) => [s.min, s.median, s.p90, s.p99, s.max].map(latency),
            None => std::array::from_fn(|_| "-".to_string()),
        };
        row(&mut out, width, &key_name(&r.key), r.count, r.total, &figures);
        if let Some(sites) = t.sites.get(&r.key) {
            site_lines(&mut out, width, r.count, sites, unstacked_why);
        }
    }
    if let Some(more) = more {
        let rest = &t.rows[top..];
        let (n, ns) = rest.iter().fold((0u64, 0u64), |(n, ns), r| (n.saturating_add(r.count), ns.saturating_add(r.total)));
        let _ = writeln!(out, "  {more:<width$} {n:>9} {:>12.6}", ns as f64 / 1e9);
    }
    if !t.waited.is_empty() {
        let _ = match t.waited_in_calls {
            true => writeln!(out, "  From the callers' side (each from the entry of the system call that made it to its return, by the kernel's system call records: what the caller's own clock sees of it):"),
            false => writeln!(out, "  From the callers' side (each from the caller's switch into the call to its switch back, by the kernel's switch records: what the caller's own clock sees of it but the system call's entry and exit):"),
        };
        for (key, s) in t.waited.iter().take(top) {
            let figures = [s.min, s.median, s.p90, s.p99, s.max].map(latency);
            row(&mut out, width, &key_name(key), s.count, s.total, &figures);
        }
    }
    if !t.split.is_empty() {
        let _ = writeln!(out, "  The daemons' time on them (from taking each to answering it, by their switch records): on a CPU, blocked in their own requests to other schemes, otherwise off a CPU (preempted, runnable, blocked on anything else):");
        for (key, d) in t.split.iter().take(top) {
            let part = |ns: u64| format!("{} ({:.1} %)", latency(ns), ns as f64 * 100.0 / d.total.max(1) as f64);
            let mut parts = vec![format!("on a CPU {}", part(d.on_cpu))];
            parts.extend(d.waiting.iter().map(|(scheme, &ns)| format!("waiting on {scheme} {}", part(ns))));
            parts.push(format!("otherwise {}", part(d.other())));
            let _ = writeln!(out, "  {:<width$}  {}", key_name(key), parts.join(", "));
        }
    }
    if !t.chains.is_empty() {
        let name = |c: &Chain| format!("{} -> {}", key_name(&c.served), key_name(&c.made));
        let word = "served -> made while serving it";
        let width = t.chains.iter().take(top).map(|c| name(c).len()).max().unwrap_or(0).max(word.len());
        let _ = writeln!(out, "  Chains: what the daemons asked of other schemes while serving these requests (the request served, then the one made; each made request timed as above):");
        let _ = writeln!(out, "  {word:<width$} {:>9} {:>12} {:>9} {:>9} {:>9}", "count", "total s", "min", "median", "max");
        for c in t.chains.iter().take(top) {
            let s = &c.latencies;
            let _ = writeln!(
                out,
                "  {:<width$} {:>9} {:>12.6} {:>9} {:>9} {:>9}",
                name(c),
                s.count,
                s.total as f64 / 1e9,
                latency(s.min),
                latency(s.median),
                latency(s.max)
            );
        }
        if t.chains.len() > top {
            let _ = writeln!(out, "  ({} more)", t.chains.len() - top);
        }
    }
    for r in t.rows.iter().take(HISTOGRAMS) {
        let Some((_, histogram)) = &r.latencies else { continue };
        let _ = writeln!(out, "  {} latency, log2 buckets:", key_name(&r.key));
        let most = histogram.iter().map(|h| h.1).max().unwrap_or(0).max(1);
        for &(k, n) in histogram {
            let (low, high) = (if k == 0 { 0 } else { 1u64 << k }, 1u128 << (k + 1));
            let high = u64::try_from(high).map_or("2^64 ns".to_string(), latency);
            let bar = "#".repeat(n.saturating_mul(BAR).div_ceil(most) as usize);
            let line = format!("    {:>9} .. {:>9} {n:>9}  {bar}", latency(low), high);
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    if let Measured::BlockedTime(_) = t.measured {
        let _ = writeln!(out, "  {}", HINT);
    }
    out
}

/// The section where the run has requests (recorded with `--requests`, live or loaded), or a
/// line where they were asked for and this system's backend records none; `top`: `--top`.
pub fn section(p: &Profile, name: &str, asked: bool, top: Option<usize>, sites: &BTreeMap<u32, BTreeMap<RequestKey, KeySites>>) -> Option<String> {
    match table(p, sites) {
        Some(t) => Some(render(&t, crate::processes::base_name(name), p.pid(), top.unwrap_or(DEFAULT_TOP)) + "\n"),
        None if asked => Some("Requests: none recorded (this system's backend does not record them yet)\n\n".to_string()),
        None => None,
    }
}

/// What the lines under a row are (`-g`): Linux's stacks.
const SITES_NOTE: &str = "Under each call, the busiest sites it was made from (requests, share of the row's, site <- its caller): the first frame outside the C library and Rust's runtime of the user stack at the call (its top unwound by the objects' unwind tables, the rest by the kernel's frame-pointer walk).";
/// ...and Redox's.
const SCHEME_SITES_NOTE: &str = "Under each scheme, the busiest sites its requests were made from (requests, share of the row's, site <- its caller): the first frame outside relibc and Rust's runtime of the user stack where the caller blocked in the call (the kernel's frame-pointer walk; no stack is kept of a request whose caller was not seen to block, nor of the program's after a later exec).";

/// The lines under a row of `count` requests: its busiest [`SITES`] sites, then the rest in
/// one line (the other sites, the stacks past those a key keeps, the requests made before the
/// process's exec, those without a stack, `unstacked_why`), each with its share of the row.
fn site_lines(out: &mut String, width: usize, count: u64, sites: &KeySites, unstacked_why: &str) {
    let share = |n: u64| n as f64 * 100.0 / count.max(1) as f64;
    for s in sites.sites.iter().take(SITES) {
        let caller = s.caller.as_ref().map_or(String::new(), |c| format!(" <- {c}"));
        let _ = writeln!(out, "  {:width$} {:>9} {:>11.1}%  {}{caller}", "", s.count, share(s.count), s.site);
    }
    let others = &sites.sites[sites.sites.len().min(SITES)..];
    let unstacked = count.saturating_sub(sites.count());
    let parts = [
        (others.iter().fold(0u64, |n, s| n.saturating_add(s.count)), crate::words::count(others.len() as u64, "other site")),
        (sites.other, format!("stacks past the {} a call keeps", prof_core::requests::MAX_STACKS)),
        (sites.earlier, "made before an exec by the image it replaced".to_string()),
        (unstacked, unstacked_why.to_string()),
    ];
    let rest = parts.iter().fold(0u64, |n, p| n.saturating_add(p.0));
    if rest > 0 {
        let what: Vec<&str> = parts.iter().filter(|p| p.0 > 0).map(|p| p.1.as_str()).collect();
        let _ = writeln!(out, "  {:width$} {rest:>9} {:>11.1}%  ({})", "", share(rest), what.join("; "));
    }
}

/// Processes of a system-wide run (`-a`) whose own table is shown, the most time in their
/// requests first.
pub const SYSTEM_TABLES: usize = 5;

/// One process's requests in a system-wide run: its pid, name, count and total (ns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRow {
    pub pid: u32,
    pub name: String,
    pub count: u64,
    pub total: u64,
}

/// The Requests section of a system-wide run (`-a`, the run `p`): every process's requests
/// but profil's own, the processes the most time in their requests first (`top` of them),
/// the busiest [`SYSTEM_TABLES`] processes' tables, then every process's together (Redox: each
/// with its callers' side and daemons' split, the chains under the last); with their call
/// sites (`sites`, by pid) under `-g`. A line where they were asked for and this
/// system's backend records none.
pub fn system_section(p: &Profile, asked: bool, top: Option<usize>, sites: &BTreeMap<u32, BTreeMap<RequestKey, KeySites>>) -> Option<String> {
    let Some(log) = p.requests() else {
        return asked.then(|| "Requests: none recorded (the kernel wrote no request records: on Redox a kernel with kernel-patch/events writes them)\n".to_string());
    };
    let top = top.unwrap_or(DEFAULT_TOP);
    let name = |pid: u32| p.processes().iter().find(|c| c.pid == pid).map_or("?", |c| crate::processes::base_name(&c.program)).to_string();
    let mut rows: Vec<ProcessRow> = log
        .by_pid
        .iter()
        .map(|(&pid, r)| ProcessRow { pid, name: name(pid), count: r.count(), total: r.by_key.values().fold(0u64, |n, l| n.saturating_add(l.total)) })
        .collect();
    rows.sort_by(|a, b| b.total.cmp(&a.total).then(b.count.cmp(&a.count)).then(a.pid.cmp(&b.pid)));
    let mut out = render_processes(&rows, log.source, top);
    let with_sites = |mut t: RequestTable, pids: &mut dyn Iterator<Item = &u32>| {
        for by_key in pids.filter_map(|pid| sites.get(pid)) {
            for (key, s) in by_key {
                t.sites.entry(key.clone()).or_default().merge(s);
            }
        }
        t
    };
    for r in rows.iter().take(SYSTEM_TABLES) {
        let Some(requests) = log.by_pid.get(&r.pid) else { continue };
        let t = with_sites(RequestTable::of(requests, log.source, 1, 0).with_scheme_parts(requests, log, false), &mut std::iter::once(&r.pid));
        out.push('\n');
        out.push_str(&render_of(&t, &format!("{} [pid {}]", r.name, r.pid), top));
    }
    let merged = log.merged();
    let t = with_sites(RequestTable::of(&merged, log.source, rows.len(), log.lost).with_scheme_parts(&merged, log, true), &mut log.by_pid.keys());
    out.push('\n');
    let processes = match rows.len() {
        1 => "1 process".to_string(),
        n => format!("{n} processes"),
    };
    out.push_str(&render_of(&t, &format!("every process together, {processes}"), top));
    Some(out)
}

/// The processes of a system-wide run by the time in their requests: the first `top`, the rest
/// in one line.
fn render_processes(rows: &[ProcessRow], source: RequestSource, top: usize) -> String {
    let mut out = String::new();
    let what = match source {
        RequestSource::SystemCalls => "system calls of every process but profil's, each timed from its enter to its exit by the kernel's raw_syscalls tracepoints",
        RequestSource::SchemeRequests => "requests to schemes of every process but profil's, each timed from taken to answered by the kernel's request records",
    };
    let _ = writeln!(out, "Requests by process ({what}; the tables of the {SYSTEM_TABLES} busiest below, then of all together):");
    let names: Vec<String> = rows.iter().map(|r| format!("{} [pid {}]", r.name, r.pid)).collect();
    let more = (rows.len() > top).then(|| format!("({} more)", rows.len() - top));
    let width = names.iter().take(top).map(String::len).chain(more.as_ref().map(String::len)).max().unwrap_or(0).max("process".len());
    let _ = writeln!(out, "  {:<width$} {:>9} {:>12}", "process", "count", "total s");
    for (r, name) in rows.iter().zip(&names).take(top) {
        let _ = writeln!(out, "  {name:<width$} {:>9} {:>12.6}", r.count, r.total as f64 / 1e9);
    }
    if let Some(more) = more {
        let (n, ns) = rows[top..].iter().fold((0u64, 0u64), |(n, ns), r| (n.saturating_add(r.count), ns.saturating_add(r.total)));
        let _ = writeln!(out, "  {more:<width$} {n:>9} {:>12.6}", ns as f64 / 1e9);
    }
    out
}

/// How to get the latencies where the looks stood in for them.
const HINT: &str = "Every call's latency: run profil as root (or with CAP_PERFMON, or kernel.perf_event_paranoid -1, and tracefs readable).";

/// A row of a latency table: what the requests went to, their count, total (ns) and the
/// figures (minimum, median, 90th and 99th percentile, maximum) as written.
fn row(out: &mut String, width: usize, name: &str, count: u64, total_ns: u64, figures: &[String; 5]) {
    let [min, median, p90, p99, max] = figures;
    let _ = writeln!(out, "  {name:<width$} {count:>9} {:>12.6} {min:>9} {median:>9} {p90:>9} {p99:>9} {max:>9}", total_ns as f64 / 1e9);
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;
    use prof_core::requests::{Request, RequestLog};

    /// A run's requests: reads of 1 to 100 us, a few writes, one slow wait4, two unfinished.
    fn example() -> Profile {
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let mut t = 0;
        let mut call = |name: &'static str, ns: u64| {
            log.add(Request { pid: 42, tid: 42, key: RequestKey::call(name), from: t, to: t + ns, taken_by: None, site: Default::default(), served: None });
            t += ns + 10;
        };
        for us in 1..=100 {
            call("read", us * 1000);
        }
        for ns in [700, 900, 1500, 250_000] {
            call("write", ns);
        }
        call("wait4", 2_500_000_000);
        call("getpid", 300);
        log.by_pid.get_mut(&42).unwrap().unfinished = 2;
        Profile::from(Parts { pid: 42, requests: Some(log), ..Default::default() })
    }

    #[test]
    fn the_section_s_exact_text() {
        let t = table(&example(), &BTreeMap::new()).unwrap();
        let text = render(&t, "fib", 42, 3);
        let expected = "\
Requests (system calls of fib [pid 42], each timed from its enter to its exit by the kernel's raw_syscalls tracepoints):
  106 requests, 2.505303 s in them; 2 seen to start or end alone, not timed (under way when the events were armed, as the program's own exec; a child's return from clone; exit_group)
  call         count      total s       min    median       p90       p99       max
  wait4            1     2.500000    2.50 s    2.50 s    2.50 s    2.50 s    2.50 s
  read           100     0.005050    1.0 us   50.0 us   90.0 us   99.0 us  100.0 us
  write            4     0.000253    700 ns    900 ns  250.0 us  250.0 us  250.0 us
  (1 more)         1     0.000000
  wait4 latency, log2 buckets:
       2.15 s ..    4.29 s         1  ########################################
  read latency, log2 buckets:
       512 ns ..    1.0 us         1  ##
       1.0 us ..    2.0 us         1  ##
       2.0 us ..    4.1 us         2  ###
       4.1 us ..    8.2 us         4  #####
       8.2 us ..   16.4 us         8  ##########
      16.4 us ..   32.8 us        16  ###################
      32.8 us ..   65.5 us        33  ######################################
      65.5 us ..  131.1 us        35  ########################################
  write latency, log2 buckets:
       512 ns ..    1.0 us         2  ########################################
       1.0 us ..    2.0 us         1  ####################
       2.0 us ..    4.1 us         0
       4.1 us ..    8.2 us         0
       8.2 us ..   16.4 us         0
      16.4 us ..   32.8 us         0
      32.8 us ..   65.5 us         0
      65.5 us ..  131.1 us         0
     131.1 us ..  262.1 us         1  ####################
";
        assert_eq!(text, expected, "got:\n{text}");
    }

    /// `-g`: under each row its busiest three sites, the rest in one line (other sites, and the
    /// stacks a key did not keep); a row with no sites has none; the histograms as before.
    #[test]
    fn the_section_with_call_sites_exact_text() {
        use crate::request_sites::Site;
        let site = |count, site: &str, caller: Option<&str>| Site { count, site: site.into(), caller: caller.map(String::from) };
        let read = KeySites {
            sites: vec![
                site(60, "load [fib]", Some("main [fib]")),
                site(25, "walk [fib]", Some("walk [fib]")),
                site(10, "read [libc.so.6]", None),
                site(3, "init [fib]", Some("main [fib]")),
            ],
            other: 2,
            earlier: 0,
        };
        // One write of the four had no user stack, one was made before an exec.
        let write = KeySites { sites: vec![site(2, "log_line [fib]", Some("main [fib]"))], other: 0, earlier: 1 };
        let sites = BTreeMap::from([(42, BTreeMap::from([(RequestKey::call("read"), read), (RequestKey::call("write"), write)]))]);
        let t = table(&example(), &sites).unwrap();
        let text = render(&t, "fib", 42, 3);
        let rows = text.split("  wait4 latency").next().unwrap();
        let expected = "\
Requests (system calls of fib [pid 42], each timed from its enter to its exit by the kernel's raw_syscalls tracepoints):
  106 requests, 2.505303 s in them; 2 seen to start or end alone, not timed (under way when the events were armed, as the program's own exec; a child's return from clone; exit_group)
  Under each call, the busiest sites it was made from (requests, share of the row's, site <- its caller): the first frame outside the C library and Rust's runtime of the user stack at the call (its top unwound by the objects' unwind tables, the rest by the kernel's frame-pointer walk).
  call         count      total s       min    median       p90       p99       max
  wait4            1     2.500000    2.50 s    2.50 s    2.50 s    2.50 s    2.50 s
  read           100     0.005050    1.0 us   50.0 us   90.0 us   99.0 us  100.0 us
                  60        60.0%  load [fib] <- main [fib]
                  25        25.0%  walk [fib] <- walk [fib]
                  10        10.0%  read [libc.so.6]
                   5         5.0%  (1 other site; stacks past the 64 a call keeps)
  write            4     0.000253    700 ns    900 ns  250.0 us  250.0 us  250.0 us
                   2        50.0%  log_line [fib] <- main [fib]
                   2        50.0%  (made before an exec by the image it replaced; no user stack)
  (1 more)         1     0.000000
";
        assert_eq!(rows, expected, "got:\n{text}");
        // The histograms follow as without sites.
        let plain = render(&table_of_example(), "fib", 42, 3);
        assert_eq!(text.split_once("  wait4 latency").unwrap().1, plain.split_once("  wait4 latency").unwrap().1);
        // A tree's sites add up by name over its processes; a process with no requests of a key
        // brings none.
        let mut p = example();
        p.parts_mut().requests.as_mut().unwrap().add(Request { pid: 43, tid: 43, key: RequestKey::call("write"), from: 0, to: 5, taken_by: None, site: Default::default(), served: None });
        let mut more = sites.clone();
        more.insert(43, BTreeMap::from([(RequestKey::call("write"), KeySites { sites: vec![site(1, "log_line [fib]", Some("main [fib]"))], other: 0, earlier: 0 })]));
        let t = table(&p, &more).unwrap();
        assert_eq!(t.sites[&RequestKey::call("write")].sites, [site(3, "log_line [fib]", Some("main [fib]"))]);
    }

    fn table_of_example() -> RequestTable {
        table(&example(), &BTreeMap::new()).unwrap()
    }

    /// -a: the processes by the time in their requests, the busiest ones' tables, then all of
    /// them together; a process is named by its program.
    #[test]
    fn a_system_wide_section_is_by_process_then_together() {
        use crate::profile::ChildProfile;
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let mut add = |pid: u32, call: &'static str, ns: u64, n: u64| {
            for _ in 0..n {
                log.add(Request { pid, tid: pid, key: RequestKey::call(call), from: 0, to: ns, taken_by: None, site: Default::default(), served: None });
            }
        };
        add(7, "write", 1_000, 3);
        add(8, "read", 500_000, 2);
        add(8, "write", 2_000, 1);
        add(9, "poll", 10, 1);
        let child = |pid: u32, program: &str| ChildProfile { pid, parent: None, program: program.into(), profile: Profile::default(), running: true };
        let p = Profile::from(Parts {
            idle_ticks: Some(0),
            processes: vec![child(7, "/usr/bin/dd"), child(8, "/usr/bin/cat"), child(9, "/usr/sbin/sshd")],
            requests: Some(log),
            ..Default::default()
        });
        let text = system_section(&p, true, Some(2), &BTreeMap::new()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..5], [
            "Requests by process (system calls of every process but profil's, each timed from its enter to its exit by the kernel's raw_syscalls tracepoints; the tables of the 5 busiest below, then of all together):",
            "  process         count      total s",
            "  cat [pid 8]         3     0.001002",
            "  dd [pid 7]          3     0.000003",
            "  (1 more)            1     0.000000",
        ]);
        let headings: Vec<&str> = lines.iter().filter(|l| l.starts_with("Requests (")).map(|l| l.split(',').next().unwrap()).collect();
        assert_eq!(headings, ["Requests (system calls of cat [pid 8]", "Requests (system calls of dd [pid 7]", "Requests (system calls of sshd [pid 9]", "Requests (system calls of every process together"]);
        assert!(text.contains("Requests (system calls of every process together, 3 processes, each timed"), "{text}");
        assert!(text.contains("\n  write            4     0.000005 "), "{text}");
        // Nothing recorded: a line where asked, else nothing.
        let none = Profile::from(Parts { idle_ticks: Some(0), ..Default::default() });
        assert_eq!(system_section(&none, true, None, &BTreeMap::new()).as_deref(), Some("Requests: none recorded (the kernel wrote no request records: on Redox a kernel with kernel-patch/events writes them)\n"));
        assert_eq!(system_section(&none, false, None, &BTreeMap::new()), None);
    }

    #[test]
    fn a_tree_s_table_sums_its_processes() {
        let mut p = example();
        let log = p.parts_mut().requests.as_mut().unwrap();
        log.add(Request { pid: 43, tid: 43, key: RequestKey::call("read"), from: 0, to: 5, taken_by: None, site: Default::default(), served: None });
        log.lost = 3;
        let t = table(&p, &BTreeMap::new()).unwrap();
        assert_eq!((t.processes, t.lost), (2, 3));
        let read = t.rows.iter().find(|r| r.key.to == "read").unwrap();
        assert_eq!((read.count, read.latencies.as_ref().unwrap().0.min), (101, 5));
        let text = render(&t, "fib", 42, 20);
        assert!(text.starts_with("Requests (system calls of fib [pid 42] and the processes it started, 2 in all,"), "{text}");
        assert!(text.contains("; 3 records lost: the counts are short\n"), "{text}");
        // No run recorded: no table.
        assert_eq!(table(&Profile::default(), &BTreeMap::new()), None);
    }

    #[test]
    fn refused_tracepoints_show_the_looks_blocked_time_labelled_with_a_hint() {
        // The example's looks: three reads of a pipe seen, 0.9 s; 40 short waits no look named.
        let mut p = crate::profile::example();
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        log.refused = Some("the raw_syscalls tracepoints could not be opened: Permission denied (os error 13)".into());
        p.parts_mut().requests = Some(log);
        let t = table(&p, &BTreeMap::new()).unwrap();
        let text = render(&t, "fib", 42, 20);
        let expected = "\
Requests: not measured; blocked time per call of fib [pid 42] instead, as --off-cpu's looks saw it (not system-call latencies):
  3 waits seen, 0.900000 s blocked
  Note: the raw_syscalls tracepoints could not be opened: Permission denied (os error 13)
  call      seen      total s       min    median       p90       p99       max
  read         3     0.900000         -         -         -         -         -
  Every call's latency: run profil as root (or with CAP_PERFMON, or kernel.perf_event_paranoid -1, and tracefs readable).
";
        assert_eq!(text, expected, "got:\n{text}");
    }

    #[test]
    fn latencies_read_in_their_unit() {
        assert_eq!([0, 999, 1000, 12_345, 999_999, 4_560_000, 1_234_000_000].map(latency), [
            "0 ns", "999 ns", "1.0 us", "12.3 us", "1.00 ms", "4.56 ms", "1.23 s"
        ]);
    }
}
