//! The Requests section (`--requests`): what the program asked of the system and how long each
//! request took, per what it went to — on Linux each system call, enter to exit (the kernel's
//! tracepoints); on Redox each request to a scheme, taken to answered, by scheme and daemon —
//! as one table, whichever system filled it: count, total, minimum, median, 90th and 99th
//! percentile, maximum, most total time first, and a log2 histogram of the busiest.
//!
//! Where the tracepoints were refused (Linux without privilege), the same table holds what the
//! off-CPU looks measured instead, blocked time per call, and says so: no latency columns, a
//! hint how to get them.

use std::collections::BTreeMap;
use std::fmt::Write;

use prof_core::ledger::UNSEEN;
use prof_core::requests::{DaemonSplit, Latencies, RequestKey, RequestSource, Requests, Summary};

use crate::profile::Profile;

/// Rows the table shows unless `--top` says otherwise; the rest are summed in one line.
pub const DEFAULT_TOP: usize = 20;

/// Keys whose latency histogram is drawn (the most total time first).
pub const HISTOGRAMS: usize = 3;

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
    /// its switch back), in the rows' order.
    pub waited: Vec<(RequestKey, Summary)>,
    /// Redox: how the daemons spent these requests' time, from taking each to answering it, in
    /// the rows' order.
    pub split: Vec<(RequestKey, DaemonSplit)>,
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
        RequestTable { measured: Measured::Latencies(source), processes, rows: ranked(rows), unfinished: requests.unfinished, lost, chains: Vec::new(), waited: Vec::new(), split: Vec::new() }
    }
}

/// Most total time first; then most requests, then by name.
fn ranked(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| b.total.cmp(&a.total).then(b.count.cmp(&a.count)).then_with(|| a.key.cmp(&b.key)));
    rows
}

/// The run's requests as a table, where `--requests` recorded them (or said why it could
/// not): the program's, or, where it followed the processes the program started, the tree's.
pub fn table(p: &Profile) -> Option<RequestTable> {
    let log = p.requests.as_ref()?;
    if let Some(why) = &log.refused {
        return Some(blocked_table(p, why));
    }
    let processes = log.by_pid.len().max(1);
    let requests = match log.by_pid.keys().any(|&pid| pid != p.pid) {
        true => log.merged(),
        false => log.by_pid.get(&p.pid).cloned().unwrap_or_default(),
    };
    let mut t = RequestTable::of(&requests, log.source, processes, log.lost);
    t.waited = t.rows.iter().filter_map(|r| Some((r.key.clone(), requests.waited.get(&r.key)?.summary()))).collect();
    t.split = t.rows.iter().filter_map(|r| Some((r.key.clone(), requests.split.get(&r.key)?.clone()))).collect();
    t.chains = log.chains.iter().map(|((served, made), l)| Chain { served: served.clone(), made: made.clone(), latencies: l.summary() }).collect();
    t.chains.sort_by(|a, b| b.latencies.total.cmp(&a.latencies.total).then(b.latencies.count.cmp(&a.latencies.count)).then_with(|| (&a.served, &a.made).cmp(&(&b.served, &b.made))));
    Some(t)
}

/// The blocked time per call the off-CPU looks saw (every thread's, the calls no look named
/// left out), as a table without latencies.
fn blocked_table(p: &Profile, why: &str) -> RequestTable {
    let mut by_call: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for w in p.clock.threads.iter().flat_map(|t| &t.waits).filter(|w| w.site != UNSEEN) {
        let Some(site) = p.clock.wait_sites.get(w.site as usize) else { continue };
        let e = by_call.entry(site.call.as_str()).or_insert((0, 0));
        *e = (e.0.saturating_add(w.count), e.1.saturating_add(w.ns));
    }
    let rows = by_call
        .into_iter()
        .map(|(call, (count, total))| Row { key: RequestKey::call(call.to_string()), count, total, latencies: None })
        .collect();
    let processes = 1 + p.processes.len();
    RequestTable { measured: Measured::BlockedTime(why.to_string()), processes, rows: ranked(rows), unfinished: 0, lost: 0, chains: Vec::new(), waited: Vec::new(), split: Vec::new() }
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
    let mut out = String::new();
    let whose = match t.processes {
        0 | 1 => format!("{name} [pid {pid}]"),
        n => format!("{name} [pid {pid}] and the processes it started, {} in all", n),
    };
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
    }
    if let Some(more) = more {
        let rest = &t.rows[top..];
        let (n, ns) = rest.iter().fold((0u64, 0u64), |(n, ns), r| (n.saturating_add(r.count), ns.saturating_add(r.total)));
        let _ = writeln!(out, "  {more:<width$} {n:>9} {:>12.6}", ns as f64 / 1e9);
    }
    if !t.waited.is_empty() {
        let _ = writeln!(out, "  From the callers' side (each from the caller's switch into the call to its switch back, by the kernel's switch records: what the caller's own clock sees of it but the system call's entry and exit):");
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
pub fn section(p: &Profile, name: &str, asked: bool, top: Option<usize>) -> Option<String> {
    match table(p) {
        Some(t) => Some(render(&t, crate::processes::base_name(name), p.pid, top.unwrap_or(DEFAULT_TOP)) + "\n"),
        None if asked => Some("Requests: none recorded (this system's backend does not record them yet)\n\n".to_string()),
        None => None,
    }
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
    use super::*;
    use prof_core::requests::{Request, RequestLog};

    /// A run's requests: reads of 1 to 100 us, a few writes, one slow wait4, two unfinished.
    fn example() -> Profile {
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let mut t = 0;
        let mut call = |name: &'static str, ns: u64| {
            log.add(Request { pid: 42, tid: 42, key: RequestKey::call(name), from: t, to: t + ns, taken_by: None });
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
        Profile { pid: 42, requests: Some(log), ..Default::default() }
    }

    #[test]
    fn the_section_s_exact_text() {
        let t = table(&example()).unwrap();
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

    #[test]
    fn a_tree_s_table_sums_its_processes() {
        let mut p = example();
        let log = p.requests.as_mut().unwrap();
        log.add(Request { pid: 43, tid: 43, key: RequestKey::call("read"), from: 0, to: 5, taken_by: None });
        log.lost = 3;
        let t = table(&p).unwrap();
        assert_eq!((t.processes, t.lost), (2, 3));
        let read = t.rows.iter().find(|r| r.key.to == "read").unwrap();
        assert_eq!((read.count, read.latencies.as_ref().unwrap().0.min), (101, 5));
        let text = render(&t, "fib", 42, 20);
        assert!(text.starts_with("Requests (system calls of fib [pid 42] and the processes it started, 2 in all,"), "{text}");
        assert!(text.contains("; 3 records lost: the counts are short\n"), "{text}");
        // No run recorded: no table.
        assert_eq!(table(&Profile::default()), None);
    }

    #[test]
    fn refused_tracepoints_show_the_looks_blocked_time_labelled_with_a_hint() {
        // The example's looks: three reads of a pipe seen, 0.9 s; 40 short waits no look named.
        let mut p = crate::profile::example();
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        log.refused = Some("the raw_syscalls tracepoints could not be opened: Permission denied (os error 13)".into());
        p.requests = Some(log);
        let t = table(&p).unwrap();
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
