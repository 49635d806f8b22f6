//! JIT code named from the perf map its runtime writes (`/tmp/perf-PID.map`, the format node,
//! the JVM and `python3 -X perf` write): a program running a loop it copied into anonymous
//! executable memory has that loop's time under the map's name, not `[anon]`.

mod common;

use common::{compile, field, flat_shares, scratch, share, text};

#[test]
#[cfg(target_arch = "x86_64")]
fn jit_code_is_named_from_the_perf_map() {
    let _lock = common::session();
    let dir = scratch("jit");
    let jit = compile("gcc", "jit.c", &["-O1"], &dir);
    let out = common::profil(&["-f", jit.to_str().unwrap(), "1500000000"]);
    let (stdout, stderr) = text(&out);
    let pid = field(&stdout, "jit.pid:");
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    assert!(out.status.success(), "{stdout}{stderr}");
    // The loop is all the program does: nearly all of its samples, whatever CPU it got.
    let spin = share(&flat_shares(&stdout), &format!("JIT:spin [perf-{pid}.map]"));
    assert!(spin > 80.0, "{stdout}");
}
