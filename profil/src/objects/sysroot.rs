//! `--sysroot DIR`: the files a saved run names (its program, the objects mapped into it, a
//! Redox daemon's executable, the kernel's ELF) are looked for under `DIR` first, as a cross
//! debugger's sysroot: a run saved in a Redox guest is reported on the host with the image's
//! tree mounted or copied at `DIR`, and one saved on another machine with a copy of its files.
//! A file not under `DIR` is read where the run recorded it.

use std::path::{Path, PathBuf};

static SYSROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Look under `dir` for the rest of the run.
pub fn use_sysroot(dir: &Path) {
    let _ = SYSROOT.set(dir.to_path_buf());
}

/// Where to read the file a run recorded at `path`: under the sysroot if it is there, else
/// `path` itself.
pub fn locate(path: &Path) -> PathBuf {
    SYSROOT.get().and_then(|root| under(root, path)).unwrap_or_else(|| path.to_path_buf())
}

/// `path` (absolute) under `root`, if a file is there.
fn under(root: &Path, path: &Path) -> Option<PathBuf> {
    let relative = path.strip_prefix("/").ok()?;
    let candidate = root.join(relative);
    candidate.is_file().then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_path_is_looked_for_under_the_root_first() {
        let root = std::env::temp_dir().join(format!("profil-sysroot-{}", std::process::id()));
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::write(root.join("usr/bin/fib"), b"x").unwrap();
        assert_eq!(under(&root, Path::new("/usr/bin/fib")), Some(root.join("usr/bin/fib")));
        // Not there, or not absolute: the path as recorded.
        assert_eq!(under(&root, Path::new("/usr/bin/other")), None);
        assert_eq!(under(&root, Path::new("fib")), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
