//! Every file profil reads is read with a bound: a device, a directory or a file far too large
//! is one clear error, before anything runs, under a memory limit that reading it whole would
//! hit (profil grew to 24 GB on `--kernel /dev/zero` before).

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

use common::{fib_bin, profil_bin, text};

/// profil under an address-space limit of 1 GiB: reading `/dev/zero` or a 2 GiB file whole
/// fails there (an abort), where a bounded read is refused at once.
fn profil_limited(args: &[&str]) -> Output {
    let mut cmd = Command::new(profil_bin());
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            match libc::setrlimit(libc::RLIMIT_AS, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    cmd.output().expect("run profil")
}

/// A scratch directory `name` holding a sparse file of 2 GiB (no disk taken), and its path.
fn with_a_2_gib_file(name: &str, file: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("profil-bounded-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join(file);
    std::fs::File::create(&big).unwrap().set_len(2 << 30).unwrap();
    let big = big.to_str().unwrap().to_string();
    (dir, big)
}

#[test]
fn a_device_or_an_oversized_file_given_as_a_saved_run_is_refused_without_reading_it() {
    let (dir, big) = with_a_2_gib_file("saved", "big.run");
    let big = big.as_str();
    let fib = fib_bin();
    let fib = fib.to_str().unwrap();
    let cases: [(&[&str], String); 5] = [
        (&["--load", "/dev/zero"], "Profil Error: Cannot read '/dev/zero': it is a character device, not a file\n".into()),
        (&["--load", "/dev/urandom"], "Profil Error: Cannot read '/dev/urandom': it is a character device, not a file\n".into()),
        (&["--load", big], format!("Profil Error: Cannot read '{big}': it is larger than 256 MiB, more than such a file can be\n")),
        (&["-f", "--diff", "/dev/zero", fib], "Profil Error: Cannot read '/dev/zero': it is a character device, not a file\n".into()),
        (&["--load", "/tmp"], "Profil Error: Cannot read '/tmp': Is a directory\n".into()),
    ];
    for (args, message) in cases {
        let o = profil_limited(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {o:?}");
        assert_eq!(text(&o), (String::new(), message), "{args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--kernel` of a saved run names the path it had where the run was made (a Redox guest's
/// `/scheme/initfs/bin/kernel`): it is checked where `--sysroot` finds it.
#[test]
fn a_kernel_named_by_its_path_in_a_sysroot_is_found_there() {
    let dir = common::scratch("bounded-sysroot");
    let saved = dir.join("fib.profil");
    let fib = fib_bin();
    let o = common::profil(&["-f", "--save", saved.to_str().unwrap(), fib.to_str().unwrap(), "20", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("guest/boot")).unwrap();
    // Any ELF stands for the kernel's.
    std::fs::copy(&fib, root.join("guest/boot/kernel")).unwrap();
    let load = |kernel: &str| {
        common::profil(&["-f", "--load", saved.to_str().unwrap(), "--sysroot", root.to_str().unwrap(), "--kernel", kernel])
    };
    let o = load("/guest/boot/kernel");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert!(text(&o).0.contains("Flat profile"), "{}", text(&o).0);
    let o = load("/guest/boot/none");
    assert_eq!(text(&o).1, "Profil Error: Cannot read the kernel's symbols from '/guest/boot/none': No such file or directory\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_kernel_file_that_cannot_name_the_kernel_is_refused_before_the_run() {
    let (dir, big) = with_a_2_gib_file("kernel", "vmlinux-not");
    let big = big.as_str();
    let fib = fib_bin();
    let cases = [
        ("/dev/zero", "Profil Error: Cannot read the kernel's symbols from '/dev/zero': it is a character device, not a file\n".to_string()),
        ("/nonexistent", "Profil Error: Cannot read the kernel's symbols from '/nonexistent': No such file or directory\n".into()),
        ("/tmp", "Profil Error: Cannot read the kernel's symbols from '/tmp': Is a directory\n".into()),
        (
            "/etc/passwd",
            "Profil Error: '/etc/passwd' is not the kernel's symbols: neither an ELF file nor kallsyms text (/proc/kallsyms)\n".into(),
        ),
        (big, format!("Profil Error: '{big}' is not the kernel's symbols: larger than 256 MiB and not an ELF file\n")),
    ];
    for (kernel, message) in cases {
        // The program would run for seconds: refused, it never starts.
        let o = profil_limited(&["-f", "--kernel", kernel, fib.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "--kernel {kernel}: {o:?}");
        assert_eq!(text(&o), (String::new(), message), "--kernel {kernel}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
