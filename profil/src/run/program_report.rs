//! The report and the exports of one program's run (launched, attached or loaded): the
//! symbolizer built, the run analysed, every section written in order, the exports after.

use std::io::Write;

use prof_core::sampler::CallGraph;
use prof_core::StopReason;
use prof_objects::elf::ProgramImage;
use prof_objects::symbolize::Symbolizer;

use super::finish::{filtered, unread_objects_warning, write_exports, RunError};
use super::prepare::Prepared;
use crate::callgraph;
use crate::cli::Args;
use crate::disasm;
use crate::naming::{Names, Wanted};
use crate::exports::{Analysis, Exports};
use crate::processes;
use crate::profile::{Outcome, Recording};
use crate::report::{self, ExitKind};
use crate::report_out::ReportOut;
use crate::servers;

/// The report and the exports of a finished session, which lasted `elapsed`.
pub(super) fn report_and_export(args: &Args, p: Prepared, exit: ExitKind, elapsed: std::time::Duration) -> Result<(), RunError> {
    let Prepared { name, launch, image, read_elf, session_start, exports, out, mut profiler } = p;
    // Post-processing starts here (timed for the benchmark with PROFIL_TIMINGS=1).
    let post = std::time::Instant::now();
    let mut profile = profiler.profile(&name)?;
    profile.parts_mut().clock.elapsed = Some(elapsed);
    let unwind = profiler.unwind_time();
    let exit = match exit {
        ExitKind::Attached { pid, .. } => ExitKind::Attached { pid, exited: profile.stop_reason() == Some(StopReason::Exit) },
        other => other,
    };
    let run = Outcome {
        program: name.clone(),
        arguments: args.target.arguments().iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        frequency_hz: args.frequency_hz,
        profile,
        exit,
        interpreters: launch.interpreters,
    };
    report_run(args, args.recording(), &launch.path, image, exports, out, &run)?;
    if std::env::var_os("PROFIL_TIMINGS").is_some() {
        let (read, post) = (read_elf.as_secs_f64(), post.elapsed().as_secs_f64());
        // Unwinding (-g dwarf) happens while the program runs; it is analysis work too.
        let unwind = unwind.as_secs_f64();
        crate::report_out::to_stderr(format_args!(
            "profil.read_elf: {read:.6}\nprofil.report: {post:.6}\nprofil.unwind: {unwind:.6}\nprofil.post: {:.6}\nprofil.start: {:.6}",
            read + post + unwind,
            session_start.as_secs_f64()
        ));
    }
    Ok(())
}

/// A program's run analysed: what every section of its report and every export is made of,
/// from the run's names (`naming`: every address located once, before any of it is made).
struct Analysed<'a> {
    run: &'a Outcome,
    name: String,
    /// The program's file by its real path, where `--children` names a child running it.
    real: Option<String>,
    names: Names,
    samples: Vec<prof_objects::symbolize::Sample>,
    stacks: Option<crate::stacks::StackProfile>,
    flat: crate::flat::FlatProfile,
    /// The processes it started (`--children`), named, and them together with it.
    tree: processes::Tree,
    lines: Option<prof_objects::lines::LineProfile>,
    base: Option<crate::compare::Base>,
    changes: Option<crate::compare::Comparison>,
    threads: Vec<crate::threads::ThreadView>,
    /// The daemons that worked for the program (Redox), named.
    servers: Option<Vec<servers::ServerFunctions>>,
    waits: Vec<crate::waiting::Wait>,
    /// `--timeline`: the run in slices.
    timeline: Vec<crate::slices::Slice>,
    /// The samples in time order, named, for the exports that keep the order.
    named_timeline: Option<crate::exports::time_order::NamedTimeline>,
    /// Why the run's kernel samples are not named, where they are not (a line of the report).
    kernel_note: Option<String>,
    /// `--asm`: the hottest functions' instructions, read and placed at their lines.
    asm: Vec<disasm::Listing>,
    /// `--pprof` by address (with `--lines` or `--inline`): each address's name and lines.
    address_lines: Option<crate::address_lines::AddressLines>,
    /// `--requests -g`: each process's call sites of its requests, named, by pid.
    request_sites: std::collections::BTreeMap<u32, std::collections::BTreeMap<prof_core::requests::RequestKey, crate::request_sites::KeySites>>,
}

