//! Files a run writes besides the report, each in a format other tools read:
//!
//! * [`gmon`] — `-o FILE`: gmon.out for GNU gprof;
//! * [`collapsed`] — `--collapsed FILE`: folded stacks for flamegraph.pl / inferno;
//! * [`svg`] — `--svg FILE`: a flame graph, drawn by inferno;
//! * [`pprof`] — `--pprof FILE`: pprof's gzipped `profile.proto`;
//! * [`json`] — `--json FILE`: the whole run, for scripts;
//! * [`speedscope`] — `--speedscope FILE`: speedscope's file format, for its viewer;
//! * [`samples`] — `--samples FILE`: every sample in time order, a line each, for scripts;
//! * [`firefox`] — `--firefox FILE`: the Firefox Profiler's format, the run over time;
//!
//! ([`time_order`] names the samples in time order for the exports that keep the order)
//! and the report itself where `--report FILE` sends it.
//!
//! No export ever damages a file: the paths are checked before the program starts (an
//! unwritable path, the program itself, or two exports naming one file fail at once), and a
//! regular file is written to a temporary file beside it and renamed into place only when the
//! run has succeeded, so a refused, failed or killed run leaves what was there; the new file
//! gets the old one's mode and owner, and a symbolic link stays a link to the file written;
//! a link another user made in a sticky world-writable directory is not followed (as the
//! kernel's `fs.protected_symlinks` would not: profil resolves links itself).
//! Where a file cannot be replaced without changing it (its directory takes no new file, or
//! removes none, it has other hard links, or it is another user's), it is written in place as
//! `>` would, and so
//! are FIFOs and devices, which are never opened before the run is over. `-` (or a path naming
//! the file standard output already is, like `/dev/stdout`) writes to standard output; the
//! report and the program's output then go to standard error; a path naming standard error's
//! file (`/dev/stderr`) writes to standard error. Binary exports are not written to a terminal.

pub mod collapsed;
pub mod firefox;
pub mod gmon;
pub mod json;
pub mod pprof;
pub mod samples;
pub mod speedscope;
pub mod time_order;
pub mod svg;

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::cli::Args;
use crate::flat::FlatProfile;
use crate::profile::Outcome;
use crate::stacks::StackProfile;
use prof_objects::symbolize::{Sample, Symbolizer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// The report (`--report`).
    Report,
    Gmon,
    Collapsed,
    Svg,
    Pprof,
    Json,
    Speedscope,
    /// Every sample in time order (`--samples`).
    Samples,
    /// The Firefox Profiler's format (`--firefox`).
    Firefox,
    /// The run itself, for `--load` (`--save`).
    Saved,
}

impl Format {
    /// Not text: never written to a terminal (as gzip refuses to).
    fn is_binary(self) -> bool {
        matches!(self, Format::Gmon | Format::Pprof | Format::Saved)
    }
}

/// The call-graph arcs between the program's own functions, for gmon.out.
fn program_arcs(stacks: Option<&StackProfile>) -> Vec<gmon::Arc> {
    let Some(sp) = stacks else { return Vec::new() };
    let start = |f: usize| {
        let k = sp.functions[f].key;
        k.function.filter(|_| k.object == prof_objects::symbolize::PROGRAM)
    };
    sp.arcs()
        .into_iter()
        .filter_map(|((caller, callee), count)| Some(gmon::Arc { from_pc: start(caller)?, self_pc: start(callee)?, count }))
        .collect()
}

/// A finished run with its samples and stacks named: what every export is made from.
pub struct Analysis<'a> {
    pub run: &'a Outcome,
    pub flat: &'a FlatProfile,
    pub samples: &'a [Sample],
    pub symbolizer: &'a Symbolizer,
    pub stacks: Option<&'a StackProfile>,
    /// The processes the program started, where followed (`--children`).
    pub processes: &'a [crate::processes::ProcessAnalysis],
    /// The profile by source line (`--lines`).
    pub lines: Option<&'a prof_objects::lines::LineProfile>,
    /// Source frames of addresses, where lines were asked for (`--lines`, `--inline`): pprof
    /// then has a location per address with its lines.
    pub sources: Option<&'a prof_objects::lines::Sources>,
    /// Where the program waited (`--off-cpu`), most blocked time first; empty without it.
    pub waits: &'a [crate::waiting::Wait],
    /// `--diff`: the base run; `--collapsed` and `--svg` then write the difference.
    pub base: Option<&'a crate::compare::Base>,
    /// The program's samples by thread, named (Linux), most first.
    pub threads: &'a [crate::threads::ThreadView],
    /// The program's samples in time order, named, where an export keeps the order
    /// (`--samples`, `--speedscope`, `--firefox`) and the run has them (Linux).
    pub timeline: Option<&'a crate::exports::time_order::NamedTimeline>,
}

