//! How every mode ends: why a run produced no report ([`RunError`]), how profil exits
//! ([`Ending`]), the report filters applied, the exports written after the report.

use std::fmt;
use std::io;

use prof_core::ProfError;
use prof_objects::os_message;

use crate::cli::Args;
use crate::exports::{Analysis, Exports};
use crate::profile::Outcome;
use crate::report_out::ReportOut;

/// Why a run produced no report.
#[derive(Debug)]
pub enum RunError {
    /// The program cannot be run (message ready for "Profil Error: ...").
    Program(String),
    /// Profiling failed; the message is the spec's.
    Profiling(ProfError),
    /// The child already printed the error (the spec's 0xCC protocol).
    Reported,
    /// The report could not be written (its message says so); the exports were.
    ReportLost(io::Error),
    /// `--fail-above`: a function's share grew beyond the gate; the report and the exports
    /// were written (the message names them).
    Regressed(String),
    Io(io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Program(m) => f.write_str(m),
            RunError::Profiling(e) => write!(f, "{e}"),
            RunError::Reported => f.write_str("reported by the child"),
            RunError::Io(e) | RunError::ReportLost(e) => f.write_str(&os_message(e)),
            RunError::Regressed(m) => f.write_str(m),
        }
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
    let whole = match crate::filter::apply(&mut kept, program_file, &args.filter).map_err(RunError::Program)? {
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
    exported.map_err(|e| RunError::Program(e.to_string()))?;
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
