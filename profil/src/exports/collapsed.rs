//! `--collapsed FILE`: the profile in the folded-stack format that `flamegraph.pl` and inferno
//! read, one `frame;frame;... count` line per stack, the program's name as the root.  With
//! call stacks (`-g`) each line is a recorded stack, outermost caller first; a truncated one
//! hangs under a `[truncated]` frame. Without them each stack is `program;function`.
//! Functions of other objects are named as in the flat profile (`memcpy [libc.so.6]`).
//! With `--children` each process's stacks hang under a root of their own (`spin [pid 101]`).
//!
//! With `--off-cpu` the file is of the run's time by the clock, every line weighted in
//! microseconds: a CPU stack counts one sampling period per sample (1,000 us at 1 kHz), and
//! each wait is a stack ending in a frame `[off-CPU: CALL]` (`[off-CPU: read]`) under the
//! function that made the call, weighted by its blocked time. So a function's width is its
//! wall time, on and off the CPU.

use std::fmt::Write;

use crate::exports::Analysis;
use crate::flat::FlatProfile;
use crate::processes::{root_frame, row_frame};
use crate::stacks::StackProfile;

/// The frame under which truncated stacks hang.
pub const TRUNCATED: &str = "[truncated]";

/// The folded lines of a run: the program's; with `--children`, every process's, each
/// rooted at its process (`sh [pid 100]`, `spin [pid 101]`), so one flame graph shows each
/// process and all of them.
pub fn render_all(a: &Analysis) -> String {
    let root = match a.processes.is_empty() {
        true => a.run.program.rsplit('/').next().unwrap_or(&a.run.program).to_string(),
        false => root_frame(&a.run.program, a.run.profile.pid()),
    };
    let mut out = render_rooted(&root, a.flat, a.stacks);
    for c in a.processes {
        out.push_str(&render_rooted(&row_frame(&a.run.profile, &c.program, c.pid), &c.flat, c.stacks.as_ref()));
    }
    match a.run.profile.clock().off_cpu {
        Some(_) => by_the_clock(&root, &out, a.run.frequency_hz, a.waits),
        None => out,
    }
}

/// `--diff`: the difference of the base run and this one as inferno's (and difffolded.pl's)
/// differential folded lines, `stack base_samples samples`, the base's samples scaled to this
/// run's total; both runs' stacks under this program's root, so they match; sorted.
pub fn render_diff(a: &Analysis, base: &crate::compare::Base) -> std::io::Result<String> {
    let root = a.run.program.rsplit('/').next().unwrap_or(&a.run.program);
    let before = render(root, &base.flat, base.stacks.as_ref());
    let after = render(root, a.flat, a.stacks);
    let options = inferno::differential::Options { normalize: true, strip_hex: false };
    let mut out = Vec::new();
    inferno::differential::from_readers(options, before.as_bytes(), after.as_bytes(), &mut out)?;
    let text = String::from_utf8_lossy(&out);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    Ok(lines.iter().map(|l| format!("{l}\n")).collect())
}

/// The frame a wait's stack ends in.
pub fn off_cpu_frame(call: &str) -> String {
    format!("[off-CPU: {}]", frame(call))
}

/// Folded CPU lines (`cpu`, in samples at `frequency_hz`) in microseconds, then each wait's
/// stack under `root` (a child's under its own), ending in its [`off_cpu_frame`], weighted by
/// its blocked time.
fn by_the_clock(root: &str, cpu: &str, frequency_hz: u64, waits: &[crate::waiting::Wait]) -> String {
    let us_per_sample = 1_000_000 / frequency_hz.max(1);
    let mut out = String::new();
    for line in cpu.lines() {
        if let Some((stack, n)) = line.rsplit_once(' ') {
            let n: u64 = n.parse().unwrap_or(0);
            let _ = writeln!(out, "{stack} {}", n.saturating_mul(us_per_sample));
        }
    }
    let root = frame(root);
    for w in waits.iter().filter(|w| w.ns >= 1000) {
        // A child's waits hang under its own root, as its CPU stacks do.
        match &w.process {
            Some((name, pid)) => out.push_str(&frame(&root_frame(name, *pid))),
            None => out.push_str(&root),
        }
        if w.truncated {
            let _ = write!(out, ";{TRUNCATED}");
        }
        for f in w.frames.iter().rev() {
            let _ = write!(out, ";{}", frame(f));
        }
        let _ = writeln!(out, ";{} {}", off_cpu_frame(&w.call), w.ns / 1000);
    }
    out
}

