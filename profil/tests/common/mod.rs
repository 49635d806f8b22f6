//! Helpers shared by the end-to-end tests: running profil, reading its report.
//!
//! Runs that take the machine-wide session are serialised with [`session`] within a test
//! binary (cargo runs the test binaries one after another).

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use prof_objects::elf::read_program;

pub static SESSION: Mutex<()> = Mutex::new(());

pub fn session() -> MutexGuard<'static, ()> {
    SESSION.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn profil_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_profil"))
}

/// `fib` is a sibling package; `cargo test --workspace` builds it next to profil.
pub fn fib_bin() -> PathBuf {
    let p = profil_bin().with_file_name("fib");
    assert!(p.exists(), "{} not built: run the tests with `cargo test --workspace`", p.display());
    p
}

/// profil with `args`, its report on standard output (`--report -`), apart from its warnings
/// on standard error; where the arguments send an export to standard output or name a report
/// place, they are given as they are. The default place (standard error) has tests of its own.
pub fn profil(args: &[&str]) -> Output {
    let own_place = args.iter().any(|&a| a == "--report" || a == "-" || a == "/dev/stdout");
    let report: &[&str] = if own_place { &[] } else { &["--report", "-"] };
    Command::new(profil_bin()).args(report).args(args).output().expect("run profil")
}

/// Wait until a profil holds the session lock `name` (its abstract socket `@NAME` is bound),
/// 10 s at most: `what` names that profil in the failure.
pub fn wait_for_lock(name: &str, what: &str) {
    let lock = format!("@{name}");
    let t = std::time::Instant::now();
    while !std::fs::read_to_string("/proc/net/unix").unwrap().lines().any(|l| l.ends_with(&lock)) {
        assert!(t.elapsed().as_secs() < 10, "{what} never took its session ({lock})");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Wait until a profil holds the tests' session lock: `.cargo/config.toml`'s PROFD_SESSION, or
/// the one the caller's environment set.
pub fn wait_for_session(what: &str) {
    wait_for_lock(&String::from_utf8(prof_samplers::perf_event::session_lock_name().expect("the suite names its session (PROFD_SESSION)")).unwrap(), what);
}

/// Everything the program at a terminal's follower writes, read from its `leader` in a thread
/// of its own until the follower's every descriptor is closed.
pub fn read_screen(mut leader: std::fs::File) -> std::thread::JoinHandle<String> {
    use std::io::Read;
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        // The leader reads EIO once every descriptor of the follower is closed.
        while let Ok(n) = leader.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&all).into_owned()
    })
}

pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The value after `key` on the line that starts with it.
pub fn field(out: &str, key: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no line starting with {key:?} in:\n{out}"))
        .trim()
        .to_string()
}

pub fn num(s: &str) -> u64 {
    profil::cli::parse_number(s).unwrap_or_else(|| panic!("not a number: {s:?}"))
}

/// (user ticks, ticks in bins) from "Ticks: U user (B in bins), ...".
pub fn ticks(out: &str) -> (u64, u64) {
    let l = field(out, "Ticks:");
    let w: Vec<&str> = l.split([' ', '(']).filter(|s| !s.is_empty()).collect();
    (num(w[0]), num(w[2]))
}

/// The samples the flat profile holds, and how many of them are the kernel's (named where the
/// kernel's symbols show its addresses: root, by default), from its heading: "Flat profile (N
/// user ticks):", or "Flat profile (N ticks, K of them in the kernel):".
pub fn flat_ticks(out: &str) -> (u64, u64) {
    let l = out.lines().find(|l| l.starts_with("Flat profile")).unwrap_or_else(|| panic!("no flat profile in:\n{out}"));
    let inside = l.rsplit_once(" (").unwrap_or_else(|| panic!("{l}")).1;
    let all = num(inside.split_whitespace().next().unwrap());
    let kernel = inside.split_once(" ticks, ").map_or(0, |(_, k)| num(k.split_whitespace().next().unwrap()));
    (all, kernel)
}

/// The report's "Call stacks: A of B user samples, C truncated" (or "… of B samples (user and
/// kernel), …", where the kernel's samples are named): (A, B, C).
pub fn call_stacks(out: &str) -> (u64, u64, u64) {
    let line = field(out, "Call stacks:");
    let (head, tail) = line.split_once(", ").unwrap_or_else(|| panic!("{line}"));
    let words: Vec<&str> = head.split_whitespace().collect();
    (num(words[0]), num(words[2]), num(tail.split_whitespace().next().unwrap()))
}

/// Per-function shares in percent from profil's flat profile.
pub fn flat_shares(out: &str) -> Vec<(String, f64)> {
    flat_rows(out).into_iter().map(|(_, pct, name)| (name, pct)).collect()
}

