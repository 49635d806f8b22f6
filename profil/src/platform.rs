//! What differs between the systems profil runs on, named in one place: what the command
//! line accepts, where the kernel's ELF is, what `/proc` tells about a process. (The backend
//! itself is `backend/`; signals and the launch are in `interrupt` and `launch`.)

use std::path::{Path, PathBuf};

/// Linux's `kernel.perf_event_paranoid`, as its file says it (empty where it cannot be read).
pub fn paranoid_level() -> String {
    let path = Path::new("/proc/sys/kernel/perf_event_paranoid");
    prof_objects::bounded::read_to_string(path, prof_objects::bounded::proc_limits::SMALL).unwrap_or_default().trim().to_string()
}

/// The sampling rates `-F` takes: perf's on Linux; on Redox the kernel's NMI source's.
#[cfg(not(target_os = "redox"))]
pub const FREQUENCIES: std::ops::RangeInclusive<u64> = 1..=100_000;
#[cfg(target_os = "redox")]
pub const FREQUENCIES: std::ops::RangeInclusive<u64> = prof_core::sampler::MIN_RATE..=prof_core::sampler::MAX_RATE;

/// Where a Redox image installs the kernel it boots.
pub const REDOX_KERNEL: &str = "/usr/lib/boot/kernel";

/// Why a system-wide run (`-a`) was refused permission, and what would allow it.
pub fn system_wide_refusal() -> String {
    if cfg!(target_os = "redox") {
        return "Permission denied: -a profiles every process, which profd allows root alone".into();
    }
    let level = paranoid_level();
    format!(
        "Permission denied: -a samples every CPU, which the kernel allows root (or CAP_PERFMON), or anyone where \
         kernel.perf_event_paranoid is 0 or below; it is {}",
        level
    )
}

/// The user chooses how call stacks are taken (`--call-graph`), and a frame-pointer chain
/// that stops short of a start routine is cut (Linux); on Redox the kernel walks them.
pub const STACKS_ARE_CHOSEN: bool = cfg!(target_os = "linux");

/// The program file of process `pid` where the system has a link to it, readable even if
/// deleted (Linux: `/proc/PID/exe`).
pub fn program_of(pid: u32) -> Option<PathBuf> {
    cfg!(target_os = "linux").then(|| PathBuf::from(format!("/proc/{pid}/exe")))
}

/// The owner of process `pid` where the system tells it (`Some(None)`: no such process;
/// `None`: not known here).
pub fn owner_of(pid: u32) -> Option<Option<u32>> {
    use std::os::unix::fs::MetadataExt;
    cfg!(target_os = "linux").then(|| std::fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid()))
}

/// Who holds the session that makes this one busy, if that can be said (Linux: the process
/// that holds the session lock; its user and command line).
pub fn busy_hint() -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let (pid, uid) = prof_samplers::perf_event::session_holder()?;
        let cmdline = prof_objects::bounded::read(Path::new(&format!("/proc/{pid}/cmdline")), prof_objects::bounded::proc_limits::CMDLINE)
            .unwrap_or_default();
        let words: Vec<String> =
            cmdline.split(|&b| b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
        let command = if words.is_empty() { String::from("?") } else { words.join(" ") };
        Some(format!("  Held by pid {pid} (user {}): {command}", user_name(uid)))
    }
    // Redox: profd's status is public; it names the session's process (0: every process).
    #[cfg(target_os = "redox")]
    {
        let status = std::fs::File::open("/scheme/prof/status").ok()?;
        let status = String::from_utf8(prof_objects::bounded::read_at_most(status, 4096).ok()?).ok()?;
        busy_text(&status)
    }
    #[cfg(not(any(target_os = "linux", target_os = "redox")))]
    None
}

