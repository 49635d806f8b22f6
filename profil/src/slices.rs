//! The Timeline section (`--timeline[=N]`): the run (or the `--time` window) cut in N slices
//! of equal time, each with the CPU the program used in it, its busiest function and, where
//! its threads were looked at blocked (`--off-cpu`), the call they were most found in: a
//! phase change shows as a change of function, without a browser.

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;

use crate::naming::Names;

use crate::timeline::{At, Window};
use crate::profile::Profile;

/// The section's slices unless `--timeline=N` says.
pub const DEFAULT_SLICES: usize = 20;

/// One slice of the run: ns from the program's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    pub from: u64,
    pub to: u64,
    /// The program's samples on a CPU in it.
    pub on_cpu: u64,
    /// Its busiest function and that function's samples.
    pub top: Option<(String, u64)>,
    /// The call its threads were most found blocked in, and how many looks found them there.
    pub blocked: Option<(String, u64)>,
    /// Where the run kept its requests whole (`--requests`): those that began in the slice,
    /// and what they went to most, with how many.
    pub requests: Option<(u64, Option<(String, u64)>)>,
}

/// The run of `p` from `window` (the whole run: `None`) in `n` slices, its functions named:
/// every process of the run (the program, and the processes it started), on the clock they
/// share.
pub fn slices(p: &Profile, window: Option<&Window>, n: usize, names: &Names) -> Vec<Slice> {
    let span = p.run_span();
    let (from, to) = window.map_or((0, u64::MAX), |w| w.ns(span));
    let to = to.min(span);
    if to <= from || n == 0 {
        return Vec::new();
    }
    // A frame's name is by its process's space: the same runtime address is other code in
    // another process.
    let spaces: Vec<crate::naming::Space> = p.with_processes().map(|process| names.space(process.mappings())).collect();
    let edge = |k: usize| from + ((to - from) as u128 * k as u128 / n as u128) as u64;
    let timed = p.requests().map(|l| &l.timed[..]).filter(|t| !t.is_empty());
    (0..n)
        .map(|k| {
            let (a, b) = (edge(k), if k + 1 == n { to.saturating_add(1) } else { edge(k + 1) });
            let mut functions: HashMap<std::rc::Rc<str>, u64> = HashMap::default();
            let mut waits: HashMap<String, u64> = HashMap::default();
            let mut on_cpu = 0;
            for (i, process) in p.with_processes().enumerate() {
                for s in process.timeline().between(a, b) {
                    let name = match s.at {
                        At::Cpu(frame) => names.frame(spaces[i], frame).name.clone(),
                        At::Kernel(_) => std::rc::Rc::from("[kernel]"),
                        At::Blocked(site) => {
                            // The run's wait sites are the program's, whichever process waited.
                            let call = p.clock().wait_sites.get(site as usize).map_or("[unknown]", |w| w.call.as_str());
                            *waits.entry(call.to_string()).or_insert(0) += 1;
                            continue;
                        }
                    };
                    on_cpu += 1;
                    *functions.entry(name).or_insert(0) += 1;
                }
            }
            // The requests that began in the slice, by what they went to.
            let requests = timed.map(|timed| {
                let mut by_call: HashMap<String, u64> = HashMap::default();
                for r in timed.iter().filter(|r| r.from >= a && r.from < b) {
                    *by_call.entry(r.key.to.to_string()).or_insert(0) += 1;
                }
                (by_call.values().sum(), most(by_call))
            });
            Slice { from: a, to: b.min(to), on_cpu, top: most(functions), blocked: most(waits), requests }
        })
        .collect()
}

/// The entry with the most, the first by name where two tie.
fn most<S: AsRef<str> + Ord>(counts: HashMap<S, u64>) -> Option<(String, u64)> {
    counts.into_iter().max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0))).map(|(name, n)| (name.as_ref().to_string(), n))
}

