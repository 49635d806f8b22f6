//! `--collapsed FILE`: the profile in the folded-stack format that `flamegraph.pl` and inferno
//! read, one `frame;frame;... count` line per stack, the program's name as the root.  With
//! call stacks (`-g`) each line is a recorded stack, outermost caller first; a truncated one
//! hangs under a `[truncated]` frame. Without them each stack is `program;function`.
//! Functions of other objects are named as in the flat profile (`memcpy [libc.so.6]`).
//! With `--children` each process's stacks hang under a root of their own (`spin [pid 101]`).

use std::fmt::Write;

use crate::exports::Analysis;
use crate::flat::FlatProfile;
use crate::processes::root_frame;
use crate::stacks::StackProfile;

/// The frame under which truncated stacks hang.
pub const TRUNCATED: &str = "[truncated]";

/// The folded lines of a run: the program's; with `--children`, every process's, each
/// rooted at its process (`sh [pid 100]`, `spin [pid 101]`), so one flame graph shows each
/// process and all of them.
pub fn render_all(a: &Analysis) -> String {
    if a.processes.is_empty() {
        return render(&a.run.program, a.flat, a.stacks);
    }
    let mut out = render_rooted(&root_frame(&a.run.program, a.run.profile.pid), a.flat, a.stacks);
    for c in a.processes {
        out.push_str(&render_rooted(&root_frame(&c.program, c.pid), &c.flat, c.stacks.as_ref()));
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
            // The daemons that worked for the program, each its own root (`ramfs [pid 7]`).
            for st in sp.servers.iter().filter(|s| s.count > 0) {
                let (root, rest) = st.frames.split_first().map_or((None, &[][..]), |(r, rest)| (Some(*r), rest));
                out.push_str(&root.map_or(String::new(), |r| frame(&sp.functions[r].name)));
                if st.truncated {
                    let _ = write!(out, ";{TRUNCATED}");
                }
                for &f in rest {
                    let _ = write!(out, ";{}", frame(&sp.functions[f].name));
                }
                let _ = writeln!(out, " {}", st.count);
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
fn frame(name: &str) -> String {
    name.replace(';', ",").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::FlatEntry;

    #[test]
    fn daemons_hang_under_roots_of_their_own() {
        let (sp, _) = crate::stacks::tests::with_a_server();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true };
        let text = render("/bin/abc", &flat, Some(&sp));
        assert!(text.starts_with("abc;main;a;c 3\n"), "{text}");
        assert!(
            text.ends_with("ramfs [pid 7];handle [ramfs];read_block [ramfs] 5\nramfs [pid 7];[truncated];handle [ramfs] 1\n"),
            "{text}"
        );
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
        };
        assert_eq!(
            render("target/release/fib", &flat, None),
            "fib;overflow 10\nfib;<[u8, 4] as core::fmt::Debug>::fmt 3\nfib;memcpy [libc.so.6] 2\nfib;[vdso] 1\n"
        );
    }

    #[test]
    fn recorded_stacks_root_first_truncated_ones_marked() {
        let mut s = crate::stacks::tests::symbolizer();
        let sp = StackProfile::build(&crate::stacks::tests::profile(), &mut s, None).unwrap();
        let flat = FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: true };
        assert_eq!(
            render("/bin/abc", &flat, Some(&sp)),
            "abc;main;a;c 3\nabc;main;a;c;c 3\nabc;main;b;c 2\nabc;[truncated];b 1\n"
        );
    }
}
