//! What profil needs from the system besides the profiler and the files it reads: nothing.
//!
//! On Redox a missing `rand:` scheme made profil abort ("failed to generate random data"):
//! std's `HashMap` seeds itself from the OS. profil hashes with a fixed seed instead, so it
//! asks the OS for no randomness of its own. Checked here with `strace` on Linux: profil's
//! process makes no more `getrandom` calls than the profiled `fib` (a Rust program with no
//! hash maps), i.e. only the C library's own.

mod common;

use std::process::Command;

use common::{fib_bin, profil_bin, session};

/// `getrandom` calls per pid in an `strace -f` log.
fn getrandom_calls(log: &str, pid: &str) -> usize {
    log.lines().filter(|l| l.starts_with(&format!("{pid} ")) && l.contains("getrandom(")).count()
}

#[test]
fn profil_asks_the_os_for_no_randomness() {
    if !common::installed("strace", "strace") {
        return;
    }
    let _s = session();
    let dir = std::env::temp_dir().join(format!("profil-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("strace.log");
    // Every report and export path, so every map profil builds is exercised.
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=getrandom,execve", "-o"])
        .arg(&log)
        .arg(profil_bin())
        .args(["-g", "--lines", "--inline", "--children", "--pprof"])
        .arg(dir.join("p.pb.gz"))
        .arg("--asm")
        .arg("--json")
        .arg(dir.join("p.json"))
        .arg("-o")
        .arg(dir.join("gmon.out"))
        .arg("--collapsed")
        .arg(dir.join("p.folded"))
        .arg(fib_bin())
        .args(["22", "5"])
        .output()
        .expect("run strace");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = std::fs::read_to_string(&log).unwrap();
    // The first line is profil's own execve; fib's pid is the one that execs fib.
    let pid_of = |line: &str| line.split_whitespace().next().unwrap().to_string();
    let profil_pid = pid_of(log.lines().next().unwrap());
    let fib_name = fib_bin().display().to_string();
    let fib_pid = log
        .lines()
        .find(|l| l.contains("execve(") && l.contains(&fib_name) && !l.starts_with(&format!("{profil_pid} ")))
        .map(pid_of)
        .unwrap_or_else(|| panic!("no exec of fib in:\n{log}"));
    let (ours, baseline) = (getrandom_calls(&log, &profil_pid), getrandom_calls(&log, &fib_pid));
    assert!(ours <= baseline, "profil made {ours} getrandom calls, fib (the C library alone) {baseline}:\n{log}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The release profil ships lean: no DWARF (it made the binary 17 MB), symbols kept.
#[test]
fn the_release_profil_carries_no_debug_info() {
    let bytes = std::fs::read(profil_bin()).unwrap();
    let elf = goblin::elf::Elf::parse(&bytes).unwrap();
    let names: Vec<&str> = elf.section_headers.iter().filter_map(|s| elf.shdr_strtab.get_at(s.sh_name)).collect();
    if cfg!(debug_assertions) {
        // A debug build of the tests runs a debug profil; the README's command is --release.
        common::skip("a debug build runs a debug profil (run the tests with --release)");
        return;
    }
    assert!(!names.iter().any(|n| n.starts_with(".debug_")), "{names:?}");
    assert!(names.contains(&".symtab"), "{names:?}");
    assert!(bytes.len() < 8 << 20, "{} bytes", bytes.len());
}
