//! Export files are never damaged, and standard output can be an export: real runs of profil
//! on fib with `-o`, `--collapsed`, `--json` pointed at existing files, the program itself,
//! one file twice, `-` and `/dev/stdout`; and a report whose reader goes away (`| head`).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{fib_bin, installed, profil, profil_bin, scratch, session, text};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Only the files the test made are in `dir`: no temporary file is left behind.
fn assert_only(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    found.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(found, want);
}

#[test]
fn a_refused_run_leaves_existing_exports_untouched() {
    let _s = session();
    let dir = scratch("exports-refused");
    let (json, gmon, folded) = (dir.join("keep.json"), dir.join("gmon.out"), dir.join("keep.folded"));
    for f in [&json, &gmon, &folded] {
        std::fs::write(f, b"precious\n").unwrap();
    }
    // start > end: the run is refused (Address range invalid) after the child was forked.
    let o = profil(&["--json", s(&json), "-o", s(&gmon), "--collapsed", s(&folded), "-s", "0x100", "-e", "0x10", s(&fib_bin())]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("Profil Error: Address range invalid"), "{}", text(&o).1);
    for f in [&json, &gmon, &folded] {
        assert_eq!(std::fs::read(f).unwrap(), b"precious\n", "{}", f.display());
    }
    assert_only(&dir, &["keep.json", "gmon.out", "keep.folded"]);

    // A successful run replaces them.
    let o = profil(&["--json", s(&json), s(&fib_bin()), "20", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["format"], "profil");
    assert_only(&dir, &["keep.json", "gmon.out", "keep.folded"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn profil_killed_mid_run_leaves_existing_exports_untouched() {
    let _s = session();
    let dir = scratch("exports-killed");
    let json = dir.join("keep.json");
    std::fs::write(&json, b"precious\n").unwrap();
    let mut p = Command::new(profil_bin())
        .args(["--json", s(&json), s(&fib_bin())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    p.kill().unwrap();
    p.wait().unwrap();
    assert_eq!(std::fs::read(&json).unwrap(), b"precious\n");
    assert_only(&dir, &["keep.json"]);
    // Its orphaned child finishes by itself; wait for it before the next test takes the session.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_export_onto_the_program_or_twice_onto_one_file_is_refused_before_it_runs() {
    let _s = session();
    let dir = scratch("exports-refuse");
    let victim = dir.join("victim");
    std::fs::copy(fib_bin(), &victim).unwrap();
    let original = std::fs::read(&victim).unwrap();
    for flag in ["-o", "--json", "--collapsed"] {
        let o = profil(&[flag, s(&victim), s(&victim), "20", "1"]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(err, format!("Profil Error: Cannot write '{}': it is the program to profile\n", s(&victim)));
        assert!(out.is_empty(), "the program ran:\n{out}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), original);

    // The same new file twice, also when spelled differently.
    let twice = dir.join("twice");
    let spelled = dir.join(".").join("twice");
    let o = profil(&["--json", s(&twice), "-o", s(&spelled), s(&victim), "20", "1"]);
    assert_eq!(o.status.code(), Some(1));
    // (-o is checked before --json, so --json's path is the one named.)
    assert_eq!(text(&o).1, format!("Profil Error: Cannot write '{}': another export names the same file\n", s(&twice)));
    assert!(text(&o).0.is_empty());
    assert!(!twice.exists());
    // And an existing one through a symbolic link.
    std::fs::write(&twice, b"x").unwrap();
    std::os::unix::fs::symlink(&twice, dir.join("link")).unwrap();
    let o = profil(&["--collapsed", s(&twice), "--json", s(&dir.join("link")), s(&victim), "20", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(&twice).unwrap(), b"x");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dash_and_dev_stdout_put_the_export_alone_on_standard_output() {
    let _s = session();
    for path in ["-", "/dev/stdout"] {
        let o = profil(&["--json", path, s(&fib_bin()), "20", "1"]);
        assert!(o.status.success(), "{}", text(&o).1);
        let (out, err) = text(&o);
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{path}: stdout is not JSON alone ({e}):\n{out}"));
        assert_eq!(v["exit"]["code"], 0);
        // The report and fib's own output went to standard error.
        assert!(err.contains("Profile Statistics") && err.contains("fib.main:"), "{path}:\n{err}");
    }
    let o = profil(&["--collapsed", "-", "-f", s(&fib_bin()), "20", "1"]);
    let (out, err) = text(&o);
    assert!(out.lines().all(|l| l.starts_with("fib;")), "{out}");
    assert!(err.contains("Flat profile"));
}

#[test]
fn a_report_reader_that_goes_away_ends_the_report_quietly() {
    let _s = session();
    let dir = scratch("exports-pipe");
    let json = dir.join("p.json");
    let mut p = Command::new(profil_bin())
        .args(["--json", s(&json), s(&fib_bin()), "20", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(p.stdout.take()); // `| head -0`: the reader is gone before anything is printed
    let o = p.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("Broken pipe") && !err.contains("Profil Error"), "{err}");
    // fib writes to the same closed pipe and dies of SIGPIPE, as it would under a shell.
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["exit"]["signal"], libc::SIGPIPE);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_without_program_samples_still_writes_a_gmon_out_gprof_reads() {
    if !installed("gprof", "binutils") {
        return;
    }
    let _s = session();
    let dir = scratch("exports-gmon-empty");
    let quick = common::compile("cc", "quick.c", &["-O1"], &dir);
    let gmon = dir.join("gmon.out");
    let o = profil(&["-f", "-o", s(&gmon), s(&quick)]);
    assert!(o.status.success(), "{}", text(&o).1);
    let g = Command::new("gprof").args(["-b", "-p"]).arg(&quick).arg(&gmon).output().unwrap();
    assert!(g.status.success(), "gprof: {}", String::from_utf8_lossy(&g.stderr));
    assert!(String::from_utf8_lossy(&g.stdout).contains("no time accumulated"));
    let _ = std::fs::remove_dir_all(&dir);
}

fn json_in(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An export through a symbolic link writes the file it names and leaves the link a link
/// (a dangling one creates its file); an existing file keeps its mode and owner.
#[test]
fn an_export_keeps_links_modes_and_owners() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let _s = session();
    let dir = scratch("exports-links");
    let (real, link) = (dir.join("real.json"), dir.join("link.json"));
    std::fs::write(&real, b"old\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let (dangling, later) = (dir.join("dangling.folded"), dir.join("later.folded"));
    std::os::unix::fs::symlink("later.folded", &dangling).unwrap();
    let o = profil(&["--json", s(&link), "--collapsed", s(&dangling), s(&fib_bin()), "20", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    assert_eq!(json_in(&real)["exit"]["code"], 0);
    assert_eq!(std::fs::metadata(&real).unwrap().mode() & 0o7777, 0o640);
    assert!(std::fs::read_to_string(&later).unwrap().starts_with("fib;"));
    assert_only(&dir, &["real.json", "link.json", "dangling.folded", "later.folded"]);
    if common::root("to make another user's file") {
        // Another user's file stays theirs.
        let theirs = dir.join("theirs.json");
        std::fs::write(&theirs, b"old\n").unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let o = profil(&["--json", s(&theirs), s(&fib_bin()), "20", "1"]);
        assert!(o.status.success(), "{}", text(&o).1);
        let m = std::fs::metadata(&theirs).unwrap();
        assert_eq!((m.uid(), m.gid()), (65534, 65534));
        assert_eq!(json_in(&theirs)["exit"]["code"], 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A link another user made in a sticky world-writable directory (`/tmp`) is not followed,
/// as the kernel's `fs.protected_symlinks` does not follow it: root's `profil --json
/// /tmp/x/evil.json` where nobody made `evil.json` a link to a root-only file is refused, the
/// file untouched, before the run. Links the rule allows (root's own, or nobody's in nobody's
/// sticky directory) are still followed.
#[test]
fn an_export_never_follows_another_users_link_in_a_sticky_directory() {
    use std::os::unix::fs::PermissionsExt;
    if !common::root("to follow another user's link as root") {
        return;
    }
    let _s = session();
    let dir = scratch("exports-protected-links");
    let secret = dir.join("secret");
    std::fs::write(&secret, b"root only\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    // A /tmp of its own: sticky, world-writable, root's.
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let as_nobody = |args: &[&str]| {
        let o = Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .args(args)
            .output()
            .expect("setpriv (util-linux)");
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let evil = shared.join("evil.json");
    as_nobody(&["ln", "-s", s(&secret), s(&evil)]);
    // A link on the way to the file is a link followed too: nobody's directory link.
    let evil_dir = shared.join("d");
    as_nobody(&["ln", "-s", s(&dir), s(&evil_dir)]);
    for (export, path) in [("--json", evil.clone()), ("--collapsed", evil_dir.join("secret"))] {
        let o = profil(&["-f", export, s(&path), s(&fib_bin()), "20", "1"]);
        assert_eq!(o.status.code(), Some(1), "{export} {}: {o:?}", path.display());
        assert_eq!(
            text(&o),
            (
                String::new(),
                format!(
                    "Profil Error: Cannot write '{}': it is a symbolic link of another user (uid 65534) in a sticky \
                     world-writable directory, which is not followed (as the kernel's fs.protected_symlinks does not)\n",
                    path.display()
                )
            )
        );
        assert_eq!(std::fs::read(&secret).unwrap(), b"root only\n");
        assert!(std::fs::symlink_metadata(&evil).unwrap().file_type().is_symlink());
    }
    // Root's own link there is followed; so is nobody's in a sticky directory nobody owns.
    let mine = shared.join("mine.json");
    std::os::unix::fs::symlink(&secret, &mine).unwrap();
    let o = profil(&["-f", "--json", s(&mine), s(&fib_bin()), "20", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(json_in(&secret)["exit"]["code"], 0);
    let theirs = dir.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = dir.join("out.json");
    let link = theirs.join("link.json");
    as_nobody(&["ln", "-s", s(&out), s(&link)]);
    let o = profil(&["-f", "--json", s(&link), s(&fib_bin()), "20", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(json_in(&out)["exit"]["code"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A writable file in a directory that takes no new file is written in place, as `>` would;
/// a file with other hard links too (replacing it would cut them off).
#[test]
fn a_file_that_cannot_be_replaced_is_written_in_place() {
    let _s = session();
    let dir = scratch("exports-in-place");
    let (json, twin) = (dir.join("p.json"), dir.join("twin.json"));
    std::fs::write(&json, b"old old old old old old\n").unwrap();
    std::fs::hard_link(&json, &twin).unwrap();
    let o = profil(&["--json", s(&json), s(&fib_bin()), "20", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(json_in(&twin)["exit"]["code"], 0, "the hard link sees the export");
    if common::root("to make another user's file") {
        // As nobody: the directory (root's, 0755) refuses new files, the file is nobody's.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.join("nobody.json");
        std::fs::write(&file, b"old\n").unwrap();
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let o = Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(profil_bin())
            .args(["--json", s(&file), s(&fib_bin()), "20", "1"])
            .output()
            .expect("setpriv (util-linux)");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(json_in(&file)["exit"]["code"], 0);
        // A file nobody may not write is refused before the run, the file untouched.
        let roots = dir.join("roots.json");
        std::fs::write(&roots, b"precious\n").unwrap();
        let o = Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(profil_bin())
            .args(["--json", s(&roots), s(&fib_bin()), "20", "1"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("Cannot write '{}': Permission denied", roots.display())), "{err}");
        assert!(!err.contains("Output of"), "refused before the run: {err}");
        assert_eq!(std::fs::read(&roots).unwrap(), b"precious\n");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory that takes new files but lets none be removed or renamed (append-only, as
/// Redox's ramfs behaves): a new export and an existing one are written in place, each with a
/// warning that names the probe file it leaves behind.
#[test]
fn an_export_into_a_directory_that_removes_nothing_is_written_in_place() {
    if !common::root("to make a directory append-only (chattr +a)") {
        return;
    }
    let _s = session();
    // On the build's file system (ext4 here): /tmp may be one without chattr.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("append-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let old = dir.join("old.json");
    std::fs::write(&old, b"old\n").unwrap();
    let chattr = |flag: &str| Command::new("chattr").arg(flag).arg(&dir).status().expect("chattr (e2fsprogs)").success();
    assert!(chattr("+a"), "chattr +a {}", dir.display());
    let new = dir.join("new.json");
    let o = profil(&["-f", "--json", s(&new), "--collapsed", s(&old), s(&fib_bin()), "20", "1"]);
    let err = text(&o).1;
    let kept = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok()).collect::<Vec<_>>();
    assert!(chattr("-a"));
    assert!(o.status.success(), "{err}");
    assert_eq!(json_in(&new)["exit"]["code"], 0);
    assert!(std::fs::read_to_string(&old).unwrap().contains(";"), "the folded stacks replaced 'old'");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("profil: warning:")).collect();
    assert_eq!(warnings.len(), 2, "{err}");
    for (file, name) in [(&old, ".old.json."), (&new, ".new.json.")] {
        let probe = kept.iter().find(|n| n.starts_with(name)).expect("the probe stays");
        let said = format!(
            "profil: warning: {} is written in place: its directory lets no file be removed (nor {}, made to find that out)",
            file.display(),
            dir.join(probe).display()
        );
        assert!(warnings.contains(&said.as_str()), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FIFO is written when the run is over, never probed before: a reader waiting on it gets
/// the export, not an early end of file. With no reader, the wait for one ends on SIGTERM.
#[test]
fn an_export_to_a_fifo_reaches_its_reader_and_its_wait_can_be_interrupted() {
    let _s = session();
    let dir = scratch("exports-fifo");
    let fifo = dir.join("ff");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let mut reader = Command::new("cat").arg(&fifo).stdout(Stdio::piped()).spawn().unwrap();
    let o = profil(&["--json", s(&fifo), s(&fib_bin()), "20", "1"]);
    if !o.status.success() {
        let _ = reader.kill(); // not left waiting on the FIFO
        panic!("{}", text(&o).1);
    }
    let got = reader.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(v["exit"]["code"], 0);

    // No reader: profil waits for one after the run, and SIGTERM ends the wait.
    let mut p = common::with_default_signals(&mut Command::new(profil_bin()))
        .args(["--report", "-", "--json", s(&fifo), s(&fib_bin()), "20", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let mut report = String::new();
    use std::io::Read;
    // The report is written before the export: once it is complete, profil waits on the FIFO.
    let mut out = p.stdout.take().unwrap();
    let mut buf = [0u8; 4096];
    while !report.contains("exited with status") {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "report ended early: {report}");
        report.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    // SAFETY: our child.
    unsafe { libc::kill(p.id() as i32, libc::SIGTERM) };
    let o = p.wait_with_output().unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("Cannot write '{}': interrupted while waiting for a reader of the FIFO", fifo.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Any number of exports may go to a character device such as /dev/null.
#[test]
fn exports_may_share_dev_null() {
    let _s = session();
    let o = profil(&["--json", "/dev/null", "--svg", "/dev/null", "-o", "/dev/null", s(&fib_bin()), "20", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
}

/// A binary export is not written to a terminal (gzip's rule), before the program runs.
#[test]
fn a_binary_export_is_not_written_to_a_terminal() {
    let _s = session();
    let terminal = common::Terminal::new();
    for export in [["--pprof", "-"], ["-o", "-"]] {
        let o = Command::new(profil_bin())
            .args(export)
            .arg(fib_bin())
            .args(["20", "1"])
            .stdout(terminal.stdio())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{export:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("Cannot write '-': standard output is a terminal, and this export is binary"), "{err}");
        assert!(!err.contains("Output of"), "refused before the run: {err}");
    }
}
