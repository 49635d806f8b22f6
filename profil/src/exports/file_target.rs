//! Where an export goes, and writing it there without damaging any file: a path checked
//! before the program runs ([`Target::check`]: writable, not the program, not another
//! export's file), then written when the run is over ([`Target::write`]). A regular file is
//! written to a temporary file beside it (`tempfile`'s) and renamed over it, with the old
//! file's mode and owner, so a failed or killed run leaves what was there; a symbolic link
//! stays a link to the file written, and one another user made in a sticky world-writable
//! directory is not followed (as the kernel's `fs.protected_symlinks` would not: profil
//! resolves links itself). A file that cannot be replaced without changing it (its
//! directory takes no new file, or removes none; other hard links; another user's), a FIFO
//! or a device is written in place, as `>` would, and only when the run is over.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Where one export goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// Standard output.
    Stdout,
    /// Standard error (a path naming its file, as `/dev/stderr` does).
    Stderr,
    /// A regular file or a new one: written beside it, then renamed over it; an existing
    /// file's mode and owner are given to the new one.
    Replace(PathBuf),
    /// Written in place, as `>` would: a FIFO or a device (opened only when the run is over,
    /// never probed: a probe would end a FIFO reader's input), or a regular file that cannot
    /// be replaced without changing it (its directory refuses new files, it has other hard
    /// links, or it is another user's).
    InPlace(PathBuf),
}

/// Which file an export names, to find two naming the same one.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FileKey {
    Existing(u64, u64),
    /// A file to be created: its directory (resolved) and name.
    New(PathBuf),
}

fn new_file_key(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.join(path.file_name().unwrap_or_default())
}

/// The file behind `path` or `fd`, as (device, inode).
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// The file behind descriptor `fd` (1: standard output, 2: standard error).
fn fd_identity(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: libc::stat is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat only writes the stat buffer.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev as u64, st.st_ino as u64))
}

fn stdout_identity() -> Option<(u64, u64)> {
    fd_identity(1)
}

/// A new temporary file for `path`: hidden, beside it (so the rename stays on one
/// filesystem), named by profil's pid (no randomness asked of the OS), made as `>` makes a
/// new file (0666 less the umask; never an existing file); removed when dropped unless
/// persisted over `path`.
fn temporary_for(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Made by our own open (make_in), so its errors keep their errno, which the rules below
    // go by.
    tempfile::Builder::new()
        .prefix(&format!(".{name}.profil-{}", std::process::id()))
        .suffix(".tmp")
        .rand_bytes(0)
        .make_in(dir, |tmp| OpenOptions::new().write(true).create_new(true).open(tmp))
}

/// The file a path names, through every symbolic link in it (a dangling one names the file
/// it would create), as an absolute path without links: an export replaces that file and
/// leaves the links as they are. A link the kernel's `fs.protected_symlinks` would not follow
/// is refused (see [`may_follow`]): profil resolves links itself, so the kernel's rule would
/// never apply, and root would write through another user's link.
fn through_links(path: &Path) -> io::Result<PathBuf> {
    use std::collections::VecDeque;
    use std::path::Component;
    let mut resolved = std::env::current_dir()?;
    let mut pending: VecDeque<PathBuf> = path.components().map(|c| PathBuf::from(c.as_os_str())).collect();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        match part.components().next() {
            Some(Component::RootDir) => resolved = PathBuf::from("/"),
            Some(Component::ParentDir) => {
                resolved.pop();
            }
            Some(Component::Normal(name)) => {
                let next = resolved.join(name);
                let link = match std::fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() => meta,
                    _ => {
                        resolved = next;
                        continue;
                    }
                };
                // As the kernel does, give up on more than 40 links (a loop).
                links += 1;
                if links > 40 {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                may_follow(&resolved, &link)?;
                // /proc's links are the kernel's own (a descriptor's `pipe:[N]`): no path
                // names their file; the kernel follows them when the file is opened.
                if resolved.starts_with("/proc") {
                    resolved = next;
                    continue;
                }
                let target = std::fs::read_link(&next)?;
                for (i, c) in target.components().enumerate() {
                    pending.insert(i, PathBuf::from(c.as_os_str()));
                }
            }
            _ => {}
        }
    }
    Ok(resolved)
}

