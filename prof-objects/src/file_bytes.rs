//! The bytes of an object file: mapped from disk (only the pages used are read), owned, or
//! borrowed for the life of the process (the vdso). The unwinder and the symbolizer read
//! programs and libraries through it.

use std::ops::Deref;
use std::path::Path;

#[derive(Debug)]
pub enum FileBytes {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
    Static(&'static [u8]),
}

impl FileBytes {
    /// Map the file at `path` read-only; an empty or unmappable file is read instead, as
    /// far as its size. Only a regular file is opened (a device or a FIFO is an error, never
    /// read: see [`crate::bounded`]).
    pub fn open(path: &Path) -> std::io::Result<FileBytes> {
        let file = crate::bounded::open_regular(path)?;
        let size = file.metadata()?.len();
        if size > 0 {
            // SAFETY: a private read-only mapping of an executable or library: programs are
            // not rewritten in place while they run (installers replace them by rename). A
            // file truncated meanwhile would fault, as it would for perf or gdb.
            if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
                return Ok(FileBytes::Mapped(map));
            }
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&file, size), &mut bytes)?;
        Ok(FileBytes::Owned(bytes))
    }
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Owned(v) => v,
            FileBytes::Mapped(m) => m,
            FileBytes::Static(s) => s,
        }
    }
}

impl Clone for FileBytes {
    fn clone(&self) -> Self {
        match self {
            FileBytes::Static(s) => FileBytes::Static(s),
            other => FileBytes::Owned(other.to_vec()),
        }
    }
}

impl From<Vec<u8>> for FileBytes {
    fn from(v: Vec<u8>) -> Self {
        FileBytes::Owned(v)
    }
}