/// The section: a line per slice. `hz`: the samples a second of CPU time (100 % is one CPU);
/// `processes`: how many processes the run's samples are of (the program and those it
/// started), which the slices' cpu sums.
pub fn render(slices: &[Slice], hz: u64, processes: usize) -> String {
    let mut out = String::new();
    if slices.is_empty() {
        return "Timeline: none: this run's samples have no times (a run saved by an older profil, or a profd that serves no timeline).\n".to_string();
    }
    let width = slices[0].to.saturating_sub(slices[0].from);
    let whose = match processes {
        0 | 1 => "its samples".to_string(),
        n => format!("the samples of its {n} processes"),
    };
    let _ = writeln!(
        out,
        "Timeline ({} slices of {:.1} ms, seconds from the run's start; cpu: {whose} over the slice's time at {hz} Hz):",
        slices.len(),
        width as f64 / 1e6
    );
    let blocked = slices.iter().any(|s| s.blocked.is_some());
    let requests = slices.iter().any(|s| s.requests.is_some());
    let _ = writeln!(
        out,
        "     from       to     cpu  busiest function (share){}{}",
        if blocked { ", blocked in (looks)" } else { "" },
        if requests { ", requests begun (most to)" } else { "" }
    );
    for s in slices {
        let seconds = s.to.saturating_sub(s.from) as f64 / 1e9;
        let cpu = match seconds * hz as f64 {
            x if x > 0.0 => 100.0 * s.on_cpu as f64 / x,
            _ => 0.0,
        };
        let top = match &s.top {
            Some((name, n)) => format!("{name} {:.1} %", crate::words::percent(*n, s.on_cpu)),
            None => "-".to_string(),
        };
        let wait = match &s.blocked {
            Some((call, looks)) => format!("  | {call} ({looks})"),
            None => String::new(),
        };
        let asked = match &s.requests {
            Some((n, Some((to, m)))) => format!("  | {} ({to} {m})", crate::words::count(*n, "request")),
            Some((n, None)) => format!("  | {}", crate::words::count(*n, "request")),
            None => String::new(),
        };
        let _ = writeln!(out, "{:>9.3}{:>9.3}  {cpu:>4.0} %  {top}{wait}{asked}", s.from as f64 / 1e9, s.to as f64 / 1e9);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::profile::Parts;
    use super::*;

    #[test]
    fn each_slice_says_its_cpu_its_busiest_function_and_its_wait() {
        let slices = [
            Slice { from: 0, to: 500_000_000, on_cpu: 500, top: Some(("fib".into(), 490)), blocked: None, requests: None },
            Slice { from: 500_000_000, to: 1_000_000_000, on_cpu: 125, top: Some(("loop".into(), 125)), blocked: Some(("nanosleep".into(), 3)), requests: None },
        ];
        assert_eq!(
            render(&slices, 1000, 1),
            "Timeline (2 slices of 500.0 ms, seconds from the run's start; cpu: its samples over the slice's time at 1000 Hz):\n\
             \x20    from       to     cpu  busiest function (share), blocked in (looks)\n\
             \x20   0.000    0.500   100 %  fib 98.0 %\n\
             \x20   0.500    1.000    25 %  loop 100.0 %  | nanosleep (3)\n"
        );
        assert!(render(&[], 1000, 1).starts_with("Timeline: none: this run's samples have no times"));
    }

    /// A run with its requests timed (`--requests`): each slice counts those that began in
    /// it, and names what they went to most.
    #[test]
    fn each_slice_counts_the_requests_begun_in_it() {
        use prof_core::requests::{Request, RequestKey, RequestLog, RequestSource};
        let mut log = RequestLog::new(RequestSource::SystemCalls);
        let at = |from: u64, call: &'static str| Request { pid: 7, tid: 7, key: RequestKey::call(call), from, to: from + 10, taken_by: None, site: Default::default(), served: None };
        for r in [at(100, "read"), at(200, "read"), at(300, "write"), at(600_000_000, "openat")] {
            log.add(r);
        }
        let p = Profile::from(Parts { pid: 7, requests: Some(log), timeline: crate::timeline::Timeline { span: 1_000_000_000, ..Default::default() }, ..Default::default() });
        let names = crate::naming::Names::of_run(crate::stacks::tests::symbolizer(), &p, Default::default());
        let got = slices(&p, None, 2, &names);
        assert_eq!(got.iter().map(|s| s.requests.clone()).collect::<Vec<_>>(), [Some((3, Some(("read".to_string(), 2)))), Some((1, Some(("openat".to_string(), 1))))]);
        assert_eq!(
            render(&got, 1000, 1),
            "Timeline (2 slices of 500.0 ms, seconds from the run's start; cpu: its samples over the slice's time at 1000 Hz):\n\
             \x20    from       to     cpu  busiest function (share), requests begun (most to)\n\
             \x20   0.000    0.500     0 %  -  | 3 requests (read 2)\n\
             \x20   0.500    1.000     0 %  -  | 1 request (openat 1)\n"
        );
    }
}
