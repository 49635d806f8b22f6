//! End-to-end, beyond Minix: the flat profile alone (`-f`), stripped programs, functions in
//! shared libraries, C++ names, the instruction view (`--asm`), user vs kernel ticks, every
//! thread, and the exports fed to their real consumers (gprof, inferno, serde_json).

#![cfg(target_os = "linux")]

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use common::*;
use prof_objects::elf::read_program;

/// The entry of the flat profile called `name`: (samples, percent).
fn row(rows: &[(u64, f64, String)], name: &str) -> Option<(u64, f64)> {
    rows.iter().find(|r| r.2 == name).map(|r| (r.0, r.1))
}

/// Every row is counted once: the samples add up to the user ticks and the kernel's named ones
/// (where the kernel's symbols show: root, by default), most first, to 100 %.
fn assert_complete(out: &str, rows: &[(u64, f64, String)]) {
    let (user, _) = ticks(out);
    let (all, kernel) = flat_ticks(out);
    assert_eq!(all, user + kernel, "{out}");
    assert_eq!(rows.iter().map(|r| r.0).sum::<u64>(), all, "flat profile does not add up:\n{out}");
    assert_eq!(rows.iter().filter(|r| r.2.ends_with("[kernel]")).map(|r| r.0).sum::<u64>(), kernel, "{out}");
    assert!(rows.windows(2).all(|w| w[0].0 >= w[1].0), "not sorted by samples:\n{out}");
    let heading = match kernel {
        0 => format!("{user} user ticks):"),
        k => format!("{all} ticks, {k} of them in the kernel):"),
    };
    assert_eq!(field(out, "Flat profile ("), heading);
}