/// The share of the user samples (the kernel's rows left out) that the row `name` has: what a
/// program that spins holds however much a busy machine's kernel takes of its ticks.
pub fn user_share(out: &str, name: &str) -> f64 {
    let rows = flat_rows(out);
    let user: u64 = rows.iter().filter(|r| !r.2.ends_with(" [kernel]") && r.2 != "[kernel]").map(|r| r.0).sum();
    let own = rows.iter().find(|r| r.2 == name).map_or(0, |r| r.0);
    100.0 * own as f64 / user.max(1) as f64
}

pub fn share(shares: &[(String, f64)], name: &str) -> f64 {
    shares.iter().find(|s| s.0 == name).map_or(0.0, |s| s.1)
}

/// The addresses fib prints about itself.
pub fn printed_address(out: &str, name: &str) -> u64 {
    num(&field(out, &format!("fib.{name}:")))
}

pub fn symbol(prog: &Path, name: &str) -> u64 {
    read_program(prog, &Default::default()).unwrap().symbols().by_name(name).unwrap_or_else(|| panic!("no symbol {name}")).addr
}

/// Rows of profil's flat profile: (samples, percent, name).
pub fn flat_rows(out: &str) -> Vec<(u64, f64, String)> {
    let start = out.find("Flat profile").expect("flat profile");
    // With call stacks a "total %" column comes before the name.
    let header = out[start..].lines().nth(1).unwrap_or("");
    let name_at = if header.contains("total %") { 4 } else { 3 };
    table_rows(out, "Flat profile")
        .into_iter()
        .map(|w| (w[0].parse().unwrap(), w[1].parse().unwrap(), w[name_at..].join(" ")))
        .collect()
}

/// The rows of the table whose heading line starts with `heading` (after it, a line of column
/// names), each split into words, up to the first empty line.
pub fn table_rows<'a>(out: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
    let start = out.find(heading).unwrap_or_else(|| panic!("no {heading:?} in:\n{out}"));
    out[start..].lines().skip(2).take_while(|l| !l.trim().is_empty()).map(|l| l.split_whitespace().collect()).collect()
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("profil-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Start `cmd` with the signal dispositions an interactive shell gives a job: SIGINT, SIGQUIT,
/// SIGHUP and SIGTERM at their defaults, whatever the test runner inherited (a runner started
/// with `nohup`, or in a script's background, ignores some of them, and its children would too).
/// A process a test started, killed and reaped when the test ends, passed or failed: a
/// target left running would load the machine for the tests after it.
pub struct Reaped(Option<std::process::Child>);

impl Reaped {
    pub fn new(child: std::process::Child) -> Reaped {
        Reaped(Some(child))
    }

    pub fn child(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("a child until it is let go")
    }

    /// The child, no longer killed at the end.
    pub fn let_go(mut self) -> std::process::Child {
        self.0.take().expect("a child until it is let go")
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn with_default_signals(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}

/// A check that cannot run here (its tool is missing, say). Under CI (`CI=true`), whose
/// `.ci/run` installs every tool the tests use, that is a failure; elsewhere the check is
/// skipped, and says so.
pub fn skip(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("this check cannot run, and CI=true: {why}");
    }
    eprintln!("skipped: {why}");
}

/// Is `tool` on PATH? If not, the check is skipped ([`skip`]; CI installs it from `package`).
pub fn installed(tool: &str, package: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        skip(&format!("{tool} is not installed (CI installs it from {package})"));
    }
    found
}

/// Is this test run by root? If not, the check is skipped ([`skip`]: CI runs as root).
pub fn root(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        skip(&format!("needs root {what}"));
    }
    root
}

/// The CPU time (user and system) process `pid` has used so far, in milliseconds, from
/// `/proc/PID/stat` (10 ms steps); `None` once it is gone.
pub fn cpu_ms(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let (user, system): (u64, u64) = (rest.get(11)?.parse().ok()?, rest.get(12)?.parse().ok()?);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some((user + system) * 1000 / hz)
}

