//! Odd inputs never panic: arguments that are not UTF-8 reach the program byte for byte.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use common::{flat_rows, profil, profil_bin, session, text};

#[test]
fn arguments_that_are_not_utf8_reach_the_program_unchanged() {
    let _s = session();
    let odd = OsStr::from_bytes(b"a\xff\xfeb");
    let o = Command::new(profil_bin()).args([OsStr::new("-f"), OsStr::new("printf"), OsStr::new("[%s]"), odd]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(o.stdout.windows(6).any(|w| w == b"[a\xff\xfeb]"), "{}", text(&o).0);
}

#[test]
fn an_option_argument_that_is_not_utf8_is_a_usage_error() {
    let o = Command::new(profil_bin()).args([OsStr::new("-o"), OsStr::from_bytes(b"\xff.out"), OsStr::new("true")]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.starts_with("profil: option argument '\u{fffd}.out' is not valid UTF-8\n"), "{}", text(&o).1);
    // A program name that is not UTF-8 and does not exist: a clear error, no panic.
    let o = Command::new(profil_bin()).arg(OsStr::from_bytes(b"./no\xffsuch")).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o).1, "Profil Error: Cannot execute './no\u{fffd}such': No such file or directory\n");
}

#[test]
fn scripts_run_as_the_kernel_runs_them_and_32_bit_programs_are_refused() {
    let _s = session();
    use std::os::unix::fs::PermissionsExt;
    let dir = common::scratch("odd-scripts");
    let write = |name: &str, text: &str, mode: u32| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    };
    let script = write("hello.sh", "#!/bin/sh -e\necho \"hello [$0] [$1] [$2]\"\n", 0o755);
    // Found on PATH, given its arguments: run by its interpreter, which the bins cover.
    let saved = dir.join("hello.profil");
    let o = Command::new(profil_bin())
        .args(["-f", "--save", saved.to_str().unwrap(), "hello.sh", "two words", "it's"])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with(&format!("hello [{}] [two words] [it's]\n", script.display())), "{out}");
    assert!(err.contains("Note: 'hello.sh' is a script, run by /bin/sh: the bins cover the text of /bin/sh\n"), "{err}");
    assert!(!err.contains("exec'd"), "{err}");
    // The saved run names the interpreter as its program: loaded, the same report.
    let o = Command::new(profil_bin()).args(["-f", "--load", saved.to_str().unwrap()]).output().unwrap();
    let (loaded, load_err) = text(&o);
    assert!(o.status.success(), "{load_err}");
    assert_eq!(loaded, err[err.find("Flat profile").unwrap()..], "{load_err}");
    // Through env, and a script run by a script: the interpreter env finds, and the chain.
    let env_sh = write("env.sh", "#!/usr/bin/env sh\necho env [$0]\n", 0o755);
    let nested = write("nested", &format!("#!{}\n", env_sh.display()), 0o755);
    let sh = String::from_utf8(Command::new("sh").args(["-c", "command -v sh"]).env("PATH", "/usr/bin:/bin").output().unwrap().stdout).unwrap();
    let o = Command::new(profil_bin()).args(["-f", nested.to_str().unwrap()]).env("PATH", "/usr/bin:/bin").output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with(&format!("env [{}]\n", env_sh.display())), "{out}");
    let note = format!("is a script, run by {}, then {}: the bins cover the text of {}\n", env_sh.display(), sh.trim(), sh.trim());
    assert!(err.contains(&note), "{note} in {err}");
    // A script we may not execute, a missing interpreter, no interpreter: one error each.
    let cases = [
        (write("noexec.sh", "#!/bin/sh\n", 0o644), "Permission denied".to_string()),
        (write("gone.sh", "#!/no/such/sh -x\n", 0o755), "its interpreter '/no/such/sh': No such file or directory".to_string()),
        (write("empty.sh", "#!  \n", 0o755), "a script with no interpreter".to_string()),
    ];
    for (file, why) in cases {
        let o = Command::new(profil_bin()).arg(&file).output().unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(text(&o), (String::new(), format!("Profil Error: Cannot execute '{}': {why}\n", file.display())));
    }
    // A 32-bit ELF header (EI_CLASS 1, ET_EXEC, i386) is enough to be refused.
    let mut header = b"\x7fELF\x01\x01\x01".to_vec();
    header.resize(52, 0);
    header[16] = 2;
    header[18] = 3;
    let elf32 = dir.join("old32");
    std::fs::write(&elf32, &header).unwrap();
    std::fs::set_permissions(&elf32, std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = elf32.to_str().unwrap();
    let o = Command::new(profil_bin()).arg(e).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o), (String::new(), format!("Profil Error: '{e}': 32-bit ELF executables are not supported\n")));
    std::fs::remove_dir_all(&dir).ok();
}