/// May profil follow the symbolic link `link` in directory `dir`? Not where the kernel's
/// `fs.protected_symlinks` forbids it: in a sticky world-writable directory (`/tmp`) a link is
/// followed only by its owner, or where the directory's owner owns it too. Applied whatever
/// the sysctl says (and on Redox, which has none).
fn may_follow(dir: &Path, link: &std::fs::Metadata) -> io::Result<()> {
    let dir_meta = std::fs::metadata(dir)?;
    // The sticky bit and others' write (S_ISVTX | S_IWOTH, as POSIX numbers them everywhere).
    const STICKY_AND_WORLD_WRITABLE: u32 = 0o1002;
    let shared = dir_meta.mode() & STICKY_AND_WORLD_WRITABLE == STICKY_AND_WORLD_WRITABLE;
    // SAFETY: geteuid has no preconditions.
    let follower = unsafe { libc::geteuid() };
    if shared && link.uid() != follower && link.uid() != dir_meta.uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "it is a symbolic link of another user (uid {}) in a sticky world-writable directory, which is not followed \
                 (as the kernel's fs.protected_symlinks does not)",
                link.uid()
            ),
        ));
    }
    Ok(())
}

/// May this process write `path` (the kernel's rules for our effective ids)?
fn may_write(path: &Path) -> io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid C string; faccessat only reads it.
    match unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Is this a file that an export must be written into in place (a FIFO, a device)?
fn is_special(meta: &std::fs::Metadata) -> bool {
    let t = meta.file_type();
    t.is_fifo() || t.is_char_device() || t.is_block_device()
}

impl Target {
    /// Decide where `path` goes and prove now that it can be written, touching no existing
    /// file and opening no FIFO or device.
    /// Also the file's key for finding two exports of one file (`None`: any number may write
    /// it, as `/dev/null`).
    pub(super) fn check(path: &Path, program: &Path) -> io::Result<(Target, Option<FileKey>)> {
        let (target, id) = Target::check_file(path, program)?;
        let key = match (&target, id) {
            (Target::InPlace(p), _) if std::fs::metadata(p).is_ok_and(|m| m.file_type().is_char_device()) => None,
            (_, Some((dev, ino))) => Some(FileKey::Existing(dev, ino)),
            (_, None) => Some(FileKey::New(new_file_key(path))),
        };
        Ok((target, key))
    }

