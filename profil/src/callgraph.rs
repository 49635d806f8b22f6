//! `--callgraph`: who called the hot functions and what they called, from the recorded
//! stacks (SPIN's and gprof's call graph, by samples rather than by call counts).
//!
//! For each of the top functions by total: its total and self samples, then each caller
//! with the samples in which it called this function directly, and each callee with the
//! samples in which this function called it, both as shares of this function's total. The
//! daemons that worked for the program (Redox) take part with their own roots
//! (`ramfs [pid 7]`); totals are then shares of the program's and the daemons' samples.

use std::fmt::Write;

use crate::flat::FlatProfile;
use crate::stacks::StackProfile;

/// How many functions the section shows.
pub const DEFAULT_TOP: usize = 10;

pub fn render(sp: &StackProfile, flat: &FlatProfile, top: usize) -> String {
    let inclusive = sp.inclusive();
    let arcs = sp.arcs();
    let mut order: Vec<usize> = (0..sp.functions.len()).collect();
    order.sort_by(|&a, &b| inclusive[b].cmp(&inclusive[a]).then_with(|| sp.functions[a].name.cmp(&sp.functions[b].name)));
    // A daemon's function's own samples are its innermost frames.
    let mut server_self = vec![0u64; sp.functions.len()];
    for st in &sp.servers {
        if let Some(&f) = st.frames.last() {
            server_self[f] = server_self[f].saturating_add(st.count);
        }
    }
    let self_of = |f: usize| {
        if sp.functions[f].server {
            server_self[f]
        } else {
            flat.entries.iter().find(|e| e.name() == sp.functions[f].name).map_or(0, |e| e.samples)
        }
    };
    let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
    let in_daemons = sp.server_samples();
    let whole = flat.total.saturating_add(in_daemons);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Call graph (top {} of {} by total; {} with stacks{}{}):",
        top.min(order.len()),
        crate::words::count(order.len() as u64, "function"),
        crate::words::count(sp.total, "sample"),
        if sp.truncated > 0 { format!(", {} truncated", sp.truncated) } else { String::new() },
        if in_daemons > 0 { format!("; and {in_daemons} of daemons working for it") } else { String::new() }
    );
    for &f in order.iter().take(top) {
        let name = &sp.functions[f].name;
        let total = inclusive[f];
        let own = self_of(f);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{name}\n  total {:.2}% ({total} samples), self {:.2}% ({own} samples)",
            share(total, whole),
            share(own, whole)
        );
        let callers = arcs.iter().filter(|(k, _)| k.1 == f).map(|(k, &n)| (n, sp.functions[k.0].name.as_str())).collect();
        let callees = arcs.iter().filter(|(k, _)| k.0 == f).map(|(k, &n)| (n, sp.functions[k.1].name.as_str())).collect();
        write_arcs(&mut out, callers, callees, total, |n| format!("{n:>9}"));
    }
    out
}

/// A function's callers and callees, each with its amount (`amount` formats it) and its share
/// of the function's `total`, most first.
fn write_arcs(out: &mut String, callers: Vec<(u64, &str)>, callees: Vec<(u64, &str)>, total: u64, amount: impl Fn(u64) -> String) {
    for (title, mut list) in [("called from", callers), ("calls", callees)] {
        if list.is_empty() {
            continue;
        }
        list.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let _ = writeln!(out, "  {title}:");
        for (n, other) in list {
            let share = if total == 0 { 0.0 } else { n as f64 * 100.0 / total as f64 };
            let _ = writeln!(out, "  {} {share:>7.2}%  {other}", amount(n));
        }
    }
}