/// The report (to `out`) and the exports of the run `run` of the program file `path`.
pub(super) fn report_run(
    args: &Args,
    recording: Recording,
    path: &std::path::Path,
    image: ProgramImage,
    exports: Exports,
    mut out: ReportOut,
    run: &Outcome,
) -> Result<(), RunError> {
    let (run, whole) = filtered(args, run, &path.to_string_lossy())?;
    let run = &*run;
    let a = analyse(args, recording, path, image, run, whole)?;
    // A report that cannot be written (a full disk) does not cost the exports: ReportOut
    // keeps its error, the exports are written, then the error is returned.
    out.start_line()?;
    for section in sections(args, recording, &a) {
        out.write_all(section.as_bytes())?;
    }
    out.flush()?;
    let analysis = Analysis {
        run,
        flat: &a.flat,
        samples: &a.samples,
        objects: a.names.objects(),
        stacks: a.stacks.as_ref(),
        processes: &a.tree.processes,
        lines: a.lines.as_ref(),
        address_lines: a.address_lines.as_ref(),
        waits: &a.waits,
        base: a.base.as_ref(),
        threads: &a.threads,
        timeline: a.named_timeline.as_ref(),
    };
    write_exports(exports, &analysis, &mut out)?;
    // The gate, last: everything asked for is written.
    match &a.changes {
        Some((_, _, changes)) => gate(args, a.base.as_ref(), changes),
        None => Ok(()),
    }
}

/// `--fail-above PP`: a run whose functions' shares grew by more than PP points since the
/// base fails (exit 3), after its report and exports are written.
pub(super) fn gate(args: &Args, base: Option<&crate::compare::Base>, changes: &[crate::compare::Change]) -> Result<(), RunError> {
    let Some(points) = args.fail_above.map(|h| f64::from(h) / 100.0) else { return Ok(()) };
    let grew = crate::compare::regressions(changes, points);
    if grew.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = grew.iter().map(|c| format!("{} ({:+.2} pp ± {:.2})", c.name, c.own.pp, c.own.within)).collect();
    Err(RunError::Regressed(format!(
        "{} grew by more than {points} points of the samples since {}: {}",
        if grew.len() == 1 { "1 function's share" } else { "functions' shares" },
        base.map_or("", |b| b.file.as_str()),
        names.join(", ")
    )))
}

/// The run of the program file `path` analysed for its report and exports.
/// `whole`: the samples the shares are of where the filters kept fewer (`FlatProfile::whole`).
fn analyse<'a>(
    args: &Args,
    recording: Recording,
    path: &std::path::Path,
    image: ProgramImage,
    run: &'a Outcome,
    whole: Option<u64>,
) -> Result<Analysed<'a>, RunError> {
    let name = run.program.clone();
    let mut symbolizer = Symbolizer::new(image.object, &name, args.objects.clone()).with_perf_map(run.profile.pid());
    let kernel = kernel_names(args, &run.profile);
    if let Some(file) = &kernel.file {
        symbolizer = symbolizer.with_kernel(file);
    }
    let kernel_note = kernel.note(kernel_samples(&run.profile));
    // A child running the program's own file (a fork of it) is named as the program.
    let real = crate::platform::real_path(path).filter(|_| recording.children).map(|r| r.to_string_lossy().into_owned());
    if let Some(real) = &real {
        symbolizer = symbolizer.program_also_at(real);
    }
    // Source lines are read (DWARF parsed) only when asked for.
    let sources = prof_objects::lines::Sources::new();
    let wanted = wanted(args, &sources);
    // `--diff`'s base run, named by a pass of its own (from its own program file), first.
    let base = args.diff.as_deref().map(|file| load_base(args, file)).transpose()?;
    let names = Names::of_run(symbolizer, &run.profile, wanted);
    let (samples, mut stacks, mut flat) = crate::flat::analyse(&run.profile, &names);
    flat.whole = whole;
    // A script's profile is its interpreter's code: its rows say whose (`[sh]`), as another
    // object's do, since the name on the command line is the script's.
    if let Some(interpreter) = run.interpreters.last() {
        let tag = processes::base_name(interpreter).to_string();
        for e in flat.entries.iter_mut().filter(|e| e.object.is_none()) {
            e.object = Some(tag.clone());
        }
    }
    let mut tree = processes::Tree::of_program(&samples, run.profile.processes(), &names);
    // Linux's frame-pointer chains end without a word where frame pointers are missing.
    if recording.call_graph == CallGraph::FramePointers && crate::platform::STACKS_ARE_CHOSEN {
        for sp in stacks.iter_mut().chain(tree.processes.iter_mut().filter_map(|c| c.stacks.as_mut())) {
            sp.count_unrooted_as_truncated();
        }
    }
    warn_of_unread_objects(args, names.objects());
    let lines = names.lines().cloned();
    // A tree compares as a whole: its processes together (as its base's, where it was one).
    let as_a_whole = if tree.processes.is_empty() { &flat } else { &tree.together };
    let (base, changes) = comparison(base, &run.program, as_a_whole, run.frequency_hz, stacks.is_some()).unzip();
    // The thread view is named only where it is shown: the section, or the speedscope file.
    let threads = match wanted.threads {
        true => crate::threads::threads(&run.profile, &name, &names),
        false => Vec::new(),
    };
    let servers = run.profile.servers().map(|r| servers::name_servers(r, &names));
    let waits = crate::waiting::waits(&run.profile, &names);
    let timeline = match args.sections.timeline {
        Some(n) => crate::slices::slices(&run.profile, args.filter.window.as_ref(), n, &names),
        None => Vec::new(),
    };
    // The processes the program started are tracks of the Firefox Profiler's file, and lines
    // of --samples.
    let named_timeline = in_time_order(args)
        .then(|| {
            let processes = args.exports.firefox.is_some() || args.exports.samples.is_some();
            crate::exports::time_order::name_with_processes(&run.profile, &names, processes)
        })
        .filter(|t| !t.samples.is_empty() || !t.processes.is_empty());
    let asm = match args.sections.asm_top {
        Some(top) => disasm::listings(&flat, &names, top, Some(&sources)),
        None => Vec::new(),
    };
    let request_sites = crate::request_sites::sites(&run.profile, &names);
    let by_address = args.exports.pprof.is_some() && (args.sections.lines.is_some() || args.inline);
    let address_lines = by_address.then(|| crate::address_lines::AddressLines::of_run(&names, &sources, &samples, stacks.as_ref(), &tree.processes));
    debug_assert_eq!(names.misses(), 0, "an address named after the naming pass");
    Ok(Analysed {
        address_lines,
        asm,
        run,
        name,
        real,
        names,
        samples,
        stacks,
        flat,
        tree,
        lines,
        base,
        changes,
        threads,
        servers,
        waits,
        timeline,
        named_timeline,
        kernel_note,
        request_sites,
    })
}

