//! Run a program under profiling: fork it at the gate, start the session on its pid, let it
//! exec, wait for it, print the report, write the exports.

use std::io::Write;
use std::path::Path;

use prof_core::sampler::CountFrom;
use prof_core::{ProfError, StartRequest};
use prof_objects::elf;
use prof_objects::os_message;

use super::finish::{Ending, RunError};
use super::prepare::{address_range_hint, may_execute, perf_policy_hint, prepare};
use super::program_report::report_and_export;
use crate::cli::Args;
use crate::launch::spawn_gated;
use crate::report::{self, ExitKind};

/// Run `program` with `arguments` under profiling: fork it at the gate, start the session on
/// its pid, let it exec, wait for it, report. Returns how profil ends: with the program's exit
/// status, or by the signal that killed it.
pub fn run(args: &Args, program: &std::ffi::OsStr, arguments: &[std::ffi::OsString]) -> Result<Ending, RunError> {
    // The name as reports show it; the program runs with its exact bytes.
    let name = program.to_string_lossy().into_owned();
    let path = elf::find_program(program)
        .map_err(|source| RunError::Execute { name: name.clone(), source })?;
    // SAFETY: geteuid/getegid have no preconditions.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    crate::privilege::check_may_profile(&path, euid, egid).map_err(RunError::Privilege)?;
    let named = path.clone();
    let argv: Vec<std::ffi::OsString> = std::iter::once(program.to_os_string()).chain(arguments.iter().cloned()).collect();
    let mut p = prepare(args, name, path, &argv)?;
    // A file we may not execute is refused before its run's banner (a script: it and each
    // interpreter, as the kernel checks them).
    if !may_execute(&named) {
        return Err(RunError::Launch { name: p.name.clone(), why: "Permission denied".into() });
    }
    if let Some(denied) = p.launch.interpreters.iter().find(|i| !may_execute(Path::new(i))) {
        return Err(RunError::Launch { name: p.name.clone(), why: format!("its interpreter '{denied}': Permission denied") });
    }
    let mut child = spawn_gated(&p.launch.path, &p.launch.argv, p.exports.uses_stdout())?;
    // The child waits at the gate, then execs: only the program's own run is counted.
    let req = StartRequest {
        pid: child.pid,
        start: args.bins.start,
        end: args.bins.end,
        interval: args.bins.interval,
        from: CountFrom::Exec,
        rate: Some(args.frequency_hz),
        children: args.children,
    };
    let session_start = std::time::Instant::now();
    let started = p.profiler.start(req, &p.image.layout);
    p.session_start = session_start.elapsed();
    if let Err(e) = started {
        child.refuse(e)?;
        child.wait()?;
        if e == ProfError::AddressRange {
            crate::report_out::to_stderr(format_args!("{}", address_range_hint(&p.image.layout.text, args)));
        }
        // Our own child refused: on Linux that is the kernel's perf_event policy.
        if let (ProfError::Permission, Some(hint)) = (e, perf_policy_hint()) {
            crate::report_out::to_stderr(format_args!("{hint}"));
        }
        if let (ProfError::Busy, Some(hint)) = (e, crate::platform::busy_hint()) {
            crate::report_out::to_stderr(format_args!("{hint}"));
        }
        // The child said the spec's message (an errno crossed the gate); the cause is ours.
        if let Some(cause) = e.cause() {
            crate::report_out::to_stderr(format_args!("  {cause}"));
        }
        return Err(RunError::Reported);
    }
    // The program runs: its output comes under the banner (not with --report: the program's
    // output then stands alone).
    if !p.out.is_kept() {
        p.out.write_all(report::output_banner(&p.name).as_bytes())?;
        p.out.flush()?;
    }
    let started = std::time::Instant::now();
    child.release()?;
    let sampled = p.profiler.wait_for_end(false, None);
    let exit = child.wait()?;
    let elapsed = started.elapsed();
    if child.exec_error().is_some() {
        return Err(RunError::Reported);
    }
    sampled?;
    let ending = match exit {
        ExitKind::Exited(code) => Ending::Code(code as u8),
        ExitKind::Signaled(sig) => Ending::Signal(sig),
        ExitKind::Attached { .. } => Ending::Code(0),
    };
    match report_and_export(args, p, exit, elapsed) {
        Ok(()) => Ok(ending),
        // The report is lost: never a success, but a program's own failure keeps its status.
        Err(RunError::ReportLost(e)) => {
            crate::report_out::to_stderr(format_args!("Profil Error: {}", os_message(&e)));
            Ok(match ending {
                Ending::Code(0) => Ending::Code(1),
                other => other,
            })
        }
        Err(e) => Err(e),
    }
}
