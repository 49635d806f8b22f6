//! `--samples FILE`: every sample of the run in time order, a line each, for scripts (as
//! `perf script` prints perf's): `SECONDS TID STATE STACK`, tab-separated, after one `#`
//! line naming the columns; the program's and those of the processes it started
//! (`--children`), each by its thread. SECONDS from the program's start (to the µs); STATE `cpu`, or
//! `blocked` for a look that found the thread blocked (`--off-cpu`); STACK the folded
//! stack, root first, `;` between frames (the function alone without `-g`; a wait's stack ends
//! in its `[off-CPU: call]` frame), as `--collapsed` writes them.

use std::fmt::Write;

use crate::exports::collapsed::frame;
use crate::exports::time_order::NamedTimeline;

/// The column names, the file's first line.
pub const HEADER: &str = "# seconds\ttid\tstate\tstack";

pub fn render(t: &NamedTimeline) -> String {
    // Every process's samples, each with its own stacks' names; in time order, the program's
    // first where two processes' samples have one time.
    let mut lines: Vec<(u64, u32, bool, &str)> = Vec::new();
    let mut folded: Vec<Vec<String>> = Vec::new();
    for timeline in std::iter::once(t).chain(t.processes.iter().map(|p| &p.timeline)) {
        folded.push(timeline.stacks.iter().map(|s| s.iter().map(|f| frame(&f.name)).collect::<Vec<_>>().join(";")).collect());
    }
    for (timeline, stacks) in std::iter::once(t).chain(t.processes.iter().map(|p| &p.timeline)).zip(&folded) {
        lines.extend(timeline.samples.iter().map(|s| (s.time, s.tid, s.on_cpu, stacks.get(s.stack as usize).map_or("", String::as_str))));
    }
    lines.sort_by_key(|l| l.0);
    let mut out = String::with_capacity(64 * (lines.len() + 1));
    out.push_str(HEADER);
    out.push('\n');
    for (time, tid, on_cpu, stack) in lines {
        let state = if on_cpu { "cpu" } else { "blocked" };
        let us = time / 1000;
        let _ = writeln!(out, "{}.{:06}\t{tid}\t{state}\t{stack}", us / 1_000_000, us % 1_000_000);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exports::time_order::{NamedFrame, NamedSample};

    #[test]
    fn a_line_per_sample_in_time_order() {
        let t = NamedTimeline {
            span: 3_000_000_000,
            samples: vec![
                NamedSample { time: 1_000, tid: 7, on_cpu: true, stack: 0 },
                NamedSample { time: 2_500_000_000, tid: 8, on_cpu: false, stack: 1 },
            ],
            stacks: [vec!["main", "fib"], vec!["main", "nap", "[off-CPU: clock_nanosleep]"]]
                .map(|names| names.into_iter().map(NamedFrame::label).collect())
                .to_vec(),
            waits: vec![None, Some(0)],
            processes: Vec::new(),
            spans: Vec::new(),
            served: Vec::new(),
            requests: Vec::new(),
            taken: Vec::new(),
        };
        assert_eq!(
            render(&t),
            "# seconds\ttid\tstate\tstack\n0.000001\t7\tcpu\tmain;fib\n2.500000\t8\tblocked\tmain;nap;[off-CPU: clock_nanosleep]\n"
        );
    }

    /// A tree (`--children`): the processes' samples among the program's, in time order, each
    /// with its own stacks.
    #[test]
    fn the_processes_samples_go_among_the_program_s() {
        use crate::exports::time_order::ProcessTimeline;
        let timeline = |samples: Vec<NamedSample>, stacks: Vec<Vec<&str>>| NamedTimeline {
            span: 3_000_000_000,
            samples,
            stacks: stacks.into_iter().map(|names| names.into_iter().map(NamedFrame::label).collect()).collect(),
            waits: vec![None],
            processes: Vec::new(),
            spans: Vec::new(),
            served: Vec::new(),
            requests: Vec::new(),
            taken: Vec::new(),
        };
        let mut t = timeline(vec![NamedSample { time: 2_000_000, tid: 7, on_cpu: true, stack: 0 }], vec![vec!["sh", "main"]]);
        let child = timeline(
            vec![NamedSample { time: 1_000_000, tid: 9, on_cpu: true, stack: 0 }, NamedSample { time: 2_000_000, tid: 9, on_cpu: true, stack: 0 }],
            vec![vec!["fib", "loop"]],
        );
        t.processes.push(ProcessTimeline { pid: 9, program: "/bin/fib".into(), timeline: child });
        assert_eq!(
            render(&t),
            "# seconds\ttid\tstate\tstack\n0.001000\t9\tcpu\tfib;loop\n0.002000\t7\tcpu\tsh;main\n0.002000\t9\tcpu\tfib;loop\n"
        );
    }
}