/// The folded lines of the profile of `program`, most ticks first.
pub fn render(program: &str, flat: &FlatProfile, stacks: Option<&StackProfile>) -> String {
    render_rooted(program.rsplit('/').next().unwrap_or(program), flat, stacks)
}

/// The folded lines of a profile, each stack under the frame `root`.
fn render_rooted(root: &str, flat: &FlatProfile, stacks: Option<&StackProfile>) -> String {
    let root = frame(root);
    let mut out = String::new();
    match stacks {
        Some(sp) => {
            for st in sp.stacks.iter().filter(|s| s.count > 0) {
                out.push_str(&root);
                if st.truncated {
                    let _ = write!(out, ";{TRUNCATED}");
                }
                for &f in &st.frames {
                    let _ = write!(out, ";{}", frame(&sp.functions[f].name));
                }
                let _ = writeln!(out, " {}", st.count);
            }
            // The daemons that worked for the program: under the program's call they served
            // (Redox: stitched), under the program's root, marked where that call's stack is
            // truncated (or was never walked) as the program's own are; else each its own
            // root (`ramfs [pid 7]`).
            for st in sp.servers.iter().filter(|s| s.count > 0) {
                let (program, daemon) = sp.stitched_parts(st);
                let mut names: Vec<String> = Vec::new();
                if st.under_wait.is_some() || !program.is_empty() {
                    names.push(root.clone());
                    if st.under_wait == Some(true) {
                        names.push(TRUNCATED.to_string());
                    }
                    names.extend(program.iter().map(|&f| frame(&sp.functions[f].name)));
                }
                let (daemon_root, rest) = daemon.split_first().map_or((None, &[][..]), |(r, rest)| (Some(*r), rest));
                names.extend(daemon_root.map(|r| frame(&sp.functions[r].name)));
                if st.truncated {
                    names.push(TRUNCATED.to_string());
                }
                names.extend(rest.iter().map(|&f| frame(&sp.functions[f].name)));
                let _ = writeln!(out, "{} {}", names.join(";"), st.count);
            }
        }
        None => {
            for e in flat.entries.iter().filter(|e| e.samples > 0) {
                let _ = writeln!(out, "{root};{} {}", frame(&e.name()), e.samples);
            }
        }
    }
    out
}

