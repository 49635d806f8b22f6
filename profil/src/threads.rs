//! `--threads`: the program's samples thread by thread (Linux: each sample carries its
//! thread; Redox: the kernel keeps each call stack under its context's id): each thread's tid,
//! name (`comm`, as the kernel had it when the thread was first sampled; a thread names itself
//! with `pthread_setname_np`; on Redox, the program's), samples, share of the program's
//! samples, and its top functions.

use std::collections::BTreeMap;
use std::fmt::Write;

use prof_objects::symbolize::Symbolizer;
use crate::profile::Profile;

/// Functions shown for each thread.
pub const TOP_FUNCTIONS: usize = 3;

/// One thread's line: tid, name, samples, and its functions by samples, most first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadView {
    pub tid: u32,
    pub name: String,
    pub samples: u64,
    pub functions: Vec<(String, u64)>,
}

/// Every sampled thread of the program `program`, most samples first, its functions named.
pub fn threads(p: &Profile, program: &str, symbolizer: &mut Symbolizer) -> Vec<ThreadView> {
    let mut out: Vec<ThreadView> = p
        .by_thread
        .iter()
        .map(|t| {
            let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
            for &(frame, n) in &t.samples {
                let location = symbolizer.frame(frame.into(), &p.mappings);
                let e = by_name.entry(symbolizer.name(&location)).or_insert(0);
                *e = e.saturating_add(n);
            }
            let mut functions: Vec<(String, u64)> = by_name.into_iter().collect();
            functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let samples = functions.iter().fold(0u64, |n, f| n.saturating_add(f.1));
            // A thread that ended before the sampler read its name has the one the kernel
            // gives threads that name no other: the program's (`comm`, 15 bytes).
            let name = match t.name.is_empty() {
                true => crate::processes::base_name(program).chars().take(15).collect(),
                false => t.name.clone(),
            };
            ThreadView { tid: t.tid, name, samples, functions }
        })
        .collect();
    out.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.tid.cmp(&b.tid)));
    out
}

/// The section: a line per thread.
pub fn render(threads: &[ThreadView]) -> String {
    let mut out = String::new();
    let total = threads.iter().fold(0u64, |n, t| n.saturating_add(t.samples));
    let _ = writeln!(
        out,
        "By thread ({} {}, {total} samples):",
        threads.len(),
        if threads.len() == 1 { "thread" } else { "threads" }
    );
    if threads.is_empty() {
        return out;
    }
    let _ = writeln!(out, "      tid  name             samples       %  top functions");
    for t in threads {
        let top: Vec<String> = t.functions.iter().take(TOP_FUNCTIONS).map(|(f, n)| format!("{f} {n}")).collect();
        let more = t.functions.len().saturating_sub(TOP_FUNCTIONS);
        let _ = writeln!(
            out,
            "{:>9}  {:<16} {:>7} {:>7.2}  {}{}",
            t.tid,
            t.name,
            t.samples,
            crate::words::percent(t.samples, total),
            top.join(", "),
            if more > 0 { format!(", … ({more} more)") } else { String::new() }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Frame, ThreadSamples};

    #[test]
    fn each_thread_with_its_share_and_functions() {
        let mut s = crate::stacks::tests::symbolizer();
        let p = Profile {
            by_thread: vec![
                ThreadSamples { tid: 7, name: String::new(), samples: vec![(Frame::Program(0x1010), 2)] },
                ThreadSamples {
                    tid: 8,
                    name: "worker".into(),
                    samples: vec![(Frame::Program(0x1310), 5), (Frame::Program(0x1320), 1), (Frame::Program(0x1150), 2)],
                },
            ],
            ..Default::default()
        };
        let t = threads(&p, "/usr/bin/a-program-named-long", &mut s);
        assert_eq!((t[0].tid, t[0].samples), (8, 8));
        assert_eq!(t[0].functions, [("c".to_string(), 6), ("a".to_string(), 2)]);
        assert_eq!(
            render(&t),
            "By thread (2 threads, 10 samples):\n\
             \x20     tid  name             samples       %  top functions\n\
             \x20       8  worker                 8   80.00  c 6, a 2\n\
             \x20       7  a-program-named        2   20.00  main 2\n"
        );
    }
}
