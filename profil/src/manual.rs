//! The manual page (`profil --man`: roff for man(7)), the README's option table and
//! docs/options.md, all made from [`crate::options`].

use std::fmt::Write;

use crate::options::{After, Opt, DESCRIPTION, OPTIONS, SYNOPSIS};

/// Text as roff takes it: a backslash escaped, a hyphen a minus (options are typed with
/// one), a control character at a line's start made text; Markdown's `code` in bold.
fn roff(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split('`').enumerate() {
        let part: String = part
            .chars()
            .map(|c| match c {
                '\\' => "\\e".to_string(),
                '-' => "\\-".to_string(),
                c if c.is_ascii() => c.to_string(),
                // groff's and mandoc's escape for any Unicode character.
                c => format!("\\[u{:04X}]", u32::from(c)),
            })
            .collect();
        match i % 2 {
            1 => {
                let _ = write!(out, "\\fB{part}\\fR");
            }
            _ => out.push_str(&part),
        }
    }
    out.lines()
        .map(|l| if l.starts_with(['.', '\'']) { format!("\\&{l}") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An option's names in bold, its values in italics: `\fB-F\fR \fIHZ\fR, \fB--frequency\fR`.
fn names(o: &Opt) -> String {
    o.spellings()
        .iter()
        .map(|(name, after)| {
            let value = match after {
                After::Nothing => String::new(),
                After::Space => format!(" \\fI{}\\fR", roff(o.value)),
                After::Equals => format!("[=\\fI{}\\fR]", roff(o.value)),
            };
            format!("\\fB{}\\fR{value}", roff(name))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The whole page.
pub fn page() -> String {
    let mut out = String::new();
    let _ = writeln!(out, ".TH PROFIL 1 \"\" \"profil {}\" \"User Commands\"", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(out, ".SH NAME\nprofil \\- Minix\\-style per\\-process profiling for Redox OS and Linux");
    let _ = writeln!(out, ".SH SYNOPSIS\n.nf");
    for line in SYNOPSIS.lines() {
        let _ = writeln!(out, "{}", roff(line.strip_prefix("Usage: ").unwrap_or(line).trim_start()));
    }
    let _ = writeln!(out, ".fi\n.SH DESCRIPTION\n{}", roff(DESCRIPTION));
    let _ = writeln!(out, ".SH OPTIONS");
    for o in OPTIONS {
        let _ = writeln!(out, ".TP\n{}", names(o));
        let text = if o.more.is_empty() { o.help } else { o.more };
        let stop = if text.ends_with('.') { "" } else { "." };
        let _ = writeln!(out, "{}{stop}", roff(text));
        if !o.default.is_empty() {
            let _ = writeln!(out, "Default: {}.", roff(o.default));
        }
    }
    let _ = writeln!(
        out,
        ".SH EXIT STATUS\nThe program's own; if a signal killed it, profil ends by the same signal once the report and \
         the exports are written (128 plus the signal's number for one that dumps core). 1 when profiling could not be \
         done; 2 for a bad command line; 3 when \\fB\\-\\-fail\\-above\\fR found a regression."
    );
    let _ = writeln!(out, ".SH SEE ALSO\n\\fBperf\\-record\\fR(1), \\fBgprof\\fR(1), \\fBprofil\\fR(3)");
    out
}

/// The README's option table: every option with its one line and default.
pub fn readme_table() -> String {
    let mut out = String::from("| option | meaning | default |\n|---|---|---|\n");
    for o in OPTIONS {
        let names: Vec<String> = o.names().iter().map(|n| format!("`{n}`")).collect();
        let help = o.help.replace('|', "\\|");
        let _ = writeln!(out, "| {} | {help} | {} |", names.join(", "), o.default.replace('|', "\\|"));
    }
    out
}

/// docs/options.md: every option, one paragraph each (the manual's OPTIONS in Markdown).
pub fn options_page() -> String {
    let mut out = String::from(
        "# profil's options\n\nEvery option, one paragraph each, made from `profil/src/options.rs` (as are `--help`, the \
         manual page `profil --man` and the README's table; a test keeps this file equal to it).\n\n```\n",
    );
    let _ = writeln!(out, "{SYNOPSIS}\n```\n");
    for o in OPTIONS {
        let names: Vec<String> = o.names().iter().map(|n| format!("`{n}`")).collect();
        let text = if o.more.is_empty() { o.help } else { o.more };
        let stop = if text.ends_with('.') { "" } else { "." };
        let _ = write!(out, "**{}** — {text}{stop}", names.join(", "));
        if !o.default.is_empty() {
            let _ = write!(out, " Default: {}.", o.default);
        }
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's option table is the table [`readme_table`] makes (`UPDATE_EXPECT=1 cargo
    /// test -p profil --lib manual` writes it there, as expect-test does the whole files).
    #[test]
    fn the_readme_table_is_made_from_the_options() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
        let text = std::fs::read_to_string(path).unwrap();
        let start = text.find("| option | meaning | default |").expect("the option table");
        let end = text[start..].find("\n\n").map_or(text.len(), |e| start + e + 1);
        let made = readme_table();
        if std::env::var_os("UPDATE_EXPECT").is_some() && text[start..end] != made {
            std::fs::write(path, format!("{}{made}{}", &text[..start], &text[end..])).unwrap();
            return;
        }
        assert_eq!(&text[start..end], made, "the README's table: UPDATE_EXPECT=1 cargo test -p profil --lib manual");
    }

    #[test]
    fn docs_options_is_made_from_the_options() {
        expect_test::expect_file!["../../docs/options.md"].assert_eq(&options_page());
    }

    /// Every option is in `--help` and the manual, each as the parser takes it.
    #[test]
    fn help_and_manual_name_every_option() {
        let help = crate::options::parser().usage("");
        let page = page();
        for o in OPTIONS {
            let parsed = match (o.short, o.long) {
                ("", long) => crate::options::parser().parse([format!("--{long}")]).map(|m| m.opt_present(long)),
                (short, _) => crate::options::parser().parse([format!("-{short}")]).map(|m| m.opt_present(short)),
            };
            if o.takes == crate::options::Takes::Nothing || o.takes == crate::options::Takes::MaybeValue {
                assert_eq!(parsed, Ok(true), "{:?}", o.names());
            }
            let name = &o.spellings()[0].0;
            let listed = help.lines().any(|l| l.split_whitespace().take_while(|w| w.starts_with('-')).any(|w| w.trim_end_matches(',') == name));
            assert!(listed, "--help lacks {name}");
            assert!(page.contains(&format!("\\fB{}\\fR", name.replace('-', "\\-"))), "the manual lacks {name}");
        }
    }

    /// The manual as man(1) reads it: groff with every warning on finds nothing to say.
    #[test]
    fn the_manual_is_roff_groff_reads_without_a_warning() {
        let groff = std::process::Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let Ok(mut groff) = groff else {
            assert!(std::env::var_os("CI").is_none(), "groff is missing (CI installs it)");
            eprintln!("skipped: no groff");
            return;
        };
        use std::io::Write as _;
        groff.stdin.take().unwrap().write_all(page().as_bytes()).unwrap();
        let out = groff.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    }
}
