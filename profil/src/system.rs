//! `-a`: every process of the system, as Prospect profiles a system (Linux). No program is
//! run: the CPUs are sampled until `-t` passes or Ctrl-C, and the report says where their time
//! went (processes in user mode, in the kernel, idle), every busy process with its share, the
//! processes by program, the busiest ones' top functions named from their own executables,
//! the kernel's, and all of them together. The exports have a profile per process, rooted at
//! it (`hog [pid 4242]`), as `--children`'s do.

use std::io::Write;
use std::path::Path;

use prof_core::ProfError;

use crate::cli::Args;
use crate::exports::{Analysis, Exports};
use crate::objects::object_file::ObjectFile;
use crate::objects::symbolize::Symbolizer;
use crate::objects::symbols::SymbolTable;
use crate::profile::Outcome;
use crate::report::ExitKind;
use crate::report_out::ReportOut;
use crate::run::{os_message, Ending, RunError};

/// The name a system-wide run goes by in the exports (`program` of the JSON, the speedscope
/// file's name).
pub const SYSTEM: &str = "system";

/// The Linux kernel's symbols, where `--kernel` names none.
const KALLSYMS: &str = "/proc/kallsyms";

/// Profile every process until `-t` passes or Ctrl-C; print the report, write the exports.
pub fn run(args: &Args) -> Result<Ending, RunError> {
    // No program file: the exports only must not name one another (nor standard output twice).
    let exports = Exports::create(args, Path::new("/")).map_err(|e| RunError::Program(e.to_string()))?;
    let mut out = if exports.takes_report() { ReportOut::kept_for_file() } else { ReportOut::new(exports.uses_stdout()) };
    if args.duration.is_none() && crate::interrupt::ctrl_c_from_terminal() {
        crate::report_out::to_stderr(format_args!("profil: sampling every CPU until Ctrl-C"));
    }
    let (profile, _) = crate::backend::record_system(args).map_err(refused)?;
    let run = Outcome {
        program: SYSTEM.into(),
        arguments: Vec::new(),
        frequency_hz: args.frequency_hz,
        profile,
        exit: ExitKind::Attached { pid: 0, exited: false },
    };
    let empty = ObjectFile::from_symbols(Path::new(""), SymbolTable::new(Vec::new()));
    let mut symbolizer = Symbolizer::new(empty, SYSTEM).with_kernel(args.kernel.as_deref().unwrap_or(Path::new(KALLSYMS)));
    let sources = crate::objects::lines::Sources::new(crate::objects::debug_file::dirs());
    let inline = args.inline.then_some(&sources);
    // The run's own profile holds the kernel's samples of every process: the kernel's.
    let (samples, _, kernel) = crate::flat::analyse(&run.profile, &mut symbolizer, None);
    let processes = crate::processes::analyse(&run.profile.processes, &mut symbolizer, inline);
    out.write_all(crate::processes::render_system(&run.profile, &processes, &kernel, &symbolizer).as_bytes())?;
    out.flush()?;
    let written = out.error();
    let analysis = Analysis {
        run: &run,
        flat: &kernel,
        samples: &samples,
        symbolizer: &symbolizer,
        stacks: None,
        processes: &processes,
        lines: None,
        sources: inline,
        waits: &[],
        base: None,
        threads: &[],
    };
    let exported = exports.write(&analysis, out.kept());
    if let (Err(_), Err(e)) = (&exported, &written) {
        crate::report_out::to_stderr(format_args!("Profil Error: {e}"));
    }
    exported.map_err(|e| RunError::Program(e.to_string()))?;
    written.map_err(|e| {
        crate::report_out::to_stderr(format_args!("Profil Error: {}", os_message(&e)));
        RunError::Reported
    })?;
    Ok(Ending::Code(0))
}

/// Why the system cannot be profiled, as the user can act on it.
fn refused(e: ProfError) -> RunError {
    match e {
        ProfError::Permission => {
            let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
            RunError::Program(format!(
                "Permission denied: -a samples every CPU, which the kernel allows root (or CAP_PERFMON), or anyone \
                 where kernel.perf_event_paranoid is 0 or below; it is {}",
                level.trim()
            ))
        }
        ProfError::Busy => match crate::platform::busy_hint() {
            Some(hint) => RunError::Program(format!("{e}\n{hint}")),
            None => RunError::Profiling(e),
        },
        other => RunError::Profiling(other),
    }
}
