//! How every mode ends: why a run produced no report ([`RunError`]), how profil exits
//! ([`Ending`]), the report filters applied, the exports written after the report.

use std::io;

use prof_core::ProfError;
use prof_objects::os_message;

use crate::cli::Args;
use crate::exports::{Analysis, Exports};
use crate::profile::Outcome;
use crate::report_out::ReportOut;

/// Why a run produced no report: what failed, with its cause (printed after
/// `Profil Error: `).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program (or its `#!` script's interpreter) cannot be executed: the system's reason.
    #[error("Cannot execute '{name}': {}", os_message(source))]
    Execute { name: String, #[source] source: io::Error },
    /// The program cannot be executed: its `#!` line's reason, or no permission to execute
    /// it or its interpreter.
    #[error("Cannot execute '{name}': {why}")]
    Launch { name: String, why: String },
    /// The program's file (or its script's interpreter, `interpreter`) is no program profil
    /// can run.
    #[error("{}", not_a_program(name, interpreter.as_deref(), source))]
    NotAProgram { name: String, interpreter: Option<std::path::PathBuf>, #[source] source: prof_objects::elf::ElfError },
    /// Set-user-ID and other programs the kernel does not let this user profile.
    #[error("{0}")]
    Privilege(String),
    /// An export file cannot be written (checked before the run, or written after it).
    #[error(transparent)]
    Export(#[from] crate::exports::ExportError),
    /// `--kernel FILE` cannot name the kernel's samples.
    #[error("{0}")]
    Kernel(String),
    /// The report filters cannot be applied to this run (`--time` of a run without times).
    #[error("{0}")]
    Filter(String),
    /// A file profil must read (`-p PID FILE`) cannot be read.
    #[error("Cannot read '{path}': {}", os_message(source))]
    Read { path: String, #[source] source: io::Error },
    /// The sampler could not be set up.
    #[error("{}", os_message(.0))]
    Sampler(#[source] io::Error),
    /// `-p PID`: the system cannot say the process's program file, and none was named.
    #[error("name the program file of pid {pid}: profil -p {pid} PROGRAM")]
    NoProgramFile { pid: u32 },
    /// `-p PID`: another user's process.
    #[error("Permission denied: pid {pid} is another user's process; only root or its owner may profile it")]
    NotOurs { pid: u32 },
    /// `-p PID`: the kernel hides the process's program from this user.
    #[error("Permission denied: cannot read {}, pid {pid}'s program (the kernel keeps it from this user)", path.display())]
    HiddenProgram { pid: u32, path: std::path::PathBuf },
    /// `-a` is not allowed for this user: why, and what would allow it.
    #[error("{0}")]
    SystemWide(String),
    /// A saved run (`--load`, `--diff`) that cannot be used as asked.
    #[error(transparent)]
    Saved(#[from] SavedError),
    /// Profiling failed; the message is the spec's.
    #[error("{0}")]
    Profiling(ProfError),
    /// Profiling failed (the spec's message), and what the user can do about it.
    #[error("{error}\n{hint}")]
    Refused { error: ProfError, hint: String },
    /// The child already printed the error (the spec's 0xCC protocol).
    #[error("reported by the child")]
    Reported,
    /// The report could not be written (its message says so); the exports were.
    #[error("{}", os_message(.0))]
    ReportLost(#[source] io::Error),
    /// `--fail-above`: a function's share grew beyond the gate; the report and the exports
    /// were written (the message names them).
    #[error("{0}")]
    Regressed(String),
    #[error("{}", os_message(.0))]
    Io(#[source] io::Error),
}

/// A saved run that cannot be used as asked (`verb`: what profil would do with it; `role`:
/// which run it is, "saved" or "base").
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error("{flag} does not go with '{}', a system-wide run (-a): it is of every process, not one program", file.display())]
    SystemWide { file: std::path::PathBuf, flag: String },
    #[error("Cannot read '{}': {}", file.display(), os_message(source))]
    Read { file: std::path::PathBuf, #[source] source: io::Error },
    #[error("'{}' is not a run profil can {verb}: {why}", file.display())]
    NotARun { file: std::path::PathBuf, verb: String, why: String },
    #[error(
        "'{}' is another build than the program of the {role} run (build-id {build_id}), whose samples it would name wrongly (--sysroot DIR and --debug-dir DIR look for that build under DIR)",
        path.display()
    )]
    OtherBuild { path: std::path::PathBuf, role: String, build_id: String },
    #[error("Cannot read '{}', the program of the {role} run: {source} (--sysroot DIR looks for it under DIR)", path.display())]
    Program { path: std::path::PathBuf, role: String, #[source] source: prof_objects::elf::ElfError },
}

/// Why the program file `name` (or its script's `interpreter`) is no program to run.
fn not_a_program(name: &str, interpreter: Option<&std::path::Path>, e: &prof_objects::elf::ElfError) -> String {
    match (e, interpreter) {
        (prof_objects::elf::ElfError::Elf32, _) => format!("'{name}': 32-bit ELF executables are not supported"),
        (other, None) => format!("'{name}' is {other}"),
        (other, Some(interpreter)) => format!("'{name}' is a script whose interpreter '{}' is {other}", interpreter.display()),
    }
}

impl From<io::Error> for RunError {
    fn from(e: io::Error) -> Self {
        RunError::Io(e)
    }
}

impl From<ProfError> for RunError {
    fn from(e: ProfError) -> Self {
        RunError::Profiling(e)
    }
}

/// How profil ends once the report and the exports are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// With this exit status (the program's, or 0 for an attached process).
    Code(u8),
    /// The program died of this signal: profil ends the same way (`interrupt::end_like`).
    Signal(i32),
}

/// The run as the report filters keep it (`--comm`, `--pids`, `--tid`, `--dso`, `--time`), with a note
/// on standard error of what they kept; `program_file` holds the program's own samples. With
/// it, the program's samples the flat profile's shares are of, where they are not those kept
/// ([`crate::filter::Kept::whole`]).
pub(crate) fn filtered<'a>(args: &Args, run: &'a Outcome, program_file: &str) -> Result<(std::borrow::Cow<'a, Outcome>, Option<u64>), RunError> {
    if args.filter.is_empty() {
        return Ok((std::borrow::Cow::Borrowed(run), None));
    }
    let mut kept = run.clone();
    let whole = match crate::filter::apply(&mut kept, program_file, &args.filter).map_err(RunError::Filter)? {
        Some(k) => {
            crate::report_out::to_stderr(format_args!("{}", k.note));
            k.whole
        }
        None => None,
    };
    Ok((std::borrow::Cow::Owned(kept), whole))
}

/// How profil ends after reporting a run it did not run (`--load`, `-a`): 0, or 1 where the
/// report was lost (said here; the exports were written).
pub(crate) fn ending_of_report(reported: Result<(), RunError>) -> Result<Ending, RunError> {
    match reported {
        Ok(()) => Ok(Ending::Code(0)),
        Err(RunError::ReportLost(e)) => {
            crate::report_out::to_stderr(format_args!("Profil Error: {}", os_message(&e)));
            Ok(Ending::Code(1))
        }
        Err(e) => Err(e),
    }
}

/// The exports written after the report (`out`, which keeps it for `--report`): an error of
/// each said, the exports' first; the report's is `ReportLost`.
pub(crate) fn write_exports(exports: Exports, analysis: &Analysis, out: &mut ReportOut) -> Result<(), RunError> {
    let written = out.error();
    let exported = exports.write(analysis, out.kept());
    if let (Err(_), Err(e)) = (&exported, &written) {
        crate::report_out::to_stderr(format_args!("Profil Error: {e}"));
    }
    exported?;
    written.map_err(RunError::ReportLost)
}

/// The one warning for the objects of a saved run that could not be read here: those not
/// found, and those found only in another build than the run's. `None` where all were read.
pub(crate) fn unread_objects_warning(objects: &[prof_objects::symbolize::Object]) -> Option<String> {
    let unread = objects.iter().filter(|o| o.file.is_none() && (o.path.starts_with('/') || o.other_build.is_some()));
    let (other, missing): (Vec<_>, Vec<_>) = unread.partition(|o| o.other_build.is_some());
    let mut parts = Vec::new();
    if !missing.is_empty() {
        let paths: Vec<&str> = missing.iter().map(|o| o.path.as_str()).collect();
        let what = if paths.len() == 1 { "a file" } else { "files" };
        parts.push(format!("cannot read {what} of the saved run: {}", paths.join(", ")));
    }
    if !other.is_empty() {
        let paths: Vec<String> = other.iter().filter_map(|o| o.other_build.as_ref()).map(|p| p.display().to_string()).collect();
        let what = if paths.len() == 1 { "a file is" } else { "files are" };
        parts.push(format!("{what} another build than the saved run's: {}", paths.join(", ")));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "profil: warning: {}; {} samples keep their addresses (--sysroot DIR finds files under DIR, --debug-dir DIR by build-id)",
            parts.join("; "),
            if missing.len() + other.len() == 1 { "its" } else { "their" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_objects::elf::ElfError;
    use std::error::Error;

    /// Each error says what failed, in the words the spec and the README give, and keeps its
    /// cause for a caller to look at.
    #[test]
    fn errors_say_what_failed_and_keep_their_cause() {
        let gone = RunError::Execute { name: "./prog".into(), source: io::Error::from_raw_os_error(libc::ENOENT) };
        assert_eq!(gone.to_string(), "Cannot execute './prog': No such file or directory");
        let cause = gone.source().and_then(|s| s.downcast_ref::<io::Error>()).and_then(io::Error::raw_os_error);
        assert_eq!(cause, Some(libc::ENOENT));
        let elf32 = RunError::NotAProgram { name: "old".into(), interpreter: None, source: ElfError::Elf32 };
        assert_eq!(elf32.to_string(), "'old': 32-bit ELF executables are not supported");
        let script = RunError::NotAProgram { name: "run.sh".into(), interpreter: Some("/bin/x".into()), source: ElfError::NotElf };
        assert_eq!(script.to_string(), "'run.sh' is a script whose interpreter '/bin/x' is not an ELF executable");
        assert!(matches!(script.source().and_then(|s| s.downcast_ref::<ElfError>()), Some(ElfError::NotElf)));
        let busy = RunError::Refused { error: ProfError::Busy, hint: "  Held by pid 1".into() };
        assert_eq!(busy.to_string(), "Already profiling another process\n  Held by pid 1");
        let saved: RunError = SavedError::Program { path: "/bin/fib".into(), role: "base".into(), source: ElfError::NotElf }.into();
        assert_eq!(saved.to_string(), "Cannot read '/bin/fib', the program of the base run: not an ELF executable (--sysroot DIR looks for it under DIR)");
        assert!(saved.source().is_some_and(|s| s.downcast_ref::<ElfError>().is_some()));
        let export: RunError = crate::exports::ExportError { path: "/x/p.json".into(), error: io::Error::from_raw_os_error(libc::EACCES) }.into();
        assert_eq!(export.to_string(), "Cannot write '/x/p.json': Permission denied");
    }
}
