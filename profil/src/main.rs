//! `profil [-s start] [-e end] [-i interval] prog args…`: run a program under Minix-style
//! profiling and print where its time went.  Thin: the work is in the library modules.

use std::process::ExitCode;

use profil::cli::{self, Command};
use profil::report_out::{to_stderr, to_stdout};
use profil::run::{run, Ending, RunError};

fn main() -> ExitCode {
    let command = match cli::parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            to_stderr(format_args!("profil: {}\n{}", e.0, cli::short_usage()));
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help(text) => {
            to_stdout(format_args!("{text}"));
            ExitCode::SUCCESS
        }
        Command::Version => {
            to_stdout(format_args!("profil {}\n", env!("CARGO_PKG_VERSION")));
            ExitCode::SUCCESS
        }
        Command::Profile(args) => {
            let status = match run(&args) {
                Ok(Ending::Code(code)) => code,
                Ok(Ending::Signal(signal)) => profil::interrupt::end_like(signal),
                Err(RunError::Reported) => 1,
                Err(RunError::Regressed(m)) => {
                    to_stderr(format_args!("profil: {m}"));
                    3
                }
                Err(e) => {
                    to_stderr(format_args!("Profil Error: {e}"));
                    1
                }
            };
            ExitCode::from(status)
        }
    }
}