    fn check_file(path: &Path, program: &Path) -> io::Result<(Target, Option<(u64, u64)>)> {
        if path.as_os_str() == "-" {
            return Ok((Target::Stdout, stdout_identity()));
        }
        // The kernel follows links (/dev/stdout's too); a regular file is then replaced at the
        // path the links lead to, and a dangling link creates the file it names.
        let id = std::fs::metadata(path).ok().map(|meta| identity(&meta));
        if id.is_some() && id == stdout_identity() {
            return Ok((Target::Stdout, id));
        }
        if id.is_some() && id == fd_identity(2) {
            return Ok((Target::Stderr, id));
        }
        let file = through_links(path)?;
        match std::fs::metadata(&file) {
            Ok(meta) => {
                let id = identity(&meta);
                if std::fs::metadata(program).is_ok_and(|p| identity(&p) == id) {
                    return Err(io::Error::other("it is the program to profile"));
                }
                if meta.is_dir() {
                    return Err(io::Error::from_raw_os_error(libc::EISDIR));
                }
                if meta.file_type().is_socket() {
                    return Err(io::Error::other("it is a socket"));
                }
                if is_special(&meta) {
                    may_write(&file)?;
                    return Ok((Target::InPlace(file), Some(id)));
                }
                // A regular file: replaced, unless that would change it (other hard links,
                // another owner) or its directory takes no new file; then written in place.
                // SAFETY: geteuid has no preconditions.
                let ours = meta.uid() == unsafe { libc::geteuid() } || unsafe { libc::geteuid() } == 0;
                let target = match (meta.nlink() == 1 && ours).then(|| Target::replacing(&file)) {
                    Some(Ok(replace)) => replace,
                    Some(Err(e)) if !matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM | libc::EROFS)) => {
                        return Err(e)
                    }
                    _ => {
                        may_write(&file)?;
                        Target::InPlace(file)
                    }
                };
                Ok((target, Some(id)))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((Target::replacing(&file)?, None)),
            Err(e) => Err(e),
        }
    }

    /// A file written beside `path` and renamed over it; proven possible now by creating
    /// (and removing) the temporary file.
    fn replacing(path: &Path) -> io::Result<Target> {
        // Kept, to be removed here: whether it can be says how the file is written.
        let (_, tmp) = temporary_for(path)?.keep().map_err(|e| e.error)?;
        match std::fs::remove_file(&tmp) {
            Ok(()) => Ok(Target::Replace(path.to_path_buf())),
            // A directory that takes new files but lets none go (append-only, `chattr +a`;
            // Redox's ramfs): nothing put beside a file can be renamed over it either, so the
            // file is written where it is; the probe cannot be removed, and is named.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES | libc::ENOSYS)) => {
                crate::report_out::to_stderr(format_args!(
                    "profil: warning: {} is written in place: its directory lets no file be removed (nor {}, made to find that out)",
                    path.display(),
                    tmp.display()
                ));
                Ok(Target::InPlace(path.to_path_buf()))
            }
            Err(e) => Err(e),
        }
    }

    pub(super) fn write(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Target::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(bytes)?;
                out.flush()
            }
            Target::Stderr => {
                let mut err = io::stderr().lock();
                err.write_all(bytes)?;
                err.flush()
            }
            // Resolved again: a link put along the path since the check is followed only
            // where the check would have followed it.
            Target::InPlace(path) => open_in_place(&through_links(path)?)?.write_all(bytes),
            Target::Replace(path) => {
                let path = &through_links(path)?;
                // The file it replaces, if any: its mode and owner go to the new one.
                let old = std::fs::metadata(path).ok();
                let mut tmp = temporary_for(path)?;
                let written = tmp
                    .write_all(bytes)
                    .and_then(|()| keep_mode_and_owner(tmp.as_file(), old.as_ref()))
                    .and_then(|()| tmp.as_file().sync_all());
                // The temporary file goes with `tmp` (or the persist error's) where anything fails.
                match written.and_then(|()| tmp.persist(path).map(drop).map_err(|e| e.error)) {
                    Ok(()) => Ok(()),
                    // A group we are not in cannot be given to the new file: write the file
                    // itself, which keeps it.
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => open_in_place(path)?.write_all(bytes),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// Give the new file the mode and owner of the one it replaces.
fn keep_mode_and_owner(file: &File, old: Option<&std::fs::Metadata>) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Some(old) = old else { return Ok(()) };
    file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
    let now = file.metadata()?;
    if (now.uid(), now.gid()) != (old.uid(), old.gid()) {
        std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()))?;
    }
    Ok(())
}

/// Open `path` for writing in place, as `>` does (a regular file is truncated). A FIFO's open
/// waits for a reader; it is made without blocking, and retried, so a signal (Ctrl-C,
/// SIGTERM) ends the wait: the export is then not written.
fn open_in_place(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let signals = crate::interrupt::count();
    loop {
        // As `>` does: a file gone (or never there, in a directory that removes nothing) is made.
        let opened = OpenOptions::new().write(true).create(true).custom_flags(libc::O_NONBLOCK).open(path);
        match opened {
            Ok(file) => {
                // Blocking writes from here on, and a regular file starts empty.
                use std::os::fd::AsRawFd;
                // SAFETY: our own descriptor; F_GETFL/F_SETFL only change its status flags.
                unsafe {
                    let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
                    libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
                }
                if file.metadata()?.is_file() {
                    file.set_len(0)?;
                }
                return Ok(file);
            }
            // A FIFO without a reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) => {
                if crate::interrupt::count() != signals {
                    return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted while waiting for a reader of the FIFO"));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

