//! The kernel's samples named by default (Linux), as perf names them: from `/proc/kallsyms`
//! where it shows the kernel's addresses; a saved run's only where it was recorded on this
//! boot of this kernel (KASLR moves the kernel at every boot), else unnamed with the reason in
//! the report; `--kernel FILE` whatever the run; `--kernel none` never.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;

use common::*;

/// dd copying a byte at a time: two system calls a byte, most of its time the kernel's.
const DD: [&str; 5] = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000"];

/// Are kernel samples counted for this user (root, or `perf_event_paranoid` ≤ 1)? If not, the
/// check is skipped (a failure under CI, which runs as root).
fn kernel_samples_counted() -> bool {
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap().trim().parse().unwrap();
    // SAFETY: geteuid has no preconditions.
    let counted = unsafe { libc::geteuid() } == 0 || paranoid <= 1;
    if !counted {
        skip(&format!("kernel samples are not counted for this user (perf_event_paranoid {paranoid}, not root)"));
    }
    counted
}

/// The address of `_stext` as `/proc/kallsyms` shows it to this user: `None` where the kernel
/// hides its addresses (`kernel.kptr_restrict`, or `perf_event_paranoid` for a user).
fn kallsyms_stext() -> Option<u64> {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let line = kallsyms.lines().find(|l| l.split_whitespace().nth(2) == Some("_stext"))?;
    u64::from_str_radix(line.split_whitespace().next()?, 16).ok().filter(|&a| a != 0)
}

/// The kernel's ticks, from "Ticks: U user (B in bins), K kernel, L lost".
fn kernel_ticks(out: &str) -> u64 {
    field(out, "Ticks:").split(", ").nth(1).and_then(|k| k.strip_suffix(" kernel")).unwrap_or_else(|| panic!("{out}")).parse().unwrap()
}

/// The flat profile's rows of the kernel: named ones (`vfs_write [kernel]`), and the unnamed
/// one (`[kernel]`).
fn kernel_rows(out: &str) -> (Vec<(u64, String)>, Option<u64>) {
    let rows = flat_rows(out);
    let named = rows.iter().filter(|r| r.2.ends_with(" [kernel]")).map(|r| (r.0, r.2.clone())).collect();
    (named, rows.iter().find(|r| r.2 == "[kernel]").map(|r| r.0))
}

/// Every named row is one of the running kernel's text symbols, and they hold every kernel tick.
fn assert_named(out: &str) {
    let kernel = kernel_ticks(out);
    let (named, unnamed) = kernel_rows(out);
    assert_eq!(unnamed, None, "{out}");
    assert_eq!(named.iter().map(|r| r.0).sum::<u64>(), kernel, "{out}");
    assert!(kernel > 20 && named.len() >= 3, "{out}");
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let symbols: std::collections::HashSet<&str> = kallsyms.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    for (_, name) in &named {
        assert!(symbols.contains(name.trim_end_matches(" [kernel]")), "{name} is no kernel symbol");
    }
    assert!(!out.contains("Kernel functions not named"), "{out}");
}

/// The kernel's ticks kept as one unnamed row, with `why` on the line under the table.
fn assert_unnamed(out: &str, why: &str) {
    let (named, unnamed) = kernel_rows(out);
    assert!(named.is_empty(), "{out}");
    assert_eq!(unnamed, Some(kernel_ticks(out)), "{out}");
    let line = format!("Kernel functions not named: {why}");
    let note = out.lines().find(|l| l.starts_with("Kernel functions not named: ")).unwrap_or_else(|| panic!("no reason line in:\n{out}"));
    assert!(note.starts_with(&line) && note.ends_with("; --kernel FILE names them."), "{note}");
}

