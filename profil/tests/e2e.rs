//! End-to-end: the real `profil` binary profiling the real `fib` through perf_event (Linux).
//!
//! The spec's "What to turn in" runs are here, adapted to fib's own addresses (a Rust binary's
//! text starts far above the Minix 0x50).  Runs that take the machine-wide session are
//! serialised with `SESSION`, except where a test overlaps two on purpose.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use common::*;
use prof_objects::elf::read_program;

#[test]
fn whole_text_profile_of_fib() {
    let _s = session();
    let fib = fib_bin();
    let o = profil(&[fib.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.starts_with(&format!("************************* Output of '{}' ****", fib.display())));
    assert!(out.contains("fib(38) = 63245986.000000\n"));
    assert!(out.contains("************************* Profile Statistics ****************************\n"));
    // The addresses fib prints are link-time ones: the symbol table's.
    for f in ["main", "fib", "loop", "overflow"] {
        assert_eq!(printed_address(&out, f), symbol(&fib, f), "fib.{f}");
    }
    assert_eq!(printed_address(&out, "printf"), symbol(&fib, "fib_printf"));
    // The whole text segment, split into the fewest bins of at most 1024.
    let img = read_program(&fib, &Default::default()).unwrap();
    let size = img.layout.text.size();
    assert_eq!(num(field(&out, "Profiled Text Size =").split(' ').next().unwrap()), size);
    assert_eq!(num(&field(&out, "Bin Size:")), size.div_ceil(1024));
    assert_eq!(num(&field(&out, "Bins used:")), size.div_ceil(size.div_ceil(1024)));
    let total = num(&field(&out, "Total ticks in all bins:"));
    assert!(total >= 500, "only {total} ticks");
    let (user, in_bins) = ticks(&out);
    assert_eq!(in_bins, total);
    assert!(in_bins as f64 >= 0.95 * user as f64, "{in_bins} of {user} ticks in fib's text");
    assert!(out.contains(", 0 lost\n"), "samples lost:\n{out}");
    assert!(out.contains("Session ended by: exit\n"));
    assert!(out.contains(&format!("'{}' exited with status 0\n", fib.display())));
    // The flat profile follows the histogram.
    assert!(out.find("Percentage time in shown intervals").unwrap() < out.find("Flat profile (").unwrap());
    let shares = flat_shares(&out);
    let top3: f64 = ["fib", "loop", "overflow"].iter().map(|f| share(&shares, f)).sum();
    assert!(top3 >= 95.0, "fib/loop/overflow hold only {top3:.1}%:\n{out}");
    assert!(share(&shares, "overflow") > share(&shares, "fib"));
    assert!(share(&shares, "fib") > share(&shares, "loop"));
}

#[test]
fn ranged_run_holds_the_hot_functions() {
    let _s = session();
    let fib = fib_bin();
    let addrs: Vec<u64> = ["fib", "loop", "overflow"].iter().map(|f| symbol(&fib, f)).collect();
    let lo = *addrs.iter().min().unwrap();
    let hi = *addrs.iter().max().unwrap() + 0x400;
    let o = profil(&["-s", &format!("{lo:#x}"), "-e", &format!("{hi:#x}"), "-i", "64", fib.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert_eq!(
        field(&out, "start_addr ="),
        format!("{lo:#x}, end_addr = {hi:#x}, nr_bins = {}, bin_sz = 64", (hi - lo).div_ceil(64))
    );
    let (user, in_bins) = ticks(&out);
    assert!(in_bins as f64 >= 0.8 * user as f64, "only {in_bins} of {user} ticks in the range");
    // Every histogram line lies inside the range, on a 64-byte bin boundary.
    for l in out.lines().filter(|l| l.contains("%) : ")) {
        let (a, b) = l.split_once(' ').unwrap().0.split_once('-').unwrap();
        let (a, b) = (u64::from_str_radix(a, 16).unwrap(), u64::from_str_radix(b, 16).unwrap());
        assert!(lo <= a && b < hi && (a - lo).is_multiple_of(64) && (b + 1 - a == 64 || b + 1 == hi), "{l}");
    }
}

/// profil's and perf's per-function shares of the same run of fib: perf records profil and
/// its child, and its samples of the `fib` command are compared with profil's flat profile.
#[test]
fn shares_agree_with_perf_record() {
    let _s = session();
    let fib = fib_bin();
    let dir = std::env::temp_dir().join(format!("profil-perf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("perf.data");
    let perf_ok = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock:u", "-F", "1000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(profil_bin())
        .arg(&fib)
        .env("FIB_TIMINGS", "1")
        .output();
    let (out, err, perf_shares) = match perf_ok {
        Ok(o) if o.status.success() => {
            let (out, err) = text(&o);
            let rep = Command::new("perf")
                .args(["report", "--stdio", "--sort", "sym", "--comm", "fib", "-i"])
                .arg(&data)
                .output()
                .unwrap();
            let rep = String::from_utf8_lossy(&rep.stdout).into_owned();
            let shares: Vec<(String, f64)> = rep
                .lines()
                .filter(|l| !l.starts_with('#') && l.contains("[.] "))
                .map(|l| {
                    let pct = l.split('%').next().unwrap().trim().parse().unwrap();
                    (l.split("[.] ").nth(1).unwrap().trim().to_string(), pct)
                })
                .collect();
            (out, err, Some(shares))
        }
        _ => {
            // No usable perf here: fall back to fib's own phase timings of the same run (under
            // CI, which installs perf, that is a failure).
            let why = match &perf_ok {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            common::skip(&format!("perf cannot record here ({}): comparing with fib's phase timings instead", why.trim()));
            let o = Command::new(profil_bin()).arg(&fib).env("FIB_TIMINGS", "1").output().unwrap();
            let (out, err) = text(&o);
            (out, err, None)
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    // The report is on standard error (beside fib's timings), fib's own output on stdout.
    assert!(out.contains("fib(38) = ") && !out.contains("Flat profile"), "{out}");
    let ours = flat_shares(&err);
    let reference = match perf_shares {
        Some(s) => s,
        None => {
            let t: Vec<(String, f64)> = ["fib", "loop", "overflow"]
                .iter()
                .map(|f| (f.to_string(), field(&err, &format!("fib.time.{f}:")).parse::<f64>().unwrap()))
                .collect();
            let sum: f64 = t.iter().map(|x| x.1).sum();
            t.into_iter().map(|(n, v)| (n, v * 100.0 / sum)).collect()
        }
    };
    for f in ["fib", "loop", "overflow"] {
        let (a, b) = (share(&ours, f), share(&reference, f));
        assert!((a - b).abs() <= 4.0, "{f}: profil {a:.2}% vs reference {b:.2}%\n{err}\n{reference:?}");
    }
}

/// The spec's message, then a line that says what the range must be for fib.
fn address_range_invalid() -> String {
    let text = prof_objects::elf::read_program(&fib_bin(), &Default::default()).unwrap().layout.text;
    format!(
        "Profil Error: Address range invalid\n  The text segment is {:#x}-{:#x}: -s and -e must lie within it, -s below -e (-e is exclusive).\n",
        text.start, text.end
    )
}

#[test]
fn start_above_end_is_address_range_invalid() {
    // profil -e 0x20 -s 0x300 fib
    let o = profil(&["-e", "0x20", "-s", "0x300", fib_bin().to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(err, address_range_invalid());
    assert_eq!(o.status.code(), Some(1));
    // The program never ran: no output banner, no report.
    assert!(out.is_empty(), "{out}");
}

#[test]
fn range_outside_the_text_is_address_range_invalid() {
    // profil -i 512 -s 0x200 -e 0 fib: 0x200 is below a Rust program's text.
    let o = profil(&["-i", "512", "-s", "0x200", "-e", "0", fib_bin().to_str().unwrap()]);
    assert_eq!(text(&o).1, address_range_invalid());
    // An interval below the minimum bin size would need more than 1024 bins.
    let o = profil(&["-i", "1", fib_bin().to_str().unwrap()]);
    let t = prof_objects::elf::read_program(&fib_bin(), &Default::default()).unwrap().layout.text;
    let min = (t.end - t.start).div_ceil(1024);
    assert_eq!(
        text(&o).1,
        format!(
            "Profil Error: Address range invalid\n  -i 0x1 is below the smallest bin size for {:#x}-{:#x}: {min} ({min:#x}), as at most 1024 bins are kept.\n",
            t.start, t.end
        )
    );
    assert!(text(&o).0.is_empty());
}

#[test]
fn a_source_file_is_not_a_program() {
    // profil fib.c
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fib.c");
    let o = profil(&[src]);
    let (out, err) = text(&o);
    assert_eq!(err, format!("Profil Error: '{src}' is not an ELF executable\n"));
    assert_eq!(o.status.code(), Some(1));
    assert!(out.is_empty());
}

#[test]
fn missing_and_unexecutable_programs() {
    let o = profil(&["/no/such/program"]);
    assert_eq!(text(&o).1, "Profil Error: Cannot execute '/no/such/program': No such file or directory\n");
    assert_eq!(o.status.code(), Some(1));
    // Readable but not executable: found by the exec in the child (the 0xCC protocol).
    let copy = std::env::temp_dir().join(format!("profil-noexec-{}", std::process::id()));
    std::fs::copy(fib_bin(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let _s = session();
    let o = profil(&[copy.to_str().unwrap()]);
    std::fs::remove_file(&copy).unwrap();
    let (out, err) = text(&o);
    assert_eq!(err, format!("Profil Error: Cannot execute '{}': Permission denied\n", copy.display()));
    assert_eq!(o.status.code(), Some(1));
    assert!(!out.contains("Profile Statistics"));
}

#[test]
fn usage_errors_exit_2() {
    let o = profil(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.starts_with("profil: no program to profile\nUsage: profil"));
    let o = profil(&["-s", "12zz", "fib"]);
    assert_eq!(o.status.code(), Some(2));
    let o = profil(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).0.starts_with("Usage: profil [-s startaddr] [-e endaddr] [-i interval]"));
}

/// Two profils at once: the second is refused, the first finishes unaffected.
/// Sessions under different lock names (PROFD_SESSION) do not exclude each other: a user's
/// profil does not make the test suite busy (the suite has a name of its own,
/// `.cargo/config.toml`).
#[test]
fn a_session_of_another_name_does_not_make_profil_busy() {
    let _s = session();
    let fib = fib_bin();
    let mut first = Command::new(profil_bin())
        .env("PROFD_SESSION", format!("profd.session.other.{}", std::process::id()))
        .arg(&fib)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_lock(&format!("profd.session.other.{}", std::process::id()), "the first profil");
    let o = profil(&["-f", fib.to_str().unwrap(), "25", "10"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    first.kill().unwrap();
    first.wait().unwrap();
}

/// On Linux nothing is shared between profils: two runs that name no session
/// (PROFD_SESSION unset) run at once, neither busy.
#[test]
fn runs_that_name_no_session_do_not_block_each_other() {
    let _s = session();
    let fib = fib_bin();
    // The first profiles a shell that waits on its standard input: it holds its run until
    // the test closes that, however slow the machine.
    let mut first = Reaped::new(
        Command::new(profil_bin())
            .env_remove("PROFD_SESSION")
            .args(["-f", "/bin/sh", "-c", "read line || :"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let shell = child_of(first.child().id());
    // Its session is running once the program it profiles has exec'd the shell.
    let t = std::time::Instant::now();
    while std::fs::read_link(format!("/proc/{shell}/exe")).map_or(true, |e| !e.to_string_lossy().contains("sh")) {
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "the first profil's shell never ran");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let second = Command::new(profil_bin()).env_remove("PROFD_SESSION").args(["-f", fib.to_str().unwrap(), "25", "10"]).output().unwrap();
    let (_, err) = text(&second);
    assert_eq!(second.status.code(), Some(0), "{err}");
    assert!(err.contains("Flat profile ("), "{err}");
    assert!(first.child().try_wait().unwrap().is_none(), "the first run still holds its shell");
    drop(first.child().stdin.take());
    let first = first.let_go().wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
}

#[test]
fn a_second_profil_is_busy() {
    let _s = session();
    let fib = fib_bin();
    let first = Command::new(profil_bin())
        .args(["--report", "-", "-i", "1024"])
        .arg(&fib)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first holds the machine-wide session (its abstract socket is bound).
    wait_for_session("the first profil");
    let o = profil(&["-i", "1024", fib.to_str().unwrap()]);
    let (out, err) = text(&o);
    // It says who holds the session: the first profil, by pid, user and command line.
    let (head, held) = err.split_once('\n').unwrap();
    assert_eq!(head, "Profil Error: Already profiling another process");
    assert!(held.starts_with(&format!("  Held by pid {} (user ", first.id())), "{err}");
    assert!(held.ends_with(&format!("): {} --report - -i 1024 {}\n", profil_bin().display(), fib.display())), "{err}");
    assert_eq!(o.status.code(), Some(1));
    assert!(!out.contains("fib(38)"), "the second fib must not run");
    let first = first.wait_with_output().unwrap();
    let (out, err) = text(&first);
    assert_eq!(first.status.code(), Some(0), "{out}\n{err}");
    assert!(num(&field(&out, "Total ticks in all bins:")) >= 500);
}

/// profil -i <larger than the range>: one bin holds the whole range.
#[test]
fn interval_larger_than_the_range() {
    let _s = session();
    let fib = fib_bin();
    let lo = symbol(&fib, "overflow");
    let o = profil(&["-s", &format!("{lo:#x}"), "-e", &format!("{:#x}", lo + 0x100), "-i", "0x1000", fib.to_str().unwrap(), "20", "10"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(field(&out, "Bin Size:"), "4096");
    assert_eq!(field(&out, "Bins used:"), "1");
    assert_eq!(field(&out, "Last bin represents last"), "256 bytes");
    // overflow's loop is all in that one bin.
    assert!(out.contains(&format!("{lo:x}-{:x} (100.00%)", lo + 0xff)), "{out}");
}

/// profil -s <x> -e 0: from x to the end of the text segment.
#[test]
fn end_zero_means_end_of_text() {
    let _s = session();
    let fib = fib_bin();
    let text_end = read_program(&fib, &Default::default()).unwrap().layout.text.end;
    let lo = symbol(&fib, "loop");
    let o = profil(&["-i", "512", "-s", &format!("{lo:#x}"), "-e", "0", fib.to_str().unwrap(), "20", "10"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let n = (text_end - lo).div_ceil(512);
    assert_eq!(field(&out, "start_addr ="), format!("{lo:#x}, end_addr = {text_end:#x}, nr_bins = {n}, bin_sz = 512"));
}

/// profil -s 0x50 -i 0x1a -e 0x247 fib, with fib's addresses: from fib to main.
#[test]
fn explicit_range_fib_to_main_interval_0x1a() {
    let _s = session();
    let fib = fib_bin();
    let (lo, hi) = (symbol(&fib, "fib"), symbol(&fib, "main"));
    for (interval, bin) in [("0x1a", 26u64), ("0x49", 73)] {
        let o = profil(&["-s", &format!("{lo:#x}"), "-i", interval, "-e", &format!("{hi:#x}"), fib.to_str().unwrap(), "30", "10"]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let size = hi - lo;
        let n = size.div_ceil(bin);
        assert_eq!(field(&out, "Profiled Text Size ="), format!("{size} = {size:#x}"));
        assert_eq!(field(&out, "Bins used:"), n.to_string());
        assert_eq!(field(&out, "Last bin represents last"), format!("{} bytes", size - (n - 1) * bin));
        assert_eq!(field(&out, "start_addr ="), format!("{lo:#x}, end_addr = {hi:#x}, nr_bins = {n}, bin_sz = {bin}"));
    }
}

/// profil -i 256 -e <addr> fib: the default start is the start of the text segment.
#[test]
fn default_start_is_start_of_text() {
    let _s = session();
    let fib = fib_bin();
    let text_start = read_program(&fib, &Default::default()).unwrap().layout.text.start;
    let hi = symbol(&fib, "main");
    let o = profil(&["-i", "256", "-e", &format!("{hi:#x}"), fib.to_str().unwrap(), "20", "10"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let n = (hi - text_start).div_ceil(256);
    assert_eq!(field(&out, "start_addr ="), format!("{text_start:#x}, end_addr = {hi:#x}, nr_bins = {n}, bin_sz = 256"));
}

/// The program's arguments pass through, and its exit status becomes profil's.
#[test]
fn arguments_and_exit_status_pass_through() {
    let _s = session();
    let o = profil(&["/bin/sh", "-c", "echo hello from sh; exit 3"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(out.contains("\nhello from sh\n"));
    assert!(out.contains("'/bin/sh' exited with status 3\n"));
    let o = profil(&["/bin/sh", "-c", "kill -9 $$"]);
    // profil ends as the program did (as strace does), after its report.
    assert_eq!(o.status.signal(), Some(9));
    assert!(text(&o).0.contains("'/bin/sh' was killed by SIGKILL (9)\n"));
}

/// The spec's C program, as a non-PIE and a PIE executable: the load base is found, so both
/// profiles name fib, loop and overflow exactly.
#[test]
fn c_fib_pie_and_non_pie() {
    let _s = session();
    let dir = std::env::temp_dir().join(format!("profil-cfib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fib.c");
    for (name, flag) in [("fib-nopie", "-no-pie"), ("fib-pie", "-pie")] {
        let exe = dir.join(name);
        let cc = Command::new("cc").args(["-O0", "-fPIE", flag, "-o"]).arg(&exe).arg(src).status();
        assert!(cc.map(|s| s.success()).unwrap_or(false), "cc failed for {name}");
        assert_eq!(read_program(&exe, &Default::default()).unwrap().pie, flag == "-pie");
        let o = profil(&[exe.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let shares = flat_shares(&out);
        let top3: f64 = ["fib", "loop", "overflow"].iter().map(|f| share(&shares, f)).sum();
        assert!(top3 >= 95.0, "{name}: fib/loop/overflow hold only {top3:.1}%:\n{out}");
        let (user, in_bins) = ticks(&out);
        assert!(in_bins as f64 >= 0.95 * user as f64, "{name}: {in_bins} of {user} in bins");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