#[test]
fn flat_profile_alone_with_f() {
    let _s = session();
    let fib = fib_bin();
    let o = profil(&["-f", fib.to_str().unwrap(), "30", "300"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("fib(30) = 1346269.000000\n"));
    for histogram_line in ["maximum bins", "Bin Size:", "Total ticks in all bins", "Percentage time in shown"] {
        assert!(!out.contains(histogram_line), "-f printed the histogram ({histogram_line}):\n{out}");
    }
    let rows = flat_rows(&out);
    assert_complete(&out, &rows);
    assert_eq!(rows[0].2, "overflow", "{out}");
    assert!(rows[0].1 >= 90.0, "{out}");
    assert!(out.contains("\nTicks: ") && out.contains("Session ended by: exit\n"));
}

/// `--percent-limit 2`: the functions with 2 % of the samples or more, the rest in one line.
#[test]
fn percent_limit_folds_the_small_functions() {
    let _s = session();
    let fib = fib_bin();
    let o = profil(&["-f", "--percent-limit", "2", fib.to_str().unwrap(), "30", "300"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = flat_rows(&out);
    let (last, named) = rows.split_last().expect("rows");
    assert!(named.iter().all(|r| r.1 >= 2.0), "{out}");
    assert!(last.1 >= 2.0 || last.2.contains(" more function"), "{out}");
    let total: f64 = rows.iter().map(|r| r.1).sum();
    assert!((total - 100.0).abs() < 0.05, "{out}");
    let bad = profil(&["-f", "--percent-limit", "101", fib.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad).1);
    assert!(text(&bad).1.contains("invalid share '101' for --percent-limit"), "{}", text(&bad).1);
}

/// A stripped copy of fib: no symbols, so functions are named by the address ranges the
/// unwind tables give — exactly the unstripped symbols' ranges.
#[test]
fn stripped_program_is_named_by_address_ranges() {
    let fib = fib_bin();
    let dir = scratch("strip");
    let stripped = dir.join("fib");
    let ok = Command::new("strip").arg("-o").arg(&stripped).arg(&fib).status().unwrap();
    assert!(ok.success());
    assert!(read_program(&stripped, &Default::default()).unwrap().symbols().by_name("overflow").is_none(), "strip left the symbols");
    let range = |name: &str| {
        let f = read_program(&fib, &Default::default()).unwrap().symbols().by_name(name).unwrap().clone();
        format!("[{:#x}-{:#x}]", f.addr, f.addr + f.size)
    };
    let _s = session();
    let o = profil(&["-f", stripped.to_str().unwrap(), "33", "700"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = flat_rows(&out);
    assert_complete(&out, &rows);
    let (_, overflow) = row(&rows, &range("overflow")).unwrap_or_else(|| panic!("no {} in\n{out}", range("overflow")));
    assert!(overflow >= 80.0, "{out}");
    assert!(row(&rows, &range("fib")).is_some() && row(&rows, &range("loop")).is_some(), "{out}");
    for name in ["fib", "loop", "overflow", "main"] {
        assert!(row(&rows, name).is_none(), "{name} named in a stripped program:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stripped static program linked without `.eh_frame_hdr` (its `.eh_frame` has an FDE for
/// every function, but nothing points at it but its section header): its functions are still
/// its unwind tables' ranges, not one block of the whole text.
#[test]
fn stripped_static_program_without_eh_frame_hdr_is_named_by_address_ranges() {
    let dir = scratch("strip-static");
    let exe = compile("cc", "busy.c", &["-O1", "-static", "-Wl,--no-eh-frame-hdr"], &dir);
    let spin = read_program(&exe, &Default::default()).unwrap().symbols().by_name("spin").unwrap().clone();
    let stripped = dir.join("busy.stripped");
    assert!(Command::new("strip").arg("-o").arg(&stripped).arg(&exe).status().unwrap().success());
    let o = {
        let _s = session();
        profil(&["-f", stripped.to_str().unwrap(), "300"])
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let name = format!("[{:#x}-{:#x}]", spin.addr, spin.addr + spin.size);
    let (_, share) = row(&flat_rows(&out), &name).unwrap_or_else(|| panic!("no {name} in\n{out}"));
    assert!(share >= 90.0, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// PLT stubs are named as objdump names them (`printf@plt`), in every layout gcc and ld make:
/// lazy binding, `-z now`, IBT's `.plt.sec`, and `.plt.got`.
#[test]
fn plt_stubs_are_named_as_objdump_names_them() {
    let dir = scratch("plt");
    for (i, flags) in [&["-O1"][..], &["-O1", "-Wl,-z,now"], &["-O1", "-fcf-protection=full", "-Wl,-z,ibtplt"]].into_iter().enumerate() {
        let exe = compile("cc", "libcalls.c", flags, &dir);
        let renamed = dir.join(format!("libcalls{i}"));
        std::fs::rename(&exe, &renamed).unwrap();
        let d = Command::new("objdump").arg("-d").arg(&renamed).output().expect("objdump (binutils)");
        let listing = String::from_utf8_lossy(&d.stdout);
        // "0000000000001030 <printf@plt>:"
        let labels: Vec<(u64, String)> = listing
            .lines()
            .filter_map(|l| {
                let (addr, rest) = l.split_once(" <")?;
                let name = rest.strip_suffix(">:")?.strip_suffix("@plt")?;
                Some((u64::from_str_radix(addr, 16).ok()?, format!("{name}@plt")))
            })
            .collect();
        assert!(labels.len() >= 3, "{flags:?}: {labels:?}");
        let object = prof_objects::object_file::ObjectFile::read(&renamed, &Default::default()).unwrap();
        for (addr, name) in &labels {
            assert_eq!(&object.symbols.resolve(*addr).name, name, "{flags:?} at {addr:#x}");
            assert_eq!(&object.symbols.resolve(addr + 7).name, name, "{flags:?} inside the stub at {addr:#x}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// C++ names a reader can use: an inlined std::swap whose mangled name defeats the demangler
/// is named, not shown mangled; `--short-names` drops template arguments and parameters
/// everywhere; `--top N` keeps N rows and sums the rest in one.
#[test]
fn cpp_names_are_readable_and_the_flat_profile_can_be_cut() {
    let dir = scratch("cpp-names");
    let exe = compile("c++", "swap.cpp", &["-O1", "-g"], &dir);
    let run = |args: &[&str]| {
        let _s = session();
        let o = profil(&[&["-f", "--inline"], args, &[exe.to_str().unwrap(), "6000"]].concat());
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        out
    };
    let out = run(&[]);
    let rows = flat_rows(&out);
    assert!(rows.iter().all(|r| !r.2.contains("_Z")), "{out}");
    assert!(row(&rows, "std::swap<…> (inlined)").is_some(), "{out}");
    let out = run(&["--short-names", "--top", "2"]);
    let rows = flat_rows(&out);
    // main and std::swap (about 70 and 30 %), then whatever else was sampled, in one row.
    assert!(row(&rows, "std::swap (inlined)").is_some() && row(&rows, "main").is_some(), "{out}");
    assert!(rows.iter().all(|r| !r.2.contains('<')), "{out}");
    assert!(rows.len() == 2 || (rows.len() == 3 && rows[2].2.contains(" more function")), "{out}");
    let total: f64 = rows.iter().map(|r| r.1).sum();
    assert!((total - 100.0).abs() < 0.05, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Time in libc is named by libc's own functions, found through the mapping.
#[test]
fn shared_library_functions_are_named() {
    let dir = scratch("libcalls");
    let exe = compile("cc", "libcalls.c", &["-O0"], &dir);
    let _s = session();
    let o = profil(&["-f", exe.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = flat_rows(&out);
    assert_complete(&out, &rows);
    let in_random: f64 =
        rows.iter().filter(|r| r.2 == "random [libc.so.6]" || r.2 == "random_r [libc.so.6]").map(|r| r.1).sum();
    assert!(in_random >= 50.0, "random/random_r in libc hold only {in_random:.1}%:\n{out}");
    assert!(row(&rows, "main").is_some(), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cpp_names_are_demangled() {
    let dir = scratch("cpp");
    let exe = compile("c++", "spinner.cpp", &["-O1"], &dir);
    let _s = session();
    let o = profil(&["-f", exe.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = flat_rows(&out);
    for f in ["demo::Spinner::spin(int)", "long demo::twice<long>(long)"] {
        let (_, pct) = row(&rows, f).unwrap_or_else(|| panic!("no {f} in\n{out}"));
        // Equal work each, but on a busy virtual machine the same work can take twice the CPU
        // time from one phase to the next: both named, each with a clear share.
        assert!((10.0..=90.0).contains(&pct), "{f}: {pct}%\n{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--asm-top 2`: the two hottest functions, every instruction at the addresses objdump
/// decodes, and the hits adding up to the function's samples.
#[test]
fn instruction_view_of_the_hottest_functions() {
    let fib = fib_bin();
    let _s = session();
    let o = profil(&["--asm-top", "2", fib.to_str().unwrap(), "33", "300"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let rows = flat_rows(&out);
    let view = &out[out.find("Instructions of the 2 hottest functions:\n").expect("instruction view")..];
    let sections: Vec<&str> = view.split("\n\n").skip(1).take(2).collect();
    assert_eq!(sections.len(), 2, "{view}");
    for (section, (samples, _, name)) in sections.iter().zip(&rows) {
        let header = section.lines().next().unwrap();
        assert!(header.starts_with(&format!("{name} ({samples} samples, ")), "{header}");
        let f = read_program(&fib, &Default::default()).unwrap().symbols().by_name(name).unwrap().clone();
        assert!(header.ends_with(&format!("{:#x}-{:#x} in fib:", f.addr, f.addr + f.size)), "{header}");
        let columns = section.lines().nth(1).unwrap();
        let hits_end = columns.find("hits").unwrap() + "hits".len();
        // Instruction lines (fib keeps line tables: each run of them has its source line above
        // it, `; main.rs:12  …`).
        let lines: Vec<&str> =
            section.lines().skip(2).take_while(|l| !l.starts_with("  (")).filter(|l| !l.trim_start().starts_with("; ")).collect();
        assert!(section.lines().any(|l| l.trim_start().starts_with("; ") && l.contains(".rs:")), "{section}");
        let addresses: Vec<u64> =
            lines.iter().map(|l| u64::from_str_radix(l.split_whitespace().next().unwrap(), 16).unwrap()).collect();
        let objdump = objdump_lines(&fib, f.addr, f.addr + f.size);
        assert_eq!(addresses, objdump.iter().map(|l| l.0).collect::<Vec<_>>(), "{section}");
        // Immediates as objdump writes them (`$0x1`, never `$1`).
        let immediates = |text: &str| -> Vec<String> {
            text.split([' ', ',']).filter(|t| t.starts_with('$')).map(str::to_string).collect()
        };
        for (line, (_, theirs)) in lines.iter().zip(&objdump) {
            assert_eq!(immediates(&line[hits_end + 9..]), immediates(theirs), "{line} vs objdump's {theirs}");
        }
        // Columns: address, hits (blank if none), percent, instruction.
        let hits: u64 = lines.iter().map(|l| l[hits_end - 8..hits_end].trim().parse::<u64>().unwrap_or(0)).sum();
        assert_eq!(hits, *samples, "{section}");
    }
}

/// The instructions `objdump -d` decodes in `[lo, hi)`: address and text.
fn objdump_lines(prog: &std::path::Path, lo: u64, hi: u64) -> Vec<(u64, String)> {
    let o = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", &format!("--start-address={lo:#x}"), &format!("--stop-address={hi:#x}")])
        .arg(prog)
        .output()
        .expect("objdump (binutils) is needed");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.trim_start().split_once(":\t")?;
            let addr = u64::from_str_radix(addr, 16).ok()?;
            (!rest.trim().is_empty()).then(|| (addr, rest.trim().to_string()))
        })
        .collect()
}

/// A program that spends its time in system calls: kernel ticks are counted where the
/// kernel allows it (root, or perf_event_paranoid <= 1), and said to be missing otherwise.
#[test]
fn kernel_ticks_of_a_syscall_heavy_program() {
    let dir = scratch("dd");
    let json = dir.join("dd.json");
    let _s = session();
    let o = profil(&[
        "-f",
        "--json",
        json.to_str().unwrap(),
        "/bin/dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=300000",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let line = field(&out, "Ticks:");
    let (user, _) = ticks(&out);
    assert_eq!(doc["ticks"]["user"], user);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let paranoid: i32 =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap().trim().parse().unwrap();
    if root || paranoid <= 1 {
        let kernel: u64 = line.split(", ").nth(1).and_then(|k| k.strip_suffix(" kernel")).unwrap().parse().unwrap();
        // Two system calls a byte: a large share of its time is the kernel's (more than half
        // where the kernel's entry is costly, as under Spectre mitigations; about half without).
        assert!(kernel * 3 >= user, "dd bs=1 lives in read/write, yet {kernel} kernel vs {user} user ticks:\n{out}");
        assert_eq!(doc["ticks"]["kernel"], kernel);
    } else {
        assert!(line.contains("kernel not counted (not permitted)"), "{line}");
        assert!(doc["ticks"]["kernel"].is_null());
    }
    assert!(rows_have(&out, "read [libc.so.6]") && rows_have(&out, "write [libc.so.6]"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Linux, where kernel samples are allowed: `--kernel /proc/kallsyms` names them (as the
/// default does where kallsyms shows the addresses: tests/kernel_names.rs), functions of their
/// own in the flat profile (the kernel's ticks, no more), leaves of the stacks above the system
/// call that entered the kernel.
#[test]
fn kernel_functions_are_named_from_kallsyms() {
    if !common::root("to read the kernel's addresses in /proc/kallsyms") {
        return;
    }
    let dir = scratch("kallsyms");
    let folded = dir.join("k.folded");
    let o = {
        let _s = session();
        profil(&[
            "-f", "-g", "--kernel", "/proc/kallsyms", "--collapsed", folded.to_str().unwrap(),
            "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000",
        ])
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let kernel: u64 = field(&out, "Ticks:").split(", ").nth(1).and_then(|k| k.strip_suffix(" kernel")).unwrap().parse().unwrap();
    let rows = flat_rows(&out);
    let in_kernel: Vec<&(u64, f64, String)> = rows.iter().filter(|r| r.2.ends_with(" [kernel]")).collect();
    assert_eq!(in_kernel.iter().map(|r| r.0).sum::<u64>(), kernel, "{out}");
    assert!(kernel > 20 && in_kernel.len() >= 3, "{out}");
    // Every name is one of the kernel's text symbols.
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let symbols: std::collections::HashSet<&str> = kallsyms.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    for r in &in_kernel {
        assert!(symbols.contains(r.2.trim_end_matches(" [kernel]")), "{} is no kernel symbol", r.2);
    }
    let folded = std::fs::read_to_string(&folded).unwrap();
    // "dd;…;write [libc.so.6];vfs_write [kernel] 7": the kernel's function above the call.
    let above_write = |l: &str| l.rsplit_once(' ').is_some_and(|(stack, _)| stack.contains(";write [libc.so.6];") && stack.ends_with(" [kernel]"));
    assert!(folded.lines().any(above_write), "{folded}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that sleeps a second, then spins 200 ms of CPU: the report's time line says so
/// (its ticks alone read "100 % its own code").
#[test]
fn the_report_sets_cpu_time_beside_the_wall_time() {
    let dir = scratch("sleepy");
    let exe = compile("cc", "sleepy.c", &["-O1"], &dir);
    let started = std::time::Instant::now();
    let o = {
        let _s = session();
        profil(&["-f", exe.to_str().unwrap(), "1000", "200"])
    };
    let around = started.elapsed().as_secs_f64();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // "Time: 1.21 s elapsed, 0.20 s of it on a CPU (17 % of the elapsed time; the rest …)"
    let line = field(&out, "Time:");
    let words: Vec<&str> = line.split_whitespace().collect();
    let (elapsed, cpu): (f64, f64) = (words[0].parse().unwrap(), words[3].parse().unwrap());
    assert!(elapsed >= 1.2 && elapsed <= around, "{line} ({around:.2} s around profil)");
    assert!((0.15..=0.25).contains(&cpu), "{line}");
    assert!(line.ends_with("; the rest the program waited or was not running)"), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The "By the clock" rows: (seconds, percent) of on a CPU, blocked, preempted.
fn clock_rows(out: &str) -> [(f64, f64); 3] {
    let rows = table_rows(out, "By the clock");
    let row = |i: usize| (rows[i][0].parse().unwrap(), rows[i][1].parse().unwrap());
    [row(0), row(1), row(2)]
}

/// The ledger by the clock, from the kernel's scheduler statistics (no privilege needed): a second
/// asleep is a second blocked (as long as the program's own clock says the sleep took), 200 ms of
/// spinning 200 ms on a CPU, and the three add up to the thread's life; as an unprivileged user
/// too.
#[test]
fn the_clock_ledger_splits_a_run_into_cpu_and_waiting() {
    let dir = scratch("ledger");
    let exe = compile("cc", "sleepy.c", &["-O1"], &dir);
    let mut runs = vec![{
        let _s = session();
        profil(&["-f", "--off-cpu", exe.to_str().unwrap(), "1000", "200"])
    }];
    if common::root("to run profil as nobody") {
        let _s = session();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        runs.push(
            Command::new("setpriv")
                .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
                .arg(profil_bin())
                .args(["--report", "-", "-f", "--off-cpu", exe.to_str().unwrap(), "1000", "200"])
                .output()
                .expect("setpriv (util-linux)"),
        );
    }
    for o in runs {
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let total: f64 = field(&out, "By the clock (1 thread,").split_whitespace().next().unwrap().parse().unwrap();
        let [(on, _), (blocked, _), (preempted, _)] = clock_rows(&out);
        // Its sleep by its own clock (a busy machine wakes it late): the kernel's blocked time,
        // less the wait for a CPU once woken.
        let nap: f64 = field(&out, "sleepy.nap:").trim().parse().unwrap();
        assert!(nap >= 0.999 && (blocked - nap).abs() <= 0.02 + preempted, "{out}");
        assert!((on - 0.2).abs() <= 0.02, "{out}");
        // The ledger closes (the rows are rounded to the ms).
        assert!((on + blocked + preempted - total).abs() <= 0.01, "{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two CPU hogs on one CPU (`taskset`): the profiled one is off the CPU, runnable, about half
/// of its time, and the ledger says preempted, not blocked.
#[test]
fn a_program_sharing_its_cpu_is_seen_preempted() {
    let dir = scratch("ledger-preempt");
    let (busy, sleepy) = (compile("cc", "busy.c", &["-O1"], &dir), compile("cc", "sleepy.c", &["-O1"], &dir));
    let _s = session();
    let mut hog = Command::new("taskset").args(["-c", "0"]).arg(&busy).arg("30000").spawn().expect("taskset (util-linux)");
    common::wait_for_cpu(hog.id(), 50);
    let o = Command::new("taskset").args(["-c", "0"]).arg(profil_bin()).args(["--report", "-", "-f", "--off-cpu", sleepy.to_str().unwrap(), "0", "500"]).output().unwrap();
    hog.kill().unwrap();
    hog.wait().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let [(on, _), (blocked, _), (preempted, _)] = clock_rows(&out);
    assert!((on - 0.5).abs() <= 0.05 && blocked < 0.05, "{out}");
    assert!(preempted >= 0.25, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn rows_have(out: &str, name: &str) -> bool {
    flat_rows(out).iter().any(|r| r.2 == name)
}

/// Two threads with 300 ms and 900 ms of CPU work: both counted, 1:3.
#[test]
fn every_thread_is_counted() {
    let dir = scratch("threads");
    let exe = compile("cc", "threads.c", &["-O0", "-pthread"], &dir);
    let _s = session();
    let o = profil(&["-f", exe.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("threads done\n"));
    let rows = flat_rows(&out);
    let short = row(&rows, "spin_short").map_or(0, |r| r.0) as f64;
    let long = row(&rows, "spin_long").map_or(0, |r| r.0) as f64;
    // 1.2 s of CPU at 1 kHz.
    assert!((1000.0..=1400.0).contains(&(short + long)), "{short} + {long} ticks:\n{out}");
    let share = long / (short + long);
    assert!((share - 0.75).abs() <= 0.05, "spin_long has {:.1}% of the two:\n{out}", share * 100.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unwritable_export_files_fail_before_the_program_runs() {
    let fib = fib_bin();
    let missing = "/nonexistent-profil-dir/gmon.out";
    for args in [vec!["-o", missing], vec!["--collapsed", missing], vec!["--json", missing]] {
        let mut all = args.clone();
        all.push(fib.to_str().unwrap());
        let o = profil(&all);
        let (out, err) = text(&o);
        assert_eq!(err, format!("Profil Error: Cannot write '{missing}': No such file or directory\n"), "{args:?}");
        assert_eq!(o.status.code(), Some(1));
        assert!(out.is_empty(), "the program ran:\n{out}");
    }
    let dir = std::env::temp_dir();
    let o = profil(&["--json", dir.to_str().unwrap(), fib.to_str().unwrap()]);
    assert_eq!(text(&o).1, format!("Profil Error: Cannot write '{}': Is a directory\n", dir.display()));
}

/// One profiled run of fib with every export, shared by the export tests.
struct Exported {
    stdout: String,
    dir: PathBuf,
}

fn exported() -> &'static Exported {
    static RUN: OnceLock<Exported> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = scratch("exports");
        let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
        let _s = session();
        let o = profil(&[
            "-o",
            &path("gmon.out"),
            "--collapsed",
            &path("fib.folded"),
            "--json",
            &path("fib.json"),
            fib_bin().to_str().unwrap(),
        ]);
        let (stdout, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        Exported { stdout, dir }
    })
}

/// The flat profile restricted to the program's own samples (what gmon.out holds), in percent.
fn program_shares(run: &Exported) -> HashMap<String, f64> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.dir.join("fib.json")).unwrap()).unwrap();
    let own: Vec<(String, u64)> = doc["flat"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["object"].is_null())
        .map(|e| (e["function"].as_str().unwrap().to_string(), e["samples"].as_u64().unwrap()))
        .collect();
    let total: u64 = own.iter().map(|e| e.1).sum();
    own.into_iter().map(|(n, s)| (n, s as f64 * 100.0 / total as f64)).collect()
}

/// `gprof fib gmon.out` prints a flat profile with profil's shares and seconds.
#[test]
fn gmon_out_reads_in_gprof() {
    let run = exported();
    let o = Command::new("gprof")
        .args(["-b", "-p"])
        .arg(fib_bin())
        .arg(run.dir.join("gmon.out"))
        .output()
        .expect("gprof (binutils) is needed");
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(report.contains("Each sample counts as 0.001 seconds."), "{report}");
    // "  %   cumulative   self ..." rows: percent, cumulative s, self s, [calls...], name.
    let gprof: HashMap<String, (f64, f64)> = report
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let pct = w.first()?.parse().ok()?;
            let seconds = w.get(2)?.parse().ok()?;
            Some((w.last()?.to_string(), (pct, seconds)))
        })
        .collect();
    let ours = program_shares(run);
    let samples: HashMap<String, u64> = flat_rows(&run.stdout).into_iter().map(|r| (r.2, r.0)).collect();
    for f in ["fib", "loop", "overflow"] {
        let (pct, seconds) = *gprof.get(f).unwrap_or_else(|| panic!("gprof lacks {f}:\n{report}"));
        assert!((pct - ours[f]).abs() <= 0.1, "{f}: gprof {pct}% vs profil {:.2}%\n{report}", ours[f]);
        let expected = samples[f] as f64 / 1000.0;
        assert!((seconds - expected).abs() <= 0.011, "{f}: gprof {seconds}s vs {expected}s\n{report}");
    }
}

/// The folded stacks are well formed and inferno draws them into a flame graph.
#[test]
fn collapsed_stacks_render_in_inferno() {
    let run = exported();
    let folded = std::fs::read_to_string(run.dir.join("fib.folded")).unwrap();
    // The user samples and the kernel's, named (root, by default).
    let (all, _) = flat_ticks(&run.stdout);
    let mut total = 0;
    for line in folded.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no count: {line:?}"));
        let frames: Vec<&str> = stack.split(';').collect();
        assert_eq!(frames.len(), 2, "{line}");
        assert_eq!(frames[0], "fib");
        assert!(frames.iter().all(|f| !f.is_empty()), "{line}");
        total += count.parse::<u64>().unwrap_or_else(|_| panic!("bad count: {line:?}"));
    }
    assert_eq!(total, all);
    let mut svg = Vec::new();
    let mut options = inferno::flamegraph::Options::default();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    let all = format!("<title>all ({} samples, 100%)</title>", thousands(all));
    assert!(svg.contains(&all), "flame graph lacks {all}");
    for f in ["overflow", "fib", "loop"] {
        assert!(svg.contains(&format!("<title>{f} (")), "flame graph lacks {f}");
    }
}

/// 12345 -> "12,345", as inferno prints sample counts.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The JSON document parses and says what the report says.
#[test]
fn json_export_matches_the_report() {
    let run = exported();
    let out = &run.stdout;
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.dir.join("fib.json")).unwrap()).unwrap();
    assert_eq!(doc["format"], "profil");
    assert_eq!(doc["version"], 8);
    assert!(doc["sampling"].is_null(), "the sampling source is Redox's");
    assert!(doc["stacks"].is_null() && doc["server_stacks"].is_null(), "no stacks without -g");
    // Server attribution is Redox's: no account of servers on Linux.
    assert!(doc["servers"].is_null());
    assert_eq!(doc["program"], fib_bin().to_str().unwrap());
    assert_eq!(doc["arguments"], serde_json::json!([]));
    assert_eq!(doc["frequency_hz"], 1000);
    let l = &doc["layout"];
    assert_eq!(
        field(out, "start_addr ="),
        format!(
            "{:#x}, end_addr = {:#x}, nr_bins = {}, bin_sz = {}",
            l["start_addr"].as_u64().unwrap(),
            l["end_addr"].as_u64().unwrap(),
            l["nr_bins"],
            l["bin_sz"]
        )
    );
    let bins = doc["bins"].as_array().unwrap();
    assert_eq!(bins.len() as u64, l["nr_bins"].as_u64().unwrap());
    let in_bins: u64 = bins.iter().map(|b| b.as_u64().unwrap()).sum();
    let (user, report_in_bins) = ticks(out);
    assert_eq!(in_bins, report_in_bins);
    assert_eq!(doc["ticks"]["in_bins"], in_bins);
    assert_eq!(doc["ticks"]["user"], user);
    assert_eq!(doc["ticks"]["lost"], 0);
    assert!(doc["ticks"]["kernel"].is_u64() || doc["ticks"]["kernel"].is_null());
    assert_eq!(doc["stop_reason"], "exit");
    assert_eq!(doc["exit"], serde_json::json!({"code": 0, "signal": null}));
    let flat: Vec<(u64, String)> = doc["flat"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = match (e["function"].as_str(), e["object"].as_str()) {
                (Some(f), None) => f.to_string(),
                (Some(f), Some(o)) => format!("{f} [{o}]"),
                (None, Some(o)) => format!("[{o}]"),
                (None, None) => "[unknown]".to_string(),
            };
            (e["samples"].as_u64().unwrap(), name)
        })
        .collect();
    let report: Vec<(u64, String)> = flat_rows(out).into_iter().map(|r| (r.0, r.2)).collect();
    assert_eq!(flat, report);
    let samples = doc["samples"].as_array().unwrap();
    assert_eq!(samples.iter().map(|s| s["count"].as_u64().unwrap()).sum::<u64>(), flat_ticks(out).0);
    let overflow = read_program(&fib_bin(), &Default::default()).unwrap().symbols().by_name("overflow").unwrap().clone();
    for s in samples.iter().filter(|s| s["function"] == "overflow") {
        let a = s["address"].as_u64().unwrap();
        assert!(s["object"].is_null() && s["object_address"] == a);
        assert!((overflow.addr..overflow.addr + overflow.size).contains(&a), "{s}");
    }
}