/// A chain of execs (a version manager's shims) is one note, busiest program first.
#[test]
fn a_chain_of_execs_is_one_note() {
    let _s = session();
    let fib = common::fib_bin();
    let script = format!("exec /usr/bin/env {} 20 1", fib.display());
    let o = Command::new(profil_bin()).args(["-f", "sh", "-c", &script]).output().unwrap();
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let env = std::fs::canonicalize("/usr/bin/env").unwrap();
    let note = format!(
        "Note: 'sh' exec'd 2 times ({}, {}; busiest first): the bins cover the text of 'sh', not of the programs it became\n",
        fib.display(),
        env.display()
    );
    // sh's text had none of the samples, or a few: the note says which.
    let empty = note.replace("of 'sh', not", "of 'sh', which had none of the samples (the flat profile has the work), not");
    assert!(err.contains(&note) || err.contains(&empty), "{note} in {err}");
    assert_eq!(err.matches("Note: 'sh' exec'd").count(), 1, "{err}");
}

#[test]
fn a_name_without_a_slash_is_looked_up_on_path_with_a_hint_for_a_file_here() {
    // `profil fib.c` in the directory holding fib.c: like execvp, profil looks on PATH only.
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let o = Command::new(profil_bin()).arg("fib.c").current_dir(data).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o).1,
        "Profil Error: Cannot execute 'fib.c': not found on PATH; for the file in this directory, say ./fib.c\n"
    );
    let o = Command::new(profil_bin()).arg("./fib.c").current_dir(data).output().unwrap();
    assert_eq!(text(&o).1, "Profil Error: './fib.c' is not an ELF executable\n");
}

#[test]
fn a_program_that_execs_another_says_so() {
    let _s = session();
    let fib = common::fib_bin();
    let script = format!("exec {} 20 1", fib.display());
    let o = Command::new(profil_bin()).args(["-f", "sh", "-c", &script]).output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let note = format!("Note: 'sh' exec'd {}: the bins cover the text of 'sh', not of the program it became\n", fib.display());
    let empty = note.replace("of 'sh', not", "of 'sh', which had none of the samples (the flat profile has the work), not");
    assert!((err.contains(&note) || err.contains(&empty)) && !out.contains("exec'd"), "{err}");
    // A program that does not exec says nothing of the kind.
    let o = Command::new(profil_bin()).args(["-f", fib.to_str().unwrap(), "20", "1"]).output().unwrap();
    assert!(!text(&o).1.contains("exec'd"), "{}", text(&o).1);
}