/// The report's sections, in the order they are written: each the text of one module's
/// section, where it is asked for and has something to say.
fn sections(args: &Args, recording: Recording, a: &Analysed) -> Vec<String> {
    let (profile, name) = (&a.run.profile, a.name.as_str());
    let mut out = Vec::new();
    // The banner introduces the Minix statistics: with -f there are none.
    if !args.sections.flat_only {
        out.push(format!("{}{}\n", report::statistics_banner(), report::minix_statistics(profile.data())));
    }
    // A driver (make, sh, g++ under --children) does next to nothing itself: the report leads
    // with where the time went in its processes, then its own flat profile.
    let own = profile.ticks();
    let theirs = a.tree.processes.iter().fold(0u64, |n, c| n.saturating_add(c.ticks()));
    let driver = recording.children && own.saturating_mul(20) < theirs;
    let processes_section =
        recording.children.then(|| processes::render(name, a.real.as_deref(), profile, &a.tree) + "\n");
    out.extend(processes_section.clone().filter(|_| driver));
    let top = match args.sections.percent_limit {
        Some(limit) => Some(args.sections.top.unwrap_or(usize::MAX).min(a.flat.rows_at_least(f64::from(limit) / 100.0))),
        None => args.sections.top,
    };
    // In a tree the program's own flat profile is one process's: its header says whose.
    // A program that exec'd in its own pid (dash's last command) ran that image too.
    let became = match profile.later_execs().last() {
        Some(image) => format!(" (then {})", processes::base_name(image)),
        None => String::new(),
    };
    let whose = (!a.tree.processes.is_empty()).then(|| format!("{} [pid {}]{became}", processes::base_name(name), profile.pid()));
    out.push(a.flat.render_of(whose.as_deref(), top) + "\n");
    // After it, why its kernel samples have no names, where they have none.
    out.extend(a.kernel_note.as_ref().map(|note| format!("{note}\n")));
    if args.sections.threads {
        out.push(crate::threads::render(&a.threads) + "\n");
    }
    if args.sections.timeline.is_some() {
        out.push(crate::slices::render(&a.timeline, a.run.frequency_hz, a.run.profile.with_processes().filter(|p| !p.timeline().is_empty()).count()) + "\n");
    }
    if let (Some(b), Some((old, new, changes))) = (&a.base, &a.changes) {
        let top = args.sections.top.unwrap_or(crate::compare::DEFAULT_TOP);
        // A tree's comparison is of its processes together, not of the flat profile above it.
        let of = match a.tree.processes.is_empty() && b.together.is_none() {
            true => b.file.clone(),
            false => format!("{}, every process together", b.file),
        };
        out.push(crate::compare::render(&of, old, new, changes, top) + "\n");
    }
    if let (Some(top), Some(lines)) = (args.sections.lines, &a.lines) {
        out.push(crate::flat::render_lines(lines, top) + "\n");
    }
    if let Some(sp) = a.stacks.as_ref().filter(|_| args.sections.callers) {
        out.push(callgraph::render(sp, &a.flat, callgraph::DEFAULT_TOP) + "\n");
    }
    if args.sections.asm_top.is_some() {
        out.push(disasm::render(&a.asm) + "\n");
    }
    let servers = profile.servers().zip(a.servers.as_deref());
    out.push(servers::render(name, profile, servers));
    out.push(report::time_line(profile, a.run.frequency_hz));
    out.push(report::clock_section(profile));
    out.push(crate::waiting::render(profile, &a.waits, args.sections.top.unwrap_or(crate::waiting::DEFAULT_TOP)) + "\n");
    if args.sections.callers && !a.waits.is_empty() {
        out.push(callgraph::render_waits(&a.waits, callgraph::DEFAULT_TOP) + "\n");
    }
    out.extend(crate::requests::section(profile, name, args.requests, args.sections.top, &a.request_sites));
    out.extend(processes_section.filter(|_| !driver));
    out.push(report::summary(profile, a.stacks.as_ref(), name, &a.run.interpreters, a.run.exit));
    // The hints are for stacks the user chose how to take (Linux); a Redox run's, loaded here,
    // were the kernel's walk (its sampling source says it is one).
    if profile.source().sampling.is_none() {
        out.push(report::hints(a.stacks.as_ref(), recording.call_graph));
    }
    out
}

