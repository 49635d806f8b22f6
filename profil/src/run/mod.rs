//! One invocation of profil, in one of its modes: run a program under profiling
//! ([`program`]), attach to a running process ([`attach`]), report a saved run ([`load`]), or
//! sample every process ([`system`]). The program modes share their start ([`prepare`]) and
//! their report ([`program_report`]); every mode ends the same way ([`finish`]).

mod attach;
mod finish;
mod load;
mod prepare;
mod program;
mod program_report;
mod saved_file;
pub mod system;

pub use finish::{Ending, RunError};

use crate::cli::{Args, Target};

/// `--kernel FILE`, checked before anything runs: a file that cannot name kernel samples is
/// refused, and one that names nothing (hidden addresses) is warned about. The default (the
/// running kernel's symbols) is not: where it names nothing the report says why.
fn check_kernel(args: &Args) -> Result<(), RunError> {
    let crate::kernel::KernelChoice::File(kernel) = &args.kernel else { return Ok(()) };
    // A saved run's kernel is looked for under --sysroot first, as the symbolizer reads it.
    match prof_objects::kallsyms::check(&args.objects.locate(kernel)) {
        Ok(warning) => {
            if let Some(w) = warning {
                crate::report_out::to_stderr(format_args!("{w}"));
            }
            Ok(())
        }
        Err(e) => Err(RunError::Kernel(e)),
    }
}

/// Profile what `args.target` names: run a program under profiling, attach to a running
/// process, sample every process or report a saved run, and print the report (on standard
/// output, or on standard error when an export takes standard output). Returns how profil
/// ends: with the program's exit status, or by the signal that killed it ([`Ending`]); with 0
/// for an attached process.
pub fn run(args: &Args) -> Result<Ending, RunError> {
    check_kernel(args)?;
    // A base that is no saved run is said before the program runs, not after.
    if let Some(base) = args.diff.as_ref().filter(|_| !matches!(args.target, Target::Load(_))) {
        saved_file::parse_saved(base, "compare with")?;
    }
    match &args.target {
        Target::Load(file) => load::load(args, file),
        Target::Attach { pid, file } => attach::attach(args, *pid, file.as_deref()).map(Ending::Code),
        Target::System => system::run(args),
        Target::Launch { program, args: arguments } => program::run(args, program, arguments),
    }
}
