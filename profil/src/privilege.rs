//! Whose process the program will be. A set-user-ID (or set-group-ID) program runs as its
//! file's owner (group), so profiling it would be profiling another user's process, which only
//! root may do (the spec's rule, enforced by profd for pids). The kernel would also silently
//! drop a non-root sampler at such an exec; refusing up front gives a clear message instead.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_IXGRP: u32 = 0o0010;

/// `Err(message)` if a caller with `euid`/`egid` may not profile the program at `path`.
pub fn check_may_profile(path: &Path, euid: u32, egid: u32) -> Result<(), String> {
    let Ok(m) = path.metadata() else { return Ok(()) };
    if euid == 0 {
        return Ok(());
    }
    let mode = m.mode();
    let who = if mode & S_ISUID != 0 && m.uid() != euid {
        Some(format!("user {} (set-user-ID)", m.uid()))
    } else if mode & S_ISGID != 0 && mode & S_IXGRP != 0 && m.gid() != egid {
        Some(format!("group {} (set-group-ID)", m.gid()))
    } else {
        None
    };
    match who {
        Some(who) => Err(format!(
            "Permission denied: '{}' runs as {who}; only root or that user may profile it",
            path.display()
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file(mode: u32) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("profil-priv-{}-{mode:o}", std::process::id()));
        std::fs::write(&p, b"").unwrap();
        // Run as root (CI), the file is another user's, so that its owner is not root: the
        // owner's right is then tested apart from root's. (chown first: it clears set-user-ID.)
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&p, Some(1000), Some(1000)).unwrap();
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn setuid_of_another_user_is_refused_except_for_root() {
        let p = file(0o4755);
        let owner = p.metadata().unwrap().uid();
        let other = owner + 1;
        let e = check_may_profile(&p, other, 0).unwrap_err();
        assert_eq!(
            e,
            format!("Permission denied: '{}' runs as user {owner} (set-user-ID); only root or that user may profile it", p.display())
        );
        assert_ne!(owner, 0, "the file's owner is not root: its right is tested apart from root's");
        assert!(check_may_profile(&p, owner, 0).is_ok());
        assert!(check_may_profile(&p, 0, 0).is_ok());
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn setgid_and_plain_files() {
        let p = file(0o2755);
        let gid = p.metadata().unwrap().gid();
        assert!(check_may_profile(&p, 1000, gid + 1).unwrap_err().contains("(set-group-ID)"));
        assert!(check_may_profile(&p, 1000, gid).is_ok());
        std::fs::remove_file(p).unwrap();
        let p = file(0o755);
        assert!(check_may_profile(&p, 1000, 1000).is_ok());
        std::fs::remove_file(p).unwrap();
    }
}
