//! Reading a file with a bound: every file profil and the samplers read (kernel symbols, saved
//! runs, objects, `/proc` files, the `prof:` files) goes through here, so no input can make
//! them read without end (`/dev/zero`, `/dev/urandom`), wait for ever (a FIFO without a
//! writer) or take more memory than what it can be needs (a file far too large).
//!
//! A path must name a regular file (through links); anything else is one error naming what it
//! is. `/proc` files say they are empty and are regular: for them the bound is what stops.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// What a file that is not a regular one is, in words.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Open `path` for reading, a regular file only. The open itself never waits (a FIFO would
/// wait for a writer); a device or a FIFO is named and refused before anything is read.
pub fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let t = file.metadata()?.file_type();
    if !t.is_file() {
        let what = kind_of(t);
        let error = match t.is_dir() {
            true => io::Error::from_raw_os_error(libc::EISDIR),
            false => io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}, not a file")),
        };
        return Err(error);
    }
    Ok(file)
}

/// A file larger than `limit` bytes, said as the error.
fn too_large(limit: u64) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("it is larger than {}, more than such a file can be", size_text(limit)))
}

/// `bytes` as people say sizes (`64 MiB`, `4 KiB`).
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The bytes of the regular file at `path`, at most `limit` of them: a larger file (by its
/// size, or by what it gives, for `/proc` files that say they are empty) is an error.
pub fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Err(too_large(limit));
    }
    read_at_most(file, limit)
}

/// The bytes of the regular file or the stream (a pipe, a FIFO: `<(zcat run.gz)`) at `path`,
/// at most `limit` of them, as [`read`] bounds them. A FIFO with no writer reads as empty,
/// never waits for one; a stream is read to its end, as `cat` reads it.
pub fn read_file_or_stream(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    match open_regular(path) {
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            // Opened as open_regular opens: without waiting for a writer.
            let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
            if !file.metadata()?.file_type().is_fifo() {
                return Err(e);
            }
            // Read as a pipe is read: waiting for data, to the writers' end.
            // SAFETY: fcntl on a descriptor this function owns.
            let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
            // SAFETY: as above.
            if flags < 0 || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
                return Err(io::Error::last_os_error());
            }
            read_at_most(file, limit)
        }
        Err(e) => Err(e),
        Ok(_) => read(path, limit),
    }
}

/// At most `limit` bytes from `reader`, to its end: more is an error. For files whose type
/// says nothing (a Redox scheme's), opened by the caller.
pub fn read_at_most(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// [`read`], as text (invalid UTF-8 is an error, as `std::fs::read_to_string`'s).
pub fn read_to_string(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read(path, limit)?).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not text (UTF-8)"))
}

/// Bounds for the files of `/proc` (Linux) and their Redox counterparts: far above what the
/// kernel writes there, far below what would hurt.
pub mod proc_limits {
    /// A line or two: `stat`, `comm`, `syscall`, `schedstat`, a `sys` knob.
    pub const SMALL: u64 = 64 << 10;
    /// `cmdline` (the kernel bounds arguments far lower).
    pub const CMDLINE: u64 = 4 << 20;
    /// A process's `maps` (65,530 mappings at most by default, under 128 bytes each).
    pub const MAPS: u64 = 64 << 20;
    /// `/proc/kallsyms` or a kallsyms copy (about 20 MB with every module loaded).
    pub const KALLSYMS: u64 = 256 << 20;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_a_fifo_and_a_directory_are_named_and_never_read() {
        let e = read(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(e.to_string(), "it is a character device, not a file");
        let dir = std::env::temp_dir().join(format!("bounded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer: a plain open would wait for ever.
        assert_eq!(read(&fifo, 1 << 20).unwrap_err().to_string(), "it is a FIFO, not a file");
        assert_eq!(read(&dir, 1 << 20).unwrap_err().raw_os_error(), Some(libc::EISDIR));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stream_is_read_to_its_end_and_a_fifo_without_a_writer_is_empty() {
        let dir = std::env::temp_dir().join(format!("bounded-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read_file_or_stream(&fifo, 1 << 20).unwrap(), b"");
        // A pipe, as `<(zcat run.gz)` gives one (/dev/fd/63): its writer writes in pieces,
        // slower than the reader, and closes; all of it is read, to its end.
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the write end, owned by the thread from here on.
        let mut w = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) };
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            for _ in 0..4 {
                w.write_all(&[b'y'; 3000]).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let bytes = read_file_or_stream(Path::new(&format!("/proc/self/fd/{}", fds[0])), 1 << 20).unwrap();
        writer.join().unwrap();
        // SAFETY: the read end, closed once.
        unsafe { libc::close(fds[0]) };
        assert_eq!(bytes.len(), 12000);
        // Bounded as a file is.
        let file = dir.join("file");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read_file_or_stream(&file, 3).unwrap(), b"abc");
        assert_eq!(read_file_or_stream(&file, 2).unwrap_err().to_string(), "it is larger than 2 bytes, more than such a file can be");
        assert_eq!(read_file_or_stream(Path::new("/dev/zero"), 10).unwrap_err().to_string(), "it is a character device, not a file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_past_the_bound_is_refused_by_its_size_or_by_what_it_gives() {
        let dir = std::env::temp_dir().join(format!("bounded-size-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("big");
        std::fs::write(&file, vec![b'x'; 4097]).unwrap();
        assert_eq!(read(&file, 4096).unwrap_err().to_string(), "it is larger than 4 KiB, more than such a file can be");
        assert_eq!(read(&file, 4097).unwrap().len(), 4097);
        std::fs::remove_dir_all(&dir).unwrap();
        // /proc files say they are empty: what they give is counted.
        let maps = Path::new("/proc/self/maps");
        assert_eq!(std::fs::metadata(maps).unwrap().len(), 0);
        assert!(read(maps, 16).unwrap_err().to_string().starts_with("it is larger than 16 bytes"));
        assert!(read_to_string(maps, proc_limits::MAPS).unwrap().contains("[stack]"));
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(size_text(256 << 20), "256 MiB");
        assert_eq!(size_text(4 << 30), "4 GiB");
        assert_eq!(size_text(100), "100 bytes");
    }
}
