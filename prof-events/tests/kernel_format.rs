//! The files the kernel series adds whole are formatted as the kernel formats its own
//! (upstream's CI runs `cargo fmt --check`), with the kernel's settings. The hunks in upstream
//! files can only be checked on the patched tree (kernel-patch/README.md, "How it was tested").

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

/// The kernel's `rustfmt.toml` at 663e6641, as options: every line of it that is not a
/// default. The kernel is edition 2024 (let chains parse only so). Given on the command line,
/// `imports_granularity` (unstable) is applied by a stable rustfmt too.
const KERNEL_SETTINGS: &[&str] =
    &["--edition", "2024", "--config", "style_edition=2015,imports_granularity=Crate,newline_style=Unix,max_width=100"];

/// A check whose tool is missing is skipped, except under CI=true, where it fails (CI
/// installs rustfmt: `.ci/run`).
fn rustfmt_available() -> bool {
    let found = Command::new("rustfmt").arg("--version").output().is_ok_and(|out| out.status.success());
    if !found {
        let why = "rustfmt is not installed (rustup component add rustfmt)";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("this check cannot run, and CI=true: {why}");
        }
        eprintln!("skipped: {why}");
    }
    found
}

/// `text` formatted by rustfmt with the kernel's settings: None if that is `text` itself.
/// (`rustfmt --check` on stdin prints its diff but exits 0, so the output is compared.)
fn unformatted(text: &str) -> Option<String> {
    let mut child = Command::new("rustfmt")
        .args(["--emit", "stdout"])
        .args(KERNEL_SETTINGS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rustfmt");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "rustfmt failed: {}", String::from_utf8_lossy(&out.stderr));
    let formatted = String::from_utf8(out.stdout).expect("rustfmt wrote UTF-8");
    (formatted != text).then_some(formatted)
}

/// The first line where `formatted` differs from `text`.
fn first_difference(text: &str, formatted: &str) -> String {
    let line = text
        .lines()
        .zip(formatted.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| text.lines().count().min(formatted.lines().count()));
    format!("line {}: {:?}, rustfmt has {:?}", line + 1, text.lines().nth(line).unwrap_or(""), formatted.lines().nth(line).unwrap_or(""))
}

#[test]
fn every_file_the_series_adds_is_formatted_with_the_kernels_settings() {
    if !rustfmt_available() {
        return;
    }
    let added = common::added_files();
    let paths: Vec<&str> = added.iter().map(|(_, path, _)| path.as_str()).collect();
    assert_eq!(paths, ["src/profiling/record.rs", "src/profiling/writer.rs", "src/profiling/rate.rs"]);
    for (patch, path, text) in &added {
        if let Some(formatted) = unformatted(text) {
            panic!("{path} (added by {patch}) is not formatted as the kernel wants: {}", first_difference(text, &formatted));
        }
    }
}

#[test]
fn the_check_sees_a_badly_formatted_file() {
    if !rustfmt_available() {
        return;
    }
    assert_eq!(unformatted("fn main() {}\n"), None);
    // Over 100 columns: the kernel's width.
    let long = format!("fn f() {{\n    g({});\n}}\n", ["argument"; 12].join(", "));
    assert!(unformatted(&long).is_some());
    // Let chains parse (edition 2024), and style 2015 keeps the kernel's import order.
    assert_eq!(unformatted("fn f() {\n    if let Some(x) = y\n        && x\n    {}\n}\n"), None);
    assert_eq!(unformatted("use crate::acpi::{sdt::Sdt, RxsdtEnum};\n"), None);
}