/// `--callgraph` with `--off-cpu`: the same view of the blocked time, from the waits' stacks
/// (`crate::waiting`), weighted in nanoseconds: for each of the top functions by the time
/// blocked under it, that time, the time it was itself the innermost frame (the system call's
/// wrapper, usually), its callers and its callees with the time under each arc.
pub fn render_waits(waits: &[crate::waiting::Wait], top: usize) -> String {
    use std::collections::{BTreeMap, BTreeSet};
    let mut under: BTreeMap<&str, u64> = BTreeMap::new();
    let mut own: BTreeMap<&str, u64> = BTreeMap::new();
    let mut arcs: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut blocked = 0u64;
    for w in waits {
        blocked = blocked.saturating_add(w.ns);
        if let Some(leaf) = w.frames.first() {
            let e = own.entry(leaf.as_str()).or_default();
            *e = e.saturating_add(w.ns);
        }
        // A function (or arc) counts once per stack, however often it recurs in it.
        let names: BTreeSet<&str> = w.frames.iter().map(String::as_str).collect();
        for name in names {
            let e = under.entry(name).or_default();
            *e = e.saturating_add(w.ns);
        }
        let pairs: BTreeSet<(&str, &str)> = w.frames.windows(2).map(|p| (p[1].as_str(), p[0].as_str())).collect();
        for pair in pairs {
            let e = arcs.entry(pair).or_default();
            *e = e.saturating_add(w.ns);
        }
    }
    let mut order: Vec<(&str, u64)> = under.iter().map(|(&f, &ns)| (f, ns)).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 * 100.0 / of as f64 };
    let secs = |ns: u64| ns as f64 / 1e9;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Call graph by the clock (--off-cpu; top {} of {} by the time blocked under them, of {:.3} s blocked at named calls):",
        top.min(order.len()),
        crate::words::count(order.len() as u64, "function"),
        secs(blocked)
    );
    for &(f, total) in order.iter().take(top) {
        let mine = own.get(f).copied().unwrap_or(0);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{f}\n  blocked under it {:.2}% ({:.3} s), as the innermost frame {:.2}% ({:.3} s)",
            share(total, blocked),
            secs(total),
            share(mine, blocked),
            secs(mine)
        );
        let callers = arcs.iter().filter(|(k, _)| k.1 == f).map(|(k, &n)| (n, k.0)).collect();
        let callees = arcs.iter().filter(|(k, _)| k.0 == f).map(|(k, &n)| (n, k.1)).collect();
        write_arcs(&mut out, callers, callees, total, |n| format!("{:>8.3} s", secs(n)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemons_take_part_with_their_own_roots() {
        let (sp, s) = crate::stacks::tests::with_a_server();
        let (_, flat) = crate::flat::tests::stacks_and_flat();
        // The flat profile is the program's: no daemon function in it.
        let with_daemon = crate::flat::FlatProfile::build(&[], &s, Some(&sp));
        assert!(with_daemon.entries.iter().all(|e| !e.name().contains("ramfs")), "{with_daemon:?}");
        let text = render(&sp, &flat, 20);
        assert!(text.starts_with("Call graph (top 7 of 7 functions by total; 9 samples with stacks, 1 truncated; and 6 of daemons working for it):\n"), "{text}");
        // 9 program samples + 6 of the daemon: shares of 15.
        assert!(text.contains("\nramfs [pid 7]\n  total 40.00% (6 samples), self 0.00% (0 samples)\n  calls:\n          6  100.00%  handle [ramfs]\n"), "{text}");
        assert!(text.contains("\nread_block [ramfs]\n  total 33.33% (5 samples), self 33.33% (5 samples)\n  called from:\n          5  100.00%  handle [ramfs]\n"), "{text}");
        assert!(text.contains("\nmain\n  total 53.33% (8 samples), self 0.00% (0 samples)\n"), "{text}");
    }

    #[test]
    fn callers_and_callees_of_the_top_functions() {
        let (sp, flat) = crate::flat::tests::stacks_and_flat();
        assert_eq!(
            render(&sp, &flat, 2),
            "Call graph (top 2 of 4 functions by total; 9 samples with stacks, 1 truncated):\n\
             \n\
             c\n\
             \x20 total 88.89% (8 samples), self 88.89% (8 samples)\n\
             \x20 called from:\n\
             \x20         6   75.00%  a\n\
             \x20         3   37.50%  c\n\
             \x20         2   25.00%  b\n\
             \x20 calls:\n\
             \x20         3   37.50%  c\n\
             \n\
             main\n\
             \x20 total 88.89% (8 samples), self 0.00% (0 samples)\n\
             \x20 calls:\n\
             \x20         6   75.00%  a\n\
             \x20         2   25.00%  b\n"
        );
    }

    /// The blocked time by call graph: each function's time under it once per stack, arcs
    /// from the stacks' neighbours, the innermost frame's own time.
    #[test]
    fn the_blocked_time_by_callers_and_callees() {
        let wait = |frames: &[&str], ns| crate::waiting::Wait {
            process: None,
            call: "read".into(),
            targets: vec![],
            frames: frames.iter().map(|f| f.to_string()).collect(),
            truncated: false,
            ns,
            count: 1,
            by_thread: vec![],
            served: vec![],
        };
        let waits = [
            wait(&["read [libc.so.6]", "load", "main"], 600_000_000),
            wait(&["read [libc.so.6]", "walk", "walk", "main"], 300_000_000),
            wait(&["nanosleep [libc.so.6]", "main"], 100_000_000),
        ];
        assert_eq!(
            render_waits(&waits, 2),
            "Call graph by the clock (--off-cpu; top 2 of 5 functions by the time blocked under them, of 1.000 s blocked at named calls):\n\
             \n\
             main\n\
             \x20 blocked under it 100.00% (1.000 s), as the innermost frame 0.00% (0.000 s)\n\
             \x20 calls:\n\
             \x20    0.600 s   60.00%  load\n\
             \x20    0.300 s   30.00%  walk\n\
             \x20    0.100 s   10.00%  nanosleep [libc.so.6]\n\
             \n\
             read [libc.so.6]\n\
             \x20 blocked under it 90.00% (0.900 s), as the innermost frame 90.00% (0.900 s)\n\
             \x20 called from:\n\
             \x20    0.600 s   66.67%  load\n\
             \x20    0.300 s   33.33%  walk\n"
        );
    }
}