#[test]
fn the_report_starts_on_a_new_line_after_output_without_one() {
    let _s = session();
    let dir = common::scratch("newline");
    // Without the fix the banner followed "abc" on the same line; with a newline, none added.
    for arg in ["abc", "abc\\n"] {
        let file = dir.join("out.txt");
        let o = Command::new(profil_bin())
            .args(["--report", "-", "-f", "printf", arg])
            .stdout(std::fs::File::create(&file).unwrap())
            .output()
            .unwrap();
        assert!(o.status.success());
        let out = std::fs::read_to_string(&file).unwrap();
        // (-f: the flat profile follows the output, without the statistics banner.)
        assert!(out.contains("\nabc\nFlat profile ("), "{arg}: {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An ELF file without execute permission is refused before anything runs, as a script is:
/// no banner, one error.
#[test]
fn a_program_without_execute_permission_is_refused_before_its_run() {
    let dir = std::env::temp_dir().join(format!("profil-noexec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("noexec");
    std::fs::copy(common::fib_bin(), &prog).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = Command::new(profil_bin()).arg(&prog).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o), (String::new(), format!("Profil Error: Cannot execute '{}': Permission denied\n", prog.display())));
    std::fs::remove_dir_all(&dir).ok();
}

/// A report that cannot be written (`--report -`, stdout on /dev/full) is one error naming what failed,
/// without Rust's "(os error N)" and without the waiting child's word; the exports are still
/// written; the run is never a success (1), but a program's own failure keeps its status.
#[test]
fn a_report_that_cannot_be_written_is_one_error() {
    let _s = common::session();
    let full = || match std::fs::OpenOptions::new().write(true).open("/dev/full") {
        Ok(f) => Some(f),
        Err(_) => {
            common::skip("no /dev/full");
            None
        }
    };
    let Some(stdout) = full() else { return };
    let dir = common::scratch("report-full");
    let json = dir.join("p.json");
    let o = Command::new(profil_bin())
        .args(["--report", "-", "-f", "--json", json.to_str().unwrap(), common::fib_bin().to_str().unwrap(), "20", "1"])
        .stdout(stdout)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "Profil Error: Cannot write the report: No space left on device\n");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the export was written")).unwrap();
    assert_eq!(doc["exit"]["code"], 0);
    // `ls` fails by itself on a full stdout (2): profil keeps that status.
    let alone = Command::new("ls").arg("/").stdout(full().unwrap()).status().unwrap();
    let o = Command::new(profil_bin()).args(["--report", "-", "-f", "ls", "/"]).stdout(full().unwrap()).output().unwrap();
    assert_eq!((o.status.code(), alone.code()), (Some(2), Some(2)), "{}", text(&o).1);
    assert!(text(&o).1.ends_with("Profil Error: Cannot write the report: No space left on device\n"), "{}", text(&o).1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The banner and the report go to standard error, as `time` and `strace` write theirs: the
/// program's output is its own (`profil gzip -c f > f.gz` is the same file as gzip makes), and
/// `--report -` puts them on standard output, the spec's layout on one stream.
#[test]
fn the_report_goes_to_standard_error_and_the_programs_output_stays_its_own() {
    let _s = common::session();
    let alone = Command::new("gzip").args(["-c", "/etc/services"]).output().expect("gzip");
    assert!(alone.status.success() && alone.stdout.len() > 100);
    let o = Command::new(profil_bin()).args(["-f", "gzip", "-c", "/etc/services"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert!(o.stdout == alone.stdout, "gzip's output under profil differs from gzip's alone");
    let err = text(&o).1;
    assert!(err.starts_with("************************* Output of 'gzip' ****************************\n"), "{err}");
    assert!(err.contains("\nFlat profile (") && err.ends_with("'gzip' exited with status 0\n"), "{err}");
    // --report -: the banner, the program's output and the report, in that order, on stdout.
    let fib = common::fib_bin();
    let o = Command::new(profil_bin()).args(["-f", "--report", "-", fib.to_str().unwrap(), "20", "1"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!((o.status.code(), err.as_str()), (Some(0), ""));
    let (banner, program, report) = (out.find("Output of").unwrap(), out.find("fib.main:").unwrap(), out.find("Flat profile (").unwrap());
    assert!(banner < program && program < report, "{out}");
    // With no program's output beside it (--load), the report is on standard output.
    let dir = common::scratch("report-default-load");
    let saved = dir.join("fib.run");
    let o = Command::new(profil_bin()).args(["-f", "--save", saved.to_str().unwrap(), fib.to_str().unwrap(), "20", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let o = Command::new(profil_bin()).args(["-f", "--load", saved.to_str().unwrap()]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!((o.status.code(), err.as_str()), (Some(0), ""));
    assert!(out.starts_with("Flat profile ("), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--report FILE`: standard output carries the program's output alone (no banner, no report),
/// so `profil --report r.txt prog | head -1` is prog's first line; the file holds the report
/// a plain run prints after the program's output. `/dev/stderr` names the default.
#[test]
fn the_report_can_go_to_a_file_or_to_standard_error() {
    let _s = common::session();
    let dir = common::scratch("report-file");
    let report = dir.join("r.txt");
    let fib = common::fib_bin();
    let o = Command::new(profil_bin()).args(["-f", "--report", report.to_str().unwrap(), fib.to_str().unwrap(), "20", "1"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let alone = Command::new(&fib).args(["20", "1"]).output().unwrap();
    // The program's own lines, in its order (its addresses are the same: no ASLR of link-time
    // addresses), and nothing of profil's.
    assert_eq!(out, String::from_utf8_lossy(&alone.stdout));
    assert_eq!(err, "");
    let file = std::fs::read_to_string(&report).unwrap();
    assert!(file.starts_with("Flat profile ("), "{file}");
    assert!(file.contains("Session ended by: exit\n") && !file.contains("Output of"), "{file}");
    // The same report a plain run prints after the program's output (its sections, in order).
    let plain = text(&Command::new(profil_bin()).args(["-f", fib.to_str().unwrap(), "20", "1"]).output().unwrap()).1;
    let headings = |t: &str| -> Vec<String> { t.lines().filter(|l| l.ends_with(':') || l.starts_with("Flat profile")).map(|l| l.split(" (").next().unwrap().to_string()).collect() };
    assert_eq!(headings(&file), headings(&plain[plain.find("Flat profile").unwrap()..]));
    // To standard error, named: as the default, the banner first and the program's output
    // alone on standard output.
    let o = Command::new(profil_bin()).args(["-f", "--report", "/dev/stderr", fib.to_str().unwrap(), "20", "1"]).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(out, String::from_utf8_lossy(&alone.stdout));
    assert!(err.starts_with("****") && err.contains("Output of") && err.contains("Session ended by: exit\n"), "{err}");
    // Like every export, checked before the program runs: never the program itself, never two
    // exports onto one file.
    let o = Command::new(profil_bin()).args(["--report", report.to_str().unwrap(), "--json", report.to_str().unwrap(), fib.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o).1, format!("Profil Error: Cannot write '{}': another export names the same file\n", report.display()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A script's profile is its interpreter's code: each of its rows says so (`[sh]`), as any
/// other object's rows do, named or not (a stripped sh's `[0x9ca0-0xa50c]`).
#[test]
fn a_script_s_rows_are_tagged_with_its_interpreter() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::scratch("odd-script-rows");
    let script = dir.join("count.sh");
    std::fs::write(&script, "#!/bin/sh\ni=0\nwhile [ $i -lt 200000 ]; do i=$((i+1)); done\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = {
        let _s = session();
        profil(&["-f", script.to_str().unwrap()])
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let rows = flat_rows(&out);
    let sh: u64 = rows.iter().filter(|r| r.2.ends_with(" [sh]")).map(|r| r.0).sum();
    let all: u64 = rows.iter().map(|r| r.0).sum();
    // The loop is sh's own code for a good part (dash spends much of it in libc's string
    // functions, which have their own tag); no row is sh's code without its tag (a bare
    // `[0x9ca0-0xa50c]`, or `strcmp@plt`).
    assert!(sh * 5 > all, "{out}");
    assert!(rows.iter().all(|r| r.2.ends_with(']') && (r.2.contains(' ') || !r.2.starts_with("[0x"))), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
