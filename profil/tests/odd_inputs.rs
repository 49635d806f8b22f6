//! Odd inputs never panic: arguments that are not UTF-8 reach the program byte for byte.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use common::{profil_bin, session, text};

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
fn scripts_and_32_bit_programs_get_messages_that_say_what_to_do() {
    let dir = std::env::temp_dir().join(format!("profil-odd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("hello.sh");
    std::fs::write(&script, "#!/bin/sh\necho hello\n").unwrap();
    // A 32-bit ELF header (EI_CLASS 1, ET_EXEC, i386) is enough to be refused.
    let elf32 = dir.join("old32");
    let mut header = b"\x7fELF\x01\x01\x01".to_vec();
    header.resize(52, 0);
    header[16] = 2;
    header[18] = 3;
    std::fs::write(&elf32, &header).unwrap();
    for p in [&script, &elf32] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (s, e) = (script.to_str().unwrap(), elf32.to_str().unwrap());
    let o = Command::new(profil_bin()).arg(s).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o),
        (String::new(), format!("Profil Error: '{s}' is a script for /bin/sh, not an ELF executable: profile its interpreter (profil /bin/sh {s})\n"))
    );
    // A script found on PATH is named by its path, and its arguments are kept (quoted where a
    // shell needs it), so the suggested command runs it as asked.
    let o = Command::new(profil_bin())
        .arg(script.file_name().unwrap())
        .args(["ls", "two words", "it's"])
        .env("PATH", dir.to_str().unwrap())
        .output()
        .unwrap();
    assert_eq!(
        text(&o).1,
        format!(
            "Profil Error: '{}' is a script for /bin/sh, not an ELF executable: profile its interpreter \
             (profil /bin/sh {s} ls 'two words' 'it'\\''s')\n",
            script.file_name().unwrap().to_str().unwrap()
        )
    );
    let o = Command::new(profil_bin()).arg(e).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o), (String::new(), format!("Profil Error: '{e}': 32-bit ELF executables are not supported\n")));
    std::fs::remove_dir_all(&dir).ok();
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
    assert!(out.contains(&note), "{out}");
    // A program that does not exec says nothing of the kind.
    let o = Command::new(profil_bin()).args(["-f", fib.to_str().unwrap(), "20", "1"]).output().unwrap();
    assert!(!text(&o).0.contains("exec'd"), "{}", text(&o).0);
}

#[test]
fn the_report_starts_on_a_new_line_after_output_without_one() {
    let _s = session();
    let dir = common::scratch("newline");
    // Without the fix the banner followed "abc" on the same line; with a newline, none added.
    for arg in ["abc", "abc\\n"] {
        let file = dir.join("out.txt");
        let o = Command::new(profil_bin())
            .args(["-f", "printf", arg])
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

/// A report that cannot be written (stdout on /dev/full) is one error naming what failed,
/// without Rust's "(os error N)" and without the waiting child's word.
#[test]
fn a_report_that_cannot_be_written_is_one_error() {
    let _s = common::session();
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let o = Command::new(profil_bin()).args(["-f", common::fib_bin().to_str().unwrap(), "20", "1"]).stdout(full).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "Profil Error: Cannot write the report: No space left on device\n");
}