/// A name as one frame: `;` separates frames and a line ends the stack, so neither may be in
/// a name (Rust array types such as `[u8; 4]` have a `;`): they become `,` and a space.
pub fn frame(name: &str) -> String {
    name.replace(';', ",").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::FlatEntry;

    #[test]
    fn by_the_clock_every_line_is_in_microseconds() {
        let w = crate::waiting::Wait {
            process: None,
            call: "read".into(),
            targets: vec![(Some("pipe:[9]".into()), 250_000_000)],
            frames: vec!["read [libc.so.6]".into(), "load".into(), "main".into()],
            truncated: false,
            ns: 250_000_400,
            count: 2,
            by_thread: vec![(7, 250_000_400)],
            served: vec![],
        };
        let text = by_the_clock("abc", "abc;main;spin 30\nabc;main 2\n", 1000, &[w]);
        assert_eq!(text, "abc;main;spin 30000\nabc;main 2000\nabc;main;load;read [libc.so.6];[off-CPU: read] 250000\n");
    }

    #[test]
    fn daemons_hang_under_roots_of_their_own() {
        let (sp, _) = crate::stacks::tests::with_a_server();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true, whole: None };
        let text = render("/bin/abc", &flat, Some(&sp));
        assert!(text.starts_with("abc;main;a;c 3\n"), "{text}");
        assert!(
            text.ends_with("ramfs [pid 7];handle [ramfs];read_block [ramfs] 5\nramfs [pid 7];[truncated];handle [ramfs] 1\n"),
            "{text}"
        );
    }

    /// A daemon's work stitched under the program's call it served hangs under the program's
    /// root, its `[truncated]` after the daemon's root, as in its unstitched stacks.
    #[test]
    fn stitched_daemon_stacks_keep_the_programs_root() {
        let (sp, _, _) = crate::stacks::tests::with_a_stitched_server();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true, whole: None };
        let text = render("/bin/abc", &flat, Some(&sp));
        assert!(
            text.ends_with(
                "abc;main;a;c;ramfs [pid 7];handle [ramfs];read_block [ramfs] 3\n\
                 abc;main;a;c;ramfs [pid 7];[truncated];handle [ramfs] 2\n\
                 ramfs [pid 7];handle [ramfs];read_block [ramfs] 1\n"
            ),
            "{text}"
        );
    }

    /// A daemon's work under a wait of the program's whose stack the kernel never walked (a
    /// wait on the bootstrap's managers, say): under the program's root and a `[truncated]`,
    /// as the program's own cut stacks are, not a root of its own. The program's lines
    /// marked `[truncated]` are the report's truncated samples, one count.
    #[test]
    fn a_daemons_work_under_a_wait_never_walked_keeps_the_programs_root() {
        let (_, _, mut p) = crate::stacks::tests::with_a_stitched_server();
        p.parts_mut().clock.wait_sites[0].stack = crate::profile::Stack { frames: vec![], truncated: true, count: 0 };
        let sp = crate::stacks::tests::built(crate::stacks::tests::with_ramfs(), &p).0.unwrap();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true, whole: None };
        let text = render("/bin/abc", &flat, Some(&sp));
        assert!(
            text.ends_with(
                "abc;[truncated];ramfs [pid 7];handle [ramfs];read_block [ramfs] 3\n\
                 abc;[truncated];ramfs [pid 7];[truncated];handle [ramfs] 2\n\
                 ramfs [pid 7];handle [ramfs];read_block [ramfs] 1\n"
            ),
            "{text}"
        );
        let count = |l: &str| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap();
        let program = text.lines().filter(|l| !l.contains(" [pid "));
        let marked: u64 = program.filter(|l| l.starts_with("abc;[truncated];")).map(count).sum();
        assert_eq!((marked, sp.truncated), (1, 1), "{text}");
    }

    #[test]
    fn one_line_per_function_under_the_program() {
        let e = |f: Option<&str>, o: Option<&str>, samples| FlatEntry {
            function: f.map(Into::into),
            object: o.map(Into::into),
            samples,
            total: None,
            code: None,
        };
        let flat = FlatProfile {
            entries: vec![
                e(Some("overflow"), None, 10),
                e(Some("<[u8; 4] as core::fmt::Debug>::fmt"), None, 3),
                e(Some("memcpy"), Some("libc.so.6"), 2),
                e(None, Some("vdso"), 1),
            ],
            total: 16,
            kernel: 0,
            with_totals: false,
            whole: None,
        };
        assert_eq!(
            render("target/release/fib", &flat, None),
            "fib;overflow 10\nfib;<[u8, 4] as core::fmt::Debug>::fmt 3\nfib;memcpy [libc.so.6] 2\nfib;[vdso] 1\n"
        );
    }

    #[test]
    fn recorded_stacks_root_first_truncated_ones_marked() {
        let sp = crate::stacks::tests::built(crate::stacks::tests::symbolizer(), &crate::stacks::tests::profile()).0.unwrap();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true, whole: None };
        assert_eq!(
            render("/bin/abc", &flat, Some(&sp)),
            "abc;main;a;c 3\nabc;main;a;c;c 3\nabc;main;b;c 2\nabc;[truncated];b 1\n"
        );
    }
}