/// What the one naming pass names, beside the samples and stacks every report shows: every
/// address of every process the sections and exports asked for will show.
pub(super) fn wanted<'s>(args: &Args, sources: &'s prof_objects::lines::Sources) -> Wanted<'s> {
    Wanted {
        threads: args.sections.threads || args.exports.speedscope.is_some(),
        timeline: args.sections.timeline.is_some() || in_time_order(args),
        inline: args.inline.then_some(sources),
        lines: args.sections.lines.is_some().then_some(sources),
    }
}

/// An export that keeps the samples in time order is asked for (`--samples`, speedscope's
/// threads over time, the Firefox Profiler's tracks).
pub(super) fn in_time_order(args: &Args) -> bool {
    args.exports.samples.is_some() || args.exports.speedscope.is_some() || args.exports.firefox.is_some()
}

/// The kernel's names for the run `p`: `--kernel`, else the running kernel's (a saved run's
/// by default only where it ran on this boot).
pub(super) fn kernel_names(args: &Args, p: &crate::profile::Profile) -> crate::kernel::KernelNames {
    match args.target {
        crate::cli::Target::Load(_) => args.kernel.for_saved(p.source().kernel.as_ref()),
        _ => args.kernel.for_live(),
    }
}

/// A saved run reported elsewhere: the files it names that are not here, in one warning
/// (their samples keep their addresses).
pub(super) fn warn_of_unread_objects(args: &Args, objects: &[prof_objects::symbolize::Object]) {
    if matches!(args.target, crate::cli::Target::Load(_)) {
        if let Some(warning) = unread_objects_warning(objects) {
            crate::report_out::to_stderr(format_args!("{warning}"));
        }
    }
}

/// `--diff BASE`: the base run (named by [`load_base`] before this run is), and it against
/// this run of `program`, whose whole is `whole` (what a warning says where the two compare
/// less than they seem to, on standard error).
pub(super) fn comparison(
    base: Option<crate::compare::Base>,
    program: &str,
    whole: &crate::flat::FlatProfile,
    frequency_hz: u64,
    with_stacks: bool,
) -> Option<(crate::compare::Base, crate::compare::Comparison)> {
    let base = base?;
    if let Some(warning) = base_warning(&base, program, with_stacks) {
        crate::report_out::to_stderr(format_args!("{warning}"));
    }
    let changes = base.against(whole, program, frequency_hz);
    Some((base, changes))
}