/// Wait until process `pid` has used `ms` of CPU time, however busy the machine is (tests must
/// not take wall time for CPU time). Panics if that takes more than a minute or it ends first.
pub fn wait_for_cpu(pid: u32, ms: u64) {
    let t = std::time::Instant::now();
    loop {
        let used = cpu_ms(pid).unwrap_or_else(|| panic!("process {pid} ended before using {ms} ms of CPU"));
        if used >= ms {
            return;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "process {pid} used {used} of {ms} ms of CPU in a minute");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The pid of process `pid`'s first child (profil's: the profiled program), waiting for it.
pub fn child_of(pid: u32) -> u32 {
    let t = std::time::Instant::now();
    loop {
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(c) = children.split_whitespace().next() {
            return c.parse().unwrap();
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(20), "process {pid} started no child");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Compile one of `tests/data/` with `compiler` and `flags` into `dir`.
pub fn compile(compiler: &str, source: &str, flags: &[&str], dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(source);
    let exe = dir.join(source.split('.').next().unwrap());
    let ok = Command::new(compiler).args(flags).arg("-o").arg(&exe).arg(&src).status();
    assert!(ok.map(|s| s.success()).unwrap_or(false), "{compiler} failed for {source}");
    exe
}

/// A pseudo-terminal for tests that need one: the leader (the "screen") and the follower (the
/// terminal a program sees). Neither end leaks into programs started: an open leader there
/// would keep the terminal up.
pub struct Terminal {
    pub leader: std::os::fd::OwnedFd,
    pub follower: std::os::fd::OwnedFd,
}

impl Terminal {
    pub fn new() -> Terminal {
        use std::os::fd::FromRawFd;
        let (mut leader, mut follower) = (0, 0);
        // SAFETY: openpty writes the two descriptors; they are ours to own.
        let r = unsafe { libc::openpty(&mut leader, &mut follower, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(r, 0, "openpty");
        for fd in [leader, follower] {
            // SAFETY: our own descriptors.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        // SAFETY: fresh descriptors, owned from here on.
        unsafe { Terminal { leader: std::os::fd::OwnedFd::from_raw_fd(leader), follower: std::os::fd::OwnedFd::from_raw_fd(follower) } }
    }

    /// The terminal as a program's standard stream.
    pub fn stdio(&self) -> std::process::Stdio {
        std::process::Stdio::from(self.follower.try_clone().unwrap())
    }

    /// Start `cmd` with this terminal as its standard streams and controlling terminal (a
    /// session of its own, as a login shell has), and keep only the leader: the terminal then
    /// hangs up when the leader is closed or the program's side is all gone.
    pub fn spawn(self, mut cmd: std::process::Command) -> (std::process::Child, std::fs::File) {
        use std::os::unix::process::CommandExt;
        cmd.stdin(self.stdio()).stdout(self.stdio()).stderr(self.stdio());
        with_default_signals(&mut cmd);
        // SAFETY: async-signal-safe calls only.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        // The follower is the child's alone now (the Command held copies of it too).
        drop(cmd);
        (child, std::fs::File::from(self.leader))
    }
}

/// `waits` (a sibling package, like fib): a program with known waits.
pub fn waits_bin() -> PathBuf {
    let p = profil_bin().with_file_name("waits");
    assert!(p.exists(), "{} not built: run the tests with `cargo test --workspace`", p.display());
    p
}

/// A saved run (`--save`) as its JSON document.
pub fn saved_run_json(file: &Path) -> serde_json::Value {
    let mut json = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap()), &mut json).unwrap();
    serde_json::from_str(&json).unwrap()
}

/// A saved run's stacks moved where versions 1 and 2 kept them: inside the profile, each
/// frame an object (`{"Program": A}`), from version 3's rows beside it.
pub fn stacks_inside_the_profile(doc: &mut serde_json::Value) {
    let Some(rows) = doc.as_object_mut().unwrap().remove("call_stacks") else { return };
    let kinds = ["Program", "Foreign", "Kernel"];
    let stacks: Vec<serde_json::Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let flat = row[2].as_array().unwrap();
            let frames: Vec<serde_json::Value> =
                flat.chunks(2).map(|f| serde_json::json!({ kinds[f[0].as_u64().unwrap() as usize]: f[1] })).collect();
            serde_json::json!({"frames": frames, "truncated": row[1], "count": row[0]})
        })
        .collect();
    doc["run"]["profile"]["stacks"] = stacks.into();
}

/// Write `doc` as a saved run at `file`, gzipped as profil saves it.
pub fn write_saved_run(file: &Path, doc: &serde_json::Value) {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(file).unwrap(), flate2::Compression::default());
    gz.write_all(serde_json::to_string(doc).unwrap().as_bytes()).unwrap();
    gz.finish().unwrap();
}

/// The Firefox Profiler's own command-line client (`@firefox-devtools/profiler-cli` on npm,
/// installed by `.ci/run` into ~/.cache/profil-ci/profiler-cli, or PROFILER_CLI), the
/// profiler's code run offline.
pub fn profiler_cli() -> Option<std::path::PathBuf> {
    let cli = match std::env::var_os("PROFILER_CLI") {
        Some(c) => std::path::PathBuf::from(c),
        None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cache/profil-ci/profiler-cli/node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js"),
    };
    cli.is_file().then_some(cli)
}

/// Its answer to `args` in session `session`, as JSON.
pub fn ask(cli: &Path, session: &str, args: &[&str]) -> serde_json::Value {
    let o = Command::new("node").arg(cli).args(args).args(["--session", session, "--json"]).output().unwrap();
    assert!(o.status.success(), "profiler-cli {args:?}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("profiler-cli {args:?}: {e}: {}", String::from_utf8_lossy(&o.stdout)))
}