#[cfg(test)]
impl<'a> Analysis<'a> {
    /// The analysis of `run` with only its flat profile, names and stacks (tests of an export).
    pub(crate) fn bare(run: &'a Outcome, flat: &'a FlatProfile, symbolizer: &'a Symbolizer, stacks: Option<&'a StackProfile>) -> Analysis<'a> {
        let (processes, waits, threads) = (&[][..], &[][..], &[][..]);
        Analysis { run, flat, samples: &[], symbolizer, stacks, processes, lines: None, sources: None, waits, base: None, threads, timeline: None }
    }
}

#[cfg(test)]
impl Outcome {
    /// A run of `program` at 1 kHz that exited with 0, of `profile` (tests of an export).
    pub(crate) fn exited(program: &str, profile: crate::profile::Profile) -> Outcome {
        Outcome { program: program.into(), arguments: vec![], frequency_hz: 1000, profile, exit: crate::report::ExitKind::Exited(0), interpreters: Vec::new() }
    }
}

/// Where one export goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
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

/// The export files asked for, checked and ready to write.
pub struct Exports {
    targets: Vec<(Format, PathBuf, Target)>,
    /// What a saved run records besides the run: its program file, how stacks were recorded,
    /// whether children were followed.
    recording: (PathBuf, prof_core::sampler::CallGraph, bool),
}

/// An export file that cannot be written.
#[derive(Debug)]
pub struct ExportError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cannot write '{}': {}", self.path.display(), prof_objects::os_message(&self.error))
    }
}