/// What makes a comparison with `base` say less than it seems to, in one warning: a base of
/// another program (every function then differs), or a base without call stacks against a
/// run with them (the total shares and the stacks' difference compare with nothing).
pub(super) fn base_warning(base: &crate::compare::Base, program: &str, with_stacks: bool) -> Option<String> {
    let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let mut parts = Vec::new();
    if name(&base.program) != name(program) {
        parts.push(format!("the base run is of another program ('{}', this run '{program}'): the changes compare two programs", base.program));
    }
    if with_stacks && base.stacks.is_none() {
        parts.push("the base run has no call stacks (record it with -g): total shares and the stack exports compare with nothing".to_string());
    }
    (!parts.is_empty()).then(|| format!("profil: warning: {}", parts.join("; ")))
}

/// `--diff FILE`: the saved base run, its flat profile and stacks named from its own program
/// file (so two builds compare by function name).
pub(super) fn load_base(args: &Args, file: &std::path::Path) -> Result<crate::compare::Base, RunError> {
    let saved = super::saved_file::parse_saved(file, "compare with")?;
    let profile = &saved.run.profile;
    // A system-wide base has no program file: its processes together are what it compares as.
    let system = profile.is_system_wide();
    let mut symbolizer = match system {
        true => super::system::symbolizer(args),
        false => Symbolizer::new(super::saved_file::saved_program(&saved, "base", &args.objects)?.1.object, &saved.run.program, args.objects.clone()),
    };
    let kernel = args.kernel.for_saved(profile.source().kernel.as_ref());
    if let Some(file) = &kernel.file {
        symbolizer = symbolizer.with_kernel(file);
    }
    // (A system-wide base's kernel samples are not among its processes' user samples.)
    if let Some(why) = kernel.why_unnamed(kernel_samples(profile)).filter(|_| !system) {
        crate::report_out::to_stderr(format_args!("profil: warning: the base run's kernel functions are not named: {why}; --kernel FILE names them"));
    }
    let names = Names::of_run(symbolizer, profile, Wanted::default());
    let (flat, stacks, together) = match system {
        true => {
            let tree = processes::Tree::of_system(profile.processes(), &names);
            (tree.together.clone(), None, Some(tree.together))
        }
        false => {
            let (samples, stacks, flat) = crate::flat::analyse(profile, &names);
            // A tree's base: its processes together too, which a tree's comparison is of.
            let tree = processes::Tree::of_program(&samples, profile.processes(), &names);
            (flat, stacks, (!tree.processes.is_empty()).then_some(tree.together))
        }
    };
    Ok(crate::compare::Base { file: file.display().to_string(), program: saved.run.program.clone(), flat, stacks, frequency_hz: saved.run.frequency_hz, together })
}

/// How many of a run's samples are the kernel's: counted (`kernel_ticks`), or by address.
pub(super) fn kernel_samples(p: &crate::profile::Profile) -> u64 {
    let by_address = p.kernel_samples().iter().fold(0u64, |n, s| n.saturating_add(s.1));
    p.kernel_ticks().unwrap_or(0).max(by_address)
}

#[cfg(test)]
mod tests {
    /// Every view finds each address it shows among the names: none is named after the pass
    /// (the exports' time order: `exports::time_order`'s tests). Here, above every view, as
    /// the module graph has it.
    #[test]
    fn every_view_finds_its_frames_named_by_the_pass() {
        let (symbolizer, p) = crate::naming::tests::tree();
        let names = crate::naming::Names::of_run(symbolizer, &p, crate::naming::Wanted { threads: true, timeline: true, ..Default::default() });
        let (samples, stacks, flat) = crate::flat::analyse(&p, &names);
        let tree = crate::processes::Tree::of_program(&samples, p.processes(), &names);
        let threads = crate::threads::threads(&p, "fib", &names);
        let waits = crate::waiting::waits(&p, &names);
        let slices = crate::slices::slices(&p, None, 2, &names);
        let servers = crate::servers::name_servers(p.servers().unwrap(), &names);
        assert_eq!(names.misses(), 0);
        assert!(stacks.is_some() && flat.total > 0 && !threads.is_empty() && !waits.is_empty() && !slices.is_empty());
        assert_eq!(servers.len(), 1);
        // The same runtime address is libm's in one child and libc's in the other.
        let by_child: Vec<String> = tree.processes.iter().map(|c| c.flat.entries[0].name()).collect();
        assert_eq!(by_child, ["[libm.so]", "[libc.so.6]"]);
        assert_eq!(flat.entries.iter().find(|e| e.object.is_some()).unwrap().name(), "[libc.so.6]");
        // The second child has the program's mappings: one space, one frame for both.
        assert_eq!(names.space(p.mappings()), names.space(p.processes()[1].profile.mappings()));
        assert_ne!(names.space(p.mappings()), names.space(p.processes()[0].profile.mappings()));
    }
}
