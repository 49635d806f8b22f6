//! Where the files a saved run names are here: its program, the objects mapped into it, a
//! Redox daemon's executable, the kernel's ELF. With `--sysroot DIR` they are looked for under
//! `DIR` first, as a cross debugger's sysroot: a run saved in a Redox guest is reported on the
//! host with the image's tree mounted or copied at `DIR`, and one saved on another machine with
//! a copy of its files. An object whose GNU build-id the run recorded is also looked for by it
//! in the debug directories (`DIR/.build-id/xx/rest`, as `/usr/lib/debug` holds installed
//! objects), and only a file of that build is taken: another build would name the samples
//! wrongly. A file found nowhere is read where the run recorded it.

use std::path::{Path, PathBuf};

use crate::Options;

impl Options {
    /// Where to read the file a run recorded at `path`: under the sysroot if it is there, else
    /// `path` itself.
    pub fn locate(&self, path: &Path) -> PathBuf {
        self.sysroot.as_deref().and_then(|root| under(root, path)).unwrap_or_else(|| path.to_path_buf())
    }

    /// Where to read the object the run recorded at `path` (a file to open: a mapping's
    /// source) with GNU build-id `build_id` (hex; `None`: not recorded, and any file at the
    /// path is taken): by build-id under the debug directories, under the sysroot, at `path`,
    /// the first of that build. Found nowhere: [`Located::At`] `path`, which the caller then
    /// cannot read.
    pub fn locate_build(&self, path: &Path, build_id: Option<&str>) -> Located {
        let Some(id) = build_id.filter(|id| id.len() > 2 && id.is_ascii()) else { return Located::At(self.locate(path)) };
        let mut candidates: Vec<PathBuf> = self.debug_dirs.iter().map(|d| d.join(".build-id").join(&id[..2]).join(&id[2..])).collect();
        candidates.extend(self.sysroot.as_deref().and_then(|root| under(root, path)));
        candidates.push(path.to_path_buf());
        let mut other = None;
        for c in candidates {
            match crate::elf_headers::build_id(&c) {
                Some(found) if hex(&found) == id => return Located::At(c),
                // A file there of no build or another (a file that is no ELF is not counted).
                _ if other.is_none() && crate::elf::is_elf(&c) => other = Some(c),
                _ => {}
            }
        }
        other.map_or_else(|| Located::At(path.to_path_buf()), Located::OtherBuild)
    }
}

/// Where a recorded object is here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// Read it from this path (where no build-id was recorded: the first file found).
    At(PathBuf),
    /// The files found are of another build than the run's: this one (the first) is not it.
    OtherBuild(PathBuf),
}

/// `bytes` in lower-case hex, as build-ids are written.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
