//! What the symbolizer is built from: where the files a run names are looked for, and how
//! functions are named. profil makes one from its options (`--debug-dir`, `--sysroot`,
//! `--short-names`); every object read and every file looked for takes it.

use std::path::{Path, PathBuf};

/// The symbolizer's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Where separate debug files are looked for, in order ([`crate::debug_file::search_dirs`]:
    /// those given, the environment's, the system's).
    pub debug_dirs: Vec<PathBuf>,
    /// A tree the recorded files are looked for under first ([`crate::sysroot`]).
    pub sysroot: Option<PathBuf>,
    /// Demangled names in the short form ([`crate::short_names`]).
    pub short_names: bool,
}

impl Options {
    /// Debug directories `debug_dirs` searched first, under `sysroot` if one is given.
    pub fn new(debug_dirs: &[PathBuf], sysroot: Option<&Path>, short_names: bool) -> Options {
        Options { debug_dirs: crate::debug_file::search_dirs(debug_dirs), sysroot: sysroot.map(Path::to_path_buf), short_names }
    }
}

impl Default for Options {
    /// The environment's and the system's debug directories, no sysroot, names in full.
    fn default() -> Options {
        Options::new(&[], None, false)
    }
}
