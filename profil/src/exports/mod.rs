//! Files a run writes besides the report, each in a format other tools read:
//!
//! * [`gmon`] — `-o FILE`: gmon.out for GNU gprof;
//! * [`collapsed`] — `--collapsed FILE`: folded stacks for flamegraph.pl / inferno;
//! * [`svg`] — `--svg FILE`: a flame graph, drawn by inferno;
//! * [`pprof`] — `--pprof FILE`: pprof's gzipped `profile.proto`;
//! * [`json`] — `--json FILE`: the whole run, for scripts.
//!
//! No export ever damages a file: the paths are checked before the program starts (an
//! unwritable path, the program itself, or two exports naming one file fail at once), and a
//! regular file is written to a temporary file beside it and renamed into place only when the
//! run has succeeded, so a refused, failed or killed run leaves what was there. `-` (or a path
//! naming the file standard output already is, like `/dev/stdout`) writes to standard output;
//! the report and the program's output then go to standard error.

pub mod collapsed;
pub mod gmon;
pub mod json;
pub mod pprof;
pub mod svg;

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::cli::Args;
use crate::flat::FlatProfile;
use crate::profile::Outcome;
use crate::stacks::StackProfile;
use crate::symbolize::{Sample, Symbolizer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Gmon,
    Collapsed,
    Svg,
    Pprof,
    Json,
}

/// The call-graph arcs between the program's own functions, for gmon.out.
fn program_arcs(stacks: Option<&StackProfile>) -> Vec<gmon::Arc> {
    let Some(sp) = stacks else { return Vec::new() };
    let start = |f: usize| {
        let k = sp.functions[f].key;
        k.function.filter(|_| k.object == crate::symbolize::PROGRAM)
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
}

/// Where one export goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Standard output.
    Stdout,
    /// A regular file or a new one: written beside it, then renamed over it.
    Replace(PathBuf),
    /// An existing file that is not a regular file (`/dev/null`, a FIFO): written in place.
    InPlace(PathBuf),
}

/// The export files asked for, checked and ready to write.
pub struct Exports {
    targets: Vec<(Format, PathBuf, Target)>,
}

/// An export file that cannot be written.
#[derive(Debug)]
pub struct ExportError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cannot write '{}': {}", self.path.display(), crate::run::os_message(&self.error))
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

fn stdout_identity() -> Option<(u64, u64)> {
    // SAFETY: fstat only writes the stat buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(1, &mut st) } == 0).then(|| (st.st_dev as u64, st.st_ino as u64))
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

impl Target {
    /// Decide where `path` goes and prove now that it can be written, touching no existing file.
    fn check(path: &Path, program: &Path) -> io::Result<(Target, Option<(u64, u64)>)> {
        if path.as_os_str() == "-" {
            return Ok((Target::Stdout, stdout_identity()));
        }
        match std::fs::metadata(path) {
            Ok(meta) => {
                let id = identity(&meta);
                if Some(id) == stdout_identity() {
                    return Ok((Target::Stdout, Some(id)));
                }
                if std::fs::metadata(program).is_ok_and(|p| identity(&p) == id) {
                    return Err(io::Error::other("it is the program to profile"));
                }
                if meta.is_file() {
                    Ok((Target::replacing(path)?, Some(id)))
                } else {
                    // Opening proves access (a directory fails here: "Is a directory").
                    OpenOptions::new().write(true).open(path)?;
                    Ok((Target::InPlace(path.to_path_buf()), Some(id)))
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((Target::replacing(path)?, None)),
            Err(e) => Err(e),
        }
    }

    /// A file written beside `path` and renamed over it; proven possible now by creating
    /// (and removing) the temporary file.
    fn replacing(path: &Path) -> io::Result<Target> {
        let (tmp, _) = create_temporary(path)?;
        std::fs::remove_file(tmp)?;
        Ok(Target::Replace(path.to_path_buf()))
    }

    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Target::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(bytes)?;
                out.flush()
            }
            Target::InPlace(path) => OpenOptions::new().write(true).open(path)?.write_all(bytes),
            Target::Replace(path) => {
                let (tmp, mut file) = create_temporary(path)?;
                let written = file.write_all(bytes).and_then(|()| file.sync_all());
                drop(file);
                match written.and_then(|()| std::fs::rename(&tmp, path)) {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        Err(e)
                    }
                }
            }
        }
    }
}

impl Exports {
    /// Check every file the options name, before `program` runs: each must be writable, none
    /// may be the program itself, and no two may name the same file.
    pub fn create(args: &Args, program: &Path) -> Result<Exports, ExportError> {
        let wanted = [
            (Format::Gmon, &args.gmon),
            (Format::Collapsed, &args.collapsed),
            (Format::Svg, &args.svg),
            (Format::Pprof, &args.pprof),
            (Format::Json, &args.json),
        ];
        let mut targets = Vec::new();
        let mut seen = Vec::new();
        for (format, path) in wanted {
            let Some(path) = path else { continue };
            let fail = |error| ExportError { path: path.clone(), error };
            let (target, id) = Target::check(path, program).map_err(fail)?;
            let key = match id {
                Some((dev, ino)) => FileKey::Existing(dev, ino),
                None => FileKey::New(new_file_key(path)),
            };
            if seen.contains(&key) {
                return Err(fail(io::Error::other("another export names the same file")));
            }
            seen.push(key);
            targets.push((format, path.clone(), target));
        }
        Ok(Exports { targets })
    }

    /// Does an export go to standard output (so the report must not)?
    pub fn uses_stdout(&self) -> bool {
        self.targets.iter().any(|t| t.2 == Target::Stdout)
    }

    /// Write every export of the finished run.
    pub fn write(self, a: &Analysis) -> Result<(), ExportError> {
        let run = a.run;
        for (format, path, target) in self.targets {
            let bytes = match format {
                Format::Gmon => {
                    let p = &run.profile;
                    Ok(gmon::render(&p.image_samples, p.data.start_addr, run.frequency_hz, &program_arcs(a.stacks)))
                }
                Format::Collapsed => Ok(collapsed::render(&run.program, a.flat, a.stacks).into_bytes()),
                Format::Svg => svg::render(&run.program, a.flat, a.stacks),
                Format::Pprof => pprof::render(a),
                Format::Json => Ok(json::render(a).into_bytes()),
            };
            bytes.and_then(|b| target.write(&b)).map_err(|error| ExportError { path, error })?;
        }
        Ok(())
    }
}
