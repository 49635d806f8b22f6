//! `--samples FILE`: every sample of the program in time order, a line each, for scripts (as
//! `perf script` prints perf's): `SECONDS TID STATE STACK`, tab-separated, after one `#`
//! line naming the columns. SECONDS from the program's start (to the µs); STATE `cpu`, or
//! `blocked` for a look that found the thread blocked (`--off-cpu`); STACK the folded
//! stack, root first, `;` between frames (the function alone without `-g`; a wait's stack ends
//! in its `[off-CPU: call]` frame), as `--collapsed` writes them.

use std::fmt::Write;

use crate::exports::collapsed::frame;
use crate::exports::time_order::NamedTimeline;

/// The column names, the file's first line.
pub const HEADER: &str = "# seconds\ttid\tstate\tstack";

pub fn render(t: &NamedTimeline) -> String {
    let stacks: Vec<String> = t.stacks.iter().map(|s| s.iter().map(|f| frame(&f.name)).collect::<Vec<_>>().join(";")).collect();
    let mut out = String::with_capacity(64 * (t.samples.len() + 1));
    out.push_str(HEADER);
    out.push('\n');
    for s in &t.samples {
        let state = if s.on_cpu { "cpu" } else { "blocked" };
        let stack = stacks.get(s.stack as usize).map_or("", String::as_str);
        let us = s.time / 1000;
        let _ = writeln!(out, "{}.{:06}\t{}\t{state}\t{stack}", us / 1_000_000, us % 1_000_000, s.tid);
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
        };
        assert_eq!(
            render(&t),
            "# seconds\ttid\tstate\tstack\n0.000001\t7\tcpu\tmain;fib\n2.500000\t8\tblocked\tmain;nap;[off-CPU: clock_nanosleep]\n"
        );
    }
}
