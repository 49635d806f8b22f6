//! `-a`: every process of the system, as Prospect profiles a system (Linux: every CPU's perf
//! event; Redox: profd's session on all, the kernel's samples of every process). No program is
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
use crate::naming::Names;
use prof_objects::object_file::ObjectFile;
use prof_objects::symbolize::Symbolizer;
use prof_objects::symbols::SymbolTable;
use crate::profile::Outcome;
use crate::report::ExitKind;
use super::finish::{ending_of_report, write_exports, Ending, RunError};

/// The name a system-wide run goes by in the exports (`program` of the JSON, the speedscope
/// file's name).
pub const SYSTEM: &str = "system";

/// Profile every process until `-t` passes or Ctrl-C; print the report, write the exports.
pub fn run(args: &Args) -> Result<Ending, RunError> {
    // No program file: the exports only must not name one another (nor standard output twice).
    let exports = Exports::create(args, Path::new("/"), args.recording())?;
    // SAFETY: isatty only asks about the descriptor.
    if args.duration.is_none() && unsafe { libc::isatty(2) } == 1 {
        crate::report_out::to_stderr(format_args!("profil: sampling every process until Ctrl-C"));
    }
    let (mut profile, _) = crate::backend::record_system(args).map_err(refused)?;
    // A process the backend saw no mapping of (Redox: static programs and daemons, by their
    // executable) is placed from its file.
    for c in profile.parts_mut().processes.iter_mut().filter(|c| c.profile.mappings().is_empty() && c.program.starts_with('/')) {
        c.profile.parts_mut().mappings = prof_objects::elf::static_mappings(&c.program, &args.objects);
    }
    let run = Outcome {
        program: SYSTEM.into(),
        arguments: Vec::new(),
        frequency_hz: args.frequency_hz,
        profile,
        exit: ExitKind::Attached { pid: 0, exited: false },
        interpreters: Vec::new(),
    };
    ending_of_report(report(args, &run, exports))
}

/// `--load` of a saved system-wide run: its report and exports, as the live run made them.
pub fn load(args: &Args, file: &Path, run: &Outcome, recording: crate::profile::Recording) -> Result<Ending, RunError> {
    // What -a refuses (one program's bins, its lines, its instructions) a loaded one does too.
    if let Some(flag) = &args.one_program {
        return Err(super::finish::SavedError::SystemWide { file: file.to_path_buf(), flag: flag.clone() }.into());
    }
    let exports = Exports::create(args, Path::new("/"), recording)?;
    ending_of_report(report(args, run, exports))
}

/// The report of a system-wide run, and its exports.
fn report(args: &Args, run: &Outcome, exports: Exports) -> Result<(), RunError> {
    // -a's tables are of the processes kept (as perf's --sort comm): the shares, of them.
    let run = &*super::finish::filtered(args, run, "")?.0;
    let mut out = exports.report_out(false);
    let kernel_names = super::program_report::kernel_names(args, &run.profile);
    let mut symbolizer = symbolizer(args);
    if let Some(file) = &kernel_names.file {
        symbolizer = symbolizer.with_kernel(file);
    }
    let sources = prof_objects::lines::Sources::new();
    // The one naming pass (`--lines`, one program's, is refused with -a).
    let wanted = super::program_report::wanted(args, &sources);
    // `--diff`'s base run, named by a pass of its own, first.
    let base = args.diff.as_deref().map(|file| super::program_report::load_base(args, file)).transpose()?;
    let names = Names::of_run(symbolizer, &run.profile, wanted);
    // The run's own profile holds the kernel's samples of every process: the kernel's.
    let (samples, _, kernel) = crate::flat::analyse(&run.profile, &names);
    let tree = crate::processes::Tree::of_system(run.profile.processes(), &names);
    // A saved run reported later: the objects of its processes that are not here any more
    // (a process's deleted file), in one warning.
    super::program_report::warn_of_unread_objects(args, names.objects());
    // The sections beside the table, each of every process: by thread, over time, and the
    // comparison with a base run (the run as a whole: its processes together).
    let threads = match wanted.threads {
        true => crate::threads::threads(&run.profile, SYSTEM, &names),
        false => Vec::new(),
    };
    let slices = match args.sections.timeline {
        Some(n) => crate::slices::slices(&run.profile, args.filter.window.as_ref(), n, &names),
        None => Vec::new(),
    };
    let (base, changes) = super::program_report::comparison(base, &run.program, &tree.together, run.frequency_hz, false).unzip();
    // Every process in time order: the Firefox Profiler's tracks, --samples' lines,
    // speedscope's threads over time.
    let timeline = super::program_report::in_time_order(args)
        .then(|| crate::exports::time_order::name_with_processes(&run.profile, &names, true))
        .filter(|t| !t.samples.is_empty() || !t.processes.is_empty());
    let request_sites = crate::request_sites::sites(&run.profile, &names);
    // After a Ctrl-C at the terminal, past its `^C`.
    out.start_line()?;
    let note = kernel_names.note(super::program_report::kernel_samples(&run.profile));
    out.write_all(crate::processes::render_system(&run.profile, &tree, &kernel, note.as_deref()).as_bytes())?;
    if args.sections.threads {
        out.write_all(format!("\n{}", crate::threads::render(&threads)).as_bytes())?;
    }
    if args.sections.timeline.is_some() {
        let processes = run.profile.with_processes().filter(|p| !p.timeline().is_empty()).count();
        out.write_all(format!("\n{}", crate::slices::render(&slices, run.frequency_hz, processes)).as_bytes())?;
    }
    if let (Some(b), Some((old, new, changes))) = (&base, &changes) {
        let top = args.sections.top.unwrap_or(crate::compare::DEFAULT_TOP);
        let of = format!("{}, every process together", b.file);
        out.write_all(format!("\n{}", crate::compare::render(&of, old, new, changes, top)).as_bytes())?;
    }
    if let Some(requests) = crate::requests::system_section(&run.profile, args.requests, args.sections.top, &request_sites) {
        out.write_all(format!("\n{requests}").as_bytes())?;
    }
    out.flush()?;
    // --pprof by address (--inline): every process's addresses named with their lines.
    let address_lines = (args.exports.pprof.is_some() && args.inline).then(|| crate::address_lines::AddressLines::of_run(&names, &sources, &[], None, &tree.processes));
    let analysis = Analysis {
        run,
        flat: &kernel,
        samples: &samples,
        objects: names.objects(),
        stacks: None,
        processes: &tree.processes,
        lines: None,
        address_lines: address_lines.as_ref(),
        waits: &[],
        base: None,
        threads: &threads,
        timeline: timeline.as_ref(),
    };
    write_exports(exports, &analysis, &mut out)?;
    match changes {
        Some((_, _, changes)) => super::program_report::gate(args, base.as_ref(), &changes),
        None => Ok(()),
    }
}

/// The symbolizer of a system-wide run: no program file, the processes' own files named as
/// their samples ask.
pub(super) fn symbolizer(args: &Args) -> Symbolizer {
    let empty = ObjectFile::from_symbols(Path::new(""), SymbolTable::new(Vec::new()));
    Symbolizer::new(empty, SYSTEM, args.objects.clone())
}

/// Why the system cannot be profiled, as the user can act on it.
fn refused(e: ProfError) -> RunError {
    match e {
        ProfError::Permission => RunError::SystemWide(crate::platform::system_wide_refusal()),
        ProfError::Busy => match crate::platform::busy_hint() {
            Some(hint) => RunError::Refused { error: e, hint },
            None => RunError::Profiling(e),
        },
        other => RunError::Profiling(other),
    }
}