/// The file at `path` by its real path (absolute, without links), `None` where there is no
/// such file. Where the system's answer is another file or none (Redox's initfs answers
/// `/scheme/initfsbin/sh` for `/scheme/initfs/bin/sh`: its fpath joins its scheme's root and
/// the file's name without the slash between), `path` made absolute as it is.
pub fn real_path(path: &Path) -> Option<PathBuf> {
    real_path_by(path, |p| std::fs::canonicalize(p))
}

/// [`real_path`], the system's answer from `resolve`: taken where it is the same file as
/// `path` (device and inode).
fn real_path_by(path: &Path, resolve: impl Fn(&Path) -> std::io::Result<PathBuf>) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::metadata(path).ok()?;
    let same = |m: std::fs::Metadata| (m.dev(), m.ino()) == (file.dev(), file.ino());
    resolve(path).ok().filter(|r| std::fs::metadata(r).is_ok_and(same)).or_else(|| std::path::absolute(path).ok())
}

/// What profd's `status` line says holds the session, as a hint under "Already profiling".
pub fn busy_text(status: &str) -> Option<String> {
    let pid = status.split_whitespace().find_map(|w| w.strip_prefix("pid="))?;
    Some(match pid {
        "0" => "  Held by a session on every process (profil -a, root's); it ends when that profil ends, or when root writes stop to /scheme/prof/ctl".into(),
        pid => format!("  Held by a session on pid {pid}; it ends when that process exits, or when its starter writes stop to /scheme/prof/ctl"),
    })
}

/// A user's name, as the C library finds it (/etc/passwd, LDAP and the other NSS sources),
/// or the number.
#[cfg(target_os = "linux")]
fn user_name(uid: u32) -> String {
    let mut buf = vec![0 as libc::c_char; 4096];
    loop {
        // SAFETY: passwd is plain data; getpwuid_r writes it, its strings into buf, and
        // result; all of them outlive the call.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: as above; buf.len() is its size.
        let r = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
        match r {
            libc::ERANGE if buf.len() < 1 << 20 => buf.resize(buf.len() * 2, 0),
            // SAFETY: a found entry's pw_name is a NUL-terminated string in buf.
            0 if !result.is_null() => return unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) }.to_string_lossy().into_owned(),
            _ => return uid.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link resolved to its file; an answer that is not the file (Redox's initfs loses the
    /// slash after its root) is not taken: the path as given, absolute; no file, no path.
    #[test]
    fn the_real_path_is_the_same_file_or_the_path_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let sh = bin.join("sh");
        std::fs::write(&sh, b"#!").unwrap();
        let link = dir.path().join("link-to-sh");
        std::os::unix::fs::symlink(&sh, &link).unwrap();
        let real = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert_eq!(real_path(&link), Some(real(&sh)));
        // What Redox's initfs answers for /scheme/initfs/bin/sh: the root and "bin/sh" joined.
        let slash_lost = |p: &Path| -> std::io::Result<PathBuf> {
            let s = p.display().to_string();
            Ok(PathBuf::from(s.replacen("/bin/", "bin/", 1)))
        };
        assert!(!slash_lost(&sh).unwrap().exists());
        assert_eq!(real_path_by(&sh, slash_lost), Some(sh.clone()));
        // Another file that is there is not this one either.
        let other = dir.path().join("other");
        std::fs::write(&other, b"#!").unwrap();
        assert_eq!(real_path_by(&sh, |_| Ok(other.clone())), Some(sh.clone()));
        assert_eq!(real_path(&dir.path().join("none")), None);
    }

    #[test]
    fn a_busy_session_is_named_from_profds_status() {
        let all = "state=running pid=0 reason=none ticks_in_bins=0 ticks_user=0 ticks_kernel=0 dropped=0\n";
        assert!(busy_text(all).unwrap().starts_with("  Held by a session on every process (profil -a, root's)"));
        let one = "state=running pid=12 reason=none ticks_in_bins=5\n";
        assert!(busy_text(one).unwrap().starts_with("  Held by a session on pid 12;"));
        assert_eq!(busy_text("garbage"), None);
    }
}
