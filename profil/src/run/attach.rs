//! `-p PID`: profile a process that runs already, until it exits, `-t` passes or Ctrl-C.

use std::io;
use std::path::{Path, PathBuf};

use prof_core::sampler::CountFrom;
use prof_core::{ProfError, StartRequest};
use prof_objects::elf;

use super::finish::RunError;
use super::prepare::{address_range_hint, perf_policy_hint, prepare};
use super::program_report::report_and_export;
use crate::cli::Args;
use crate::report::ExitKind;

/// A warning when `file`, named with `-p PID FILE`, is not the program the process runs (Linux:
/// neither the file behind `/proc/PID/exe` nor a copy of the same build, by GNU build-id):
/// its symbols would name the samples wrongly. `None` where it is, or where that cannot be told.
fn other_program_warning(pid: u32, file: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let exe = PathBuf::from(format!("/proc/{pid}/exe"));
    let (running, named) = (std::fs::metadata(&exe).ok()?, std::fs::metadata(file).ok()?);
    if (running.dev(), running.ino()) == (named.dev(), named.ino()) {
        return None;
    }
    let (a, b) = (prof_objects::elf::build_id(&exe), prof_objects::elf::build_id(file));
    if a.is_some() && a == b {
        return None;
    }
    let runs = std::fs::read_link(&exe).map_or_else(|_| exe.display().to_string(), |t| t.display().to_string());
    Some(format!(
        "Warning: '{}' is not the program pid {pid} runs ({runs}); its symbols may name the samples wrongly",
        file.display()
    ))
}

/// `-p PID`: profile a process that runs already, until it exits, `-t` passes or Ctrl-C.
pub(super) fn attach(args: &Args, pid: u32, file: Option<&std::ffi::OsStr>) -> Result<u8, RunError> {
    let no_process = || RunError::Profiling(ProfError::NoProcess);
    // Its program file: named, or (Linux) the kernel's link to it, readable even if deleted.
    let path = match file {
        None => crate::platform::program_of(pid)
            .ok_or(RunError::NoProgramFile { pid })?,
        Some(file) => elf::find_program(file)
            .map_err(|source| RunError::Read { path: file.to_string_lossy().into_owned(), source })?,
    };
    // Linux: whose process it is (a missing /proc entry: no such process).
    let owner = match crate::platform::owner_of(pid) {
        Some(owner) => Some(owner.ok_or_else(no_process)?),
        None => None,
    };
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if owner.is_some_and(|uid| euid != 0 && uid != euid) {
        return Err(RunError::NotOurs { pid });
    }
    if file.is_some() {
        if let Some(warning) = other_program_warning(pid, &path) {
            crate::report_out::to_stderr(format_args!("{warning}"));
        }
    }
    let name = match std::fs::read_link(&path) {
        Ok(target) if file.is_none() => target.to_string_lossy().into_owned(),
        // The kernel keeps a process's links from those who may not trace it (another
        // user's, a set-user-ID one, or one outside our namespace), root included.
        Err(e) if file.is_none() && e.kind() == io::ErrorKind::PermissionDenied => {
            return Err(RunError::HiddenProgram { pid, path })
        }
        Err(_) if file.is_none() => return Err(no_process()),
        _ => file.unwrap_or_default().to_string_lossy().into_owned(),
    };
    let argv = vec![file.unwrap_or_default().to_os_string()];
    let mut p = prepare(args, name, path, &argv)?;
    let req = StartRequest {
        pid,
        start: args.bins.start,
        end: args.bins.end,
        interval: args.bins.interval,
        from: CountFrom::Now,
        rate: Some(args.frequency_hz),
        children: args.children,
    };
    // Installed before counting starts, so Ctrl-C ends the session rather than profil.
    crate::interrupt::install();
    if let Err(e) = p.profiler.start(req, &p.image.layout) {
        return Err(match (e, perf_policy_hint()) {
            (ProfError::AddressRange, _) => RunError::Refused { error: e, hint: address_range_hint(&p.image.layout.text, args) },
            (ProfError::Permission, Some(hint)) => RunError::Refused { error: e, hint },
            (ProfError::Busy, _) => match crate::platform::busy_hint() {
                Some(hint) => RunError::Refused { error: e, hint },
                None => RunError::Profiling(e),
            },
            _ => RunError::Profiling(e),
        });
    }
    let started = std::time::Instant::now();
    let deadline = args.duration.map(|d| started + d);
    p.profiler.wait_for_end(true, deadline)?;
    // Whether it exited is the session's stop reason (filled in with the profile).
    report_and_export(args, p, ExitKind::Attached { pid, exited: false }, started.elapsed())?;
    Ok(0)
}
