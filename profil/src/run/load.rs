//! `--load FILE`: the report and the exports of a saved run, as they were made of the live one.

use super::finish::{ending_of_report, Ending, RunError};
use super::program_report::report_run;
use super::saved_file::{parse_saved, saved_program};
use crate::cli::Args;
use crate::exports::Exports;

/// `--load FILE`: the report and the exports of a saved run, as they were made of the live
/// one. The program file is read again from where the run recorded it; the options that say
/// how the run was recorded (`-g`'s kind, `--children`, `-F`) are the run's.
pub(super) fn load(args: &Args, file: &std::path::Path) -> Result<Ending, RunError> {
    let saved = parse_saved(file, "load")?;
    let mut args = args.clone();
    args.call_graph = saved.call_graph;
    args.frequency_hz = saved.run.frequency_hz;
    // A system-wide run (-a) has no program: its report is of every process.
    if saved.run.profile.is_system_wide() {
        return crate::run::system::load(&args, &saved.run);
    }
    let (program, image) = saved_program(&saved, "saved", &args.objects)?;
    let program = &program;
    args.children = saved.children;
    let exports = Exports::create(&args, program)?;
    let out = exports.report_out(false);
    ending_of_report(report_run(&args, program, image, exports, out, &saved.run))
}