/// A live run names the kernel's functions with no option, as `--kernel /proc/kallsyms` did:
/// functions of their own in the flat profile holding every kernel tick, the kernel's function
/// the leaf above the system call in the stacks. Where `/proc/kallsyms` hides the addresses the
/// report says so in a line. `--kernel none` counts them without names, and says nothing.
#[test]
fn the_kernel_is_named_by_default_where_kallsyms_shows_it() {
    if !kernel_samples_counted() {
        return;
    }
    let dir = scratch("kernel-default");
    let folded = dir.join("k.folded");
    let mut args = vec!["-f", "-g", "--collapsed", folded.to_str().unwrap()];
    args.extend(DD);
    let o = {
        let _s = session();
        profil(&args)
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    if kallsyms_stext().is_none() {
        assert_unnamed_live(&out);
        eprintln!("skipped: /proc/kallsyms hides the kernel's addresses here: the reason line was checked, not the names");
        return;
    }
    assert_named(&out);
    let header = field(&out, "Flat profile (");
    assert!(header.ends_with(&format!(", {} of them in the kernel):", kernel_ticks(&out))), "{header}");
    // "dd;…;write [libc.so.6];vfs_write [kernel] 7": the kernel's function above the call.
    let folded = std::fs::read_to_string(&folded).unwrap();
    let above_write = |l: &str| l.rsplit_once(' ').is_some_and(|(stack, _)| stack.contains(";write [libc.so.6];") && stack.ends_with(" [kernel]"));
    assert!(folded.lines().any(above_write), "{folded}");

    // --kernel none: the ticks counted, no kernel row, no reason line.
    let mut args = vec!["-f", "--kernel", "none"];
    args.extend(DD);
    let o = {
        let _s = session();
        profil(&args)
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(kernel_ticks(&out) > 20, "{out}");
    assert_eq!(kernel_rows(&out), (Vec::new(), None), "{out}");
    assert!(field(&out, "Flat profile (").ends_with(" user ticks):"), "{out}");
    assert!(!out.contains("Kernel functions not named"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live run where `/proc/kallsyms` hides the addresses: the ticks counted, no kernel row
/// (their addresses are not kept), and the line that says why.
fn assert_unnamed_live(out: &str) {
    assert_eq!(kernel_rows(out), (Vec::new(), None), "{out}");
    let note = field(out, "Kernel functions not named:");
    assert!(note.starts_with("/proc/kallsyms hides their addresses from this user (kernel.kptr_restrict "), "{note}");
}

/// Where `/proc/kallsyms` hides the kernel's addresses (`kernel.kptr_restrict`; here a copy of
/// its first lines with the addresses zeroed, bound over it in a mount namespace of the run's
/// own): the kernel's ticks are counted, not named, and a line after the flat profile says why.
/// The run saved so records its boot without the kernel's text, and keeps no kernel address.
#[test]
fn where_kallsyms_hides_the_addresses_the_report_says_why() {
    if !root("to bind a file over /proc/kallsyms in a mount namespace") || !installed("unshare", "util-linux") {
        return;
    }
    let dir = scratch("kernel-hidden");
    let (fake, saved) = (dir.join("kallsyms"), dir.join("run.profil"));
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let zeroed: String = kallsyms.lines().take(100).map(|l| format!("0000000000000000{}\n", &l[16..])).collect();
    std::fs::write(&fake, zeroed).unwrap();
    let script = format!("mount --bind '{}' /proc/kallsyms && exec \"$0\" \"$@\"", fake.display());
    let o = {
        let _s = session();
        std::process::Command::new("unshare")
            .args(["--mount", "sh", "-c", &script])
            .arg(profil_bin())
            .args(["--report", "-", "-f", "--save", saved.to_str().unwrap()])
            .args(DD)
            .output()
            .unwrap()
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(kernel_ticks(&out) > 20, "{out}");
    assert_unnamed_live(&out);
    assert!(field(&out, "Flat profile (").ends_with(" user ticks):"), "{out}");
    let doc = saved_run_json(&saved);
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(doc["run"]["profile"]["kernel"], serde_json::json!({"boot_id": boot_id.trim()}));
    assert_eq!(doc["run"]["profile"]["kernel_samples"], serde_json::json!([]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run saved with `--save`, reported with `--load`: the saved file records the kernel it ran
/// on, and the kernel's samples are named by default only where that is this boot's. Edited to
/// say another boot (or another place of the kernel's text), they stay unnamed, with the reason
/// under the table; `--kernel FILE` names them all the same; `--diff` against it warns.
/// `dd` profiled (`-f`) and saved in a scratch directory `name`: the directory, the saved
/// file and the live report.
fn saved_dd_run(name: &str) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let dir = scratch(name);
    let saved = dir.join("run.profil");
    let mut args = vec!["-f", "--save", saved.to_str().unwrap()];
    args.extend(DD);
    let o = {
        let _s = session();
        profil(&args)
    };
    let (live, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    (dir, saved, live)
}

#[test]
fn a_saved_run_of_another_boot_keeps_its_kernel_unnamed() {
    if !kernel_samples_counted() {
        return;
    }
    let Some(stext) = kallsyms_stext() else {
        eprintln!("skipped: /proc/kallsyms hides the kernel's addresses here: a run keeps none to name");
        return;
    };
    let (dir, saved, live) = saved_dd_run("kernel-saved");
    assert_named(&live);
    // The boot and the kernel's text, as this machine says them.
    let mut doc = saved_run_json(&saved);
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(doc["run"]["profile"]["kernel"], serde_json::json!({"boot_id": boot_id.trim(), "stext": stext}));

    let load = |file: &Path, more: &[&str]| {
        let mut args = vec!["-f", "--load", file.to_str().unwrap()];
        args.extend(more);
        let o = profil(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        out
    };
    // The same boot: named, as live.
    let same = load(&saved, &[]);
    assert_named(&same);
    assert_eq!(flat_rows(&same), flat_rows(&live));

    // Another boot: unnamed, and why.
    let other_boot = dir.join("other-boot.profil");
    doc["run"]["profile"]["kernel"]["boot_id"] = "00000000-1111-2222-3333-444444444444".into();
    write_saved_run(&other_boot, &doc);
    let out = load(&other_boot, &[]);
    assert_unnamed(&out, "the run was recorded on another boot or kernel than this one");
    // The same boot id, the kernel's text elsewhere: the same.
    let moved = dir.join("moved.profil");
    doc["run"]["profile"]["kernel"]["boot_id"] = boot_id.trim().into();
    doc["run"]["profile"]["kernel"]["stext"] = (stext + 0x20_0000).into();
    write_saved_run(&moved, &doc);
    assert_unnamed(&load(&moved, &[]), "the run was recorded on another boot or kernel than this one");
    // --kernel FILE: named from FILE, whatever the run's kernel.
    assert_named(&load(&other_boot, &["--kernel", "/proc/kallsyms"]));
    // --kernel none: unnamed, and nothing said.
    let none = load(&other_boot, &["--kernel", "none"]);
    assert!(!none.contains("Kernel functions not named"), "{none}");

    // --diff against it: the live run named, the base not, and a warning that says why.
    let mut args = vec!["-f", "--diff", other_boot.to_str().unwrap()];
    args.extend(DD);
    let o = {
        let _s = session();
        profil(&args)
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_named(&out);
    assert!(
        err.contains("profil: warning: the base run's kernel functions are not named: the run was recorded on another boot or kernel than this one"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file saved before runs recorded their kernel loads as it did: its kernel samples
/// unnamed by default, with the reason; `--kernel /proc/kallsyms` names them.
#[test]
fn a_saved_run_without_its_kernel_loads_with_the_kernel_unnamed() {
    if !kernel_samples_counted() {
        return;
    }
    if kallsyms_stext().is_none() {
        eprintln!("skipped: /proc/kallsyms hides the kernel's addresses here: a run keeps none to name");
        return;
    }
    let (dir, saved, _) = saved_dd_run("kernel-older");
    let mut doc = saved_run_json(&saved);
    assert!(doc["run"]["profile"].as_object_mut().unwrap().remove("kernel").is_some());
    assert_eq!(doc["version"], 3);
    let older = dir.join("older.profil");
    write_saved_run(&older, &doc);
    let o = profil(&["-f", "--load", older.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_unnamed(&out, "the saved run does not record which kernel it ran on");
    let o = profil(&["-f", "--kernel", "/proc/kallsyms", "--load", older.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert_named(&text(&o).0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A system-wide run (`-a`) saved and loaded: its kernel named by this boot's kallsyms only
/// where it ran on this boot.
#[test]
fn a_saved_system_wide_run_of_another_boot_keeps_its_kernel_unnamed() {
    if !root("for a system-wide run") {
        return;
    }
    if kallsyms_stext().is_none() {
        eprintln!("skipped: /proc/kallsyms hides the kernel's addresses here: a run keeps none to name");
        return;
    }
    let dir = scratch("kernel-system");
    let saved = dir.join("all.profil");
    let o = {
        let _s = session();
        // Something in the kernel meanwhile.
        let mut dd = Reaped::new(std::process::Command::new("dd").args(["if=/dev/zero", "of=/dev/null", "bs=1"]).spawn().unwrap());
        let o = profil(&["-a", "-t", "0.5", "--save", saved.to_str().unwrap()]);
        let _ = dd.child().kill();
        o
    };
    let (live, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let kernel_section = |out: &str| table_rows(out, "The kernel, for every process").into_iter().map(|w| w[2..].join(" ")).collect::<Vec<String>>();
    assert!(kernel_section(&live).iter().any(|f| f != "[kernel]" && f.ends_with(" [kernel]")), "{live}");
    let mut doc = saved_run_json(&saved);
    doc["run"]["profile"]["kernel"]["boot_id"] = "00000000-1111-2222-3333-444444444444".into();
    let other_boot = dir.join("other-boot.profil");
    write_saved_run(&other_boot, &doc);
    let o = profil(&["--load", other_boot.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(kernel_section(&out), ["[kernel]"], "{out}");
    assert!(out.contains("\nKernel functions not named: the run was recorded on another boot or kernel than this one"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--children`: the program's own kernel samples, named, are not counted among the user
/// samples of all the processes together (its children's are counted, not placed).
#[test]
fn all_processes_together_are_user_samples_only() {
    if !kernel_samples_counted() {
        return;
    }
    let dir = scratch("kernel-children");
    let json = dir.join("run.json");
    // sh writes 100,000 times itself (the kernel's work, most of it), and starts seq.
    let script = "for i in $(seq 100000); do echo x >/dev/null; done";
    let o = {
        let _s = session();
        profil(&["-f", "--children", "--json", json.to_str().unwrap(), "sh", "-c", script])
    };
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let user = |t: &serde_json::Value| t["user"].as_u64().unwrap();
    let children: u64 = doc["processes"].as_array().unwrap().iter().map(|p| user(&p["ticks"])).sum();
    let together = user(&doc["ticks"]) + children;
    assert!(kernel_ticks(&out) > 20, "{out}");
    // "All 2 processes together: 552 user samples:", and its rows, none of them the kernel's.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("All ") && l.contains(" processes together: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(lines[at].ends_with(&format!(" processes together: {together} user samples:")), "{out}");
    let rows = lines[at + 2..].iter().take_while(|l| !l.trim().is_empty());
    assert!(rows.clone().count() > 0 && rows.clone().all(|l| !l.ends_with("[kernel]")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
