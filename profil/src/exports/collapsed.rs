//! `--collapsed FILE`: the profile in the folded-stack format that `flamegraph.pl` and inferno
//! read, one `frame;frame;... count` line per stack.  Samples carry no call stacks, so each
//! stack is `program;function`, with functions of other objects named as in the flat profile
//! (`memcpy [libc.so.6]`).

use std::fmt::Write;

use crate::flat::FlatProfile;

/// The folded lines of `flat` for `program`, most ticks first.
pub fn render(program: &str, flat: &FlatProfile) -> String {
    let root = frame(program.rsplit('/').next().unwrap_or(program));
    let mut out = String::new();
    for e in &flat.entries {
        let _ = writeln!(out, "{root};{} {}", frame(&e.name()), e.samples);
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
    fn one_line_per_function_under_the_program() {
        let e = |f: Option<&str>, o: Option<&str>, samples| FlatEntry {
            function: f.map(Into::into),
            object: o.map(Into::into),
            samples,
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
        };
        assert_eq!(
            render("target/release/fib", &flat),
            "fib;overflow 10\nfib;<[u8, 4] as core::fmt::Debug>::fmt 3\nfib;memcpy [libc.so.6] 2\nfib;[vdso] 1\n"
        );
    }
}