/// Which file an export names, to find two naming the same one.
#[derive(Debug, PartialEq, Eq)]
enum FileKey {
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

/// Temporary file for `path`: hidden, beside it (so the rename stays on one filesystem).
fn temporary_for(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.profil-{}.tmp", std::process::id()))
}

/// Create the temporary file for `path` (new, never an existing one).
fn create_temporary(path: &Path) -> io::Result<(PathBuf, File)> {
    let tmp = temporary_for(path);
    let file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    Ok((tmp, file))
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
    fn check(path: &Path, program: &Path) -> io::Result<(Target, Option<FileKey>)> {
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
        let (tmp, _) = create_temporary(path)?;
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

    fn write(&self, bytes: &[u8]) -> io::Result<()> {
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
                let (tmp, mut file) = create_temporary(path)?;
                let written = file
                    .write_all(bytes)
                    .and_then(|()| keep_mode_and_owner(&file, old.as_ref()))
                    .and_then(|()| file.sync_all());
                drop(file);
                match written.and_then(|()| std::fs::rename(&tmp, path)) {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        // A group we are not in cannot be given to the new file: write the
                        // file itself, which keeps it.
                        match e.raw_os_error() {
                            Some(libc::EPERM) => open_in_place(path)?.write_all(bytes),
                            _ => Err(e),
                        }
                    }
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

impl Exports {
    /// Check every file the options name, before `program` runs: each must be writable, none
    /// may be the program itself, and no two may name the same file.
    pub fn create(args: &Args, program: &Path) -> Result<Exports, ExportError> {
        let wanted = [
            (Format::Report, &args.report),
            (Format::Gmon, &args.exports.gmon),
            (Format::Collapsed, &args.exports.collapsed),
            (Format::Svg, &args.exports.svg),
            (Format::Pprof, &args.exports.pprof),
            (Format::Json, &args.exports.json),
            (Format::Speedscope, &args.exports.speedscope),
            (Format::Samples, &args.exports.samples),
            (Format::Firefox, &args.exports.firefox),
            (Format::Saved, &args.exports.save),
        ];
        let mut targets = Vec::new();
        let mut seen = Vec::new();
        for (format, path) in wanted {
            let Some(path) = path else { continue };
            let fail = |error| ExportError { path: path.clone(), error };
            let (target, key) = Target::check(path, program).map_err(fail)?;
            let stream = match target {
                Target::Stdout => Some((1, "standard output")),
                Target::Stderr => Some((2, "standard error")),
                _ => None,
            };
            if let Some((fd, name)) = stream.filter(|_| format.is_binary()) {
                // SAFETY: isatty only asks about the descriptor.
                if unsafe { libc::isatty(fd) } == 1 {
                    return Err(fail(io::Error::other(format!(
                        "{name} is a terminal, and this export is binary (redirect it to a file or a pipe)"
                    ))));
                }
            }
            if let Some(key) = key {
                if seen.contains(&key) {
                    return Err(fail(io::Error::other("another export names the same file")));
                }
                seen.push(key);
            }
            targets.push((format, path.clone(), target));
        }
        Ok(Exports { targets, recording: (program.to_path_buf(), args.call_graph, args.children) })
    }

    /// The file a saved run names as its program, where it is not the file named to run (a
    /// script's: its interpreter, whose text the bins cover).
    pub fn record_program(&mut self, file: &Path) {
        self.recording.0 = file.to_path_buf();
    }

    /// Does an export go to standard output (so the report and the program's output must
    /// not)?
    pub fn uses_stdout(&self) -> bool {
        self.targets.iter().any(|t| t.0 != Format::Report && t.2 == Target::Stdout)
    }

    /// Where the report goes with these exports: kept for its file (`--report FILE`), on
    /// standard output with `--report -`, on standard error with `--report /dev/stderr`.
    /// Otherwise on standard error `beside_program` (profil runs a program, whose standard
    /// output stays the program's own, as under `time` and `strace`), and on standard output
    /// where no program's output is there (`--load`, `-p`, `-a`) unless an export takes it.
    pub fn report_out(&self, beside_program: bool) -> crate::report_out::ReportOut {
        use crate::report_out::ReportOut;
        match self.report_target() {
            Some(Target::Stdout) => ReportOut::new(false),
            Some(Target::Stderr) => ReportOut::new(true),
            Some(_) => ReportOut::kept_for_file(),
            None => ReportOut::new(beside_program || self.uses_stdout()),
        }
    }

    /// Where `--report` sends the report, if it names a place.
    fn report_target(&self) -> Option<&Target> {
        self.targets.iter().find(|t| t.0 == Format::Report).map(|t| &t.2)
    }

    /// Does the report go to a file of its own (`--report FILE`), rather than stream to
    /// standard error (or output) as the program runs?
    pub fn takes_report(&self) -> bool {
        self.report_target().is_some_and(|t| !matches!(t, Target::Stdout | Target::Stderr))
    }

    /// Write every export of the finished run, and `report` where `--report` sends it.
    pub fn write(self, a: &Analysis, report: &[u8]) -> Result<(), ExportError> {
        let run = a.run;
        for (format, path, target) in self.targets {
            if format == Format::Report && matches!(target, Target::Stdout | Target::Stderr) {
                // Streamed as the run went.
                continue;
            }
            let bytes = match format {
                Format::Report => Ok(report.to_vec()),
                Format::Gmon => {
                    let p = &run.profile;
                    Ok(gmon::render(&p.image_samples, p.data.start_addr, run.frequency_hz, &program_arcs(a.stacks)))
                }
                Format::Collapsed => match a.base {
                    Some(base) => collapsed::render_diff(a, base).map(String::into_bytes),
                    None => Ok(collapsed::render_all(a).into_bytes()),
                },
                Format::Svg => match a.base {
                    Some(base) => svg::render_diff(a, base),
                    None => svg::render_all(a),
                },
                Format::Pprof => match a.base {
                    Some(base) => pprof::render_diff(a, base),
                    None => pprof::render(a),
                },
                Format::Json => Ok(json::render(a).into_bytes()),
                Format::Speedscope => Ok(speedscope::render(a).into_bytes()),
                Format::Samples => Ok(a.timeline.map(samples::render).unwrap_or_else(|| format!("{}\n", samples::HEADER)).into_bytes()),
                Format::Firefox => Ok(firefox::render(a, path.extension().is_some_and(|e| e == "gz"))),
                Format::Saved => Ok(crate::saved::render(run, &self.recording.0, self.recording.1, self.recording.2)),
            };
            bytes.and_then(|b| target.write(&b)).map_err(|error| ExportError { path, error })?;
        }
        Ok(())
    }
}
