//! Files a run writes besides the report, each in a format other tools read:
//!
//! * [`gmon`] — `-o FILE`: gmon.out for GNU gprof;
//! * [`collapsed`] — `--collapsed FILE`: folded stacks for flamegraph.pl / inferno;
//! * [`json`] — `--json FILE`: the whole run, for scripts.
//!
//! The files are created before the program starts, so an unwritable path fails at once
//! rather than after a long run.

pub mod collapsed;
pub mod gmon;
pub mod json;

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::cli::Args;
use crate::flat::FlatProfile;
use crate::profile::Outcome;
use crate::symbolize::{Sample, Symbolizer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Gmon,
    Collapsed,
    Json,
}

/// The export files asked for, open for writing.
pub struct Exports {
    files: Vec<(Format, PathBuf, File)>,
}

/// An export file that cannot be written.
#[derive(Debug)]
pub struct ExportError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cannot write '{}': {}", self.path.display(), crate::run::os_message(&self.error))
    }
}

impl Exports {
    /// Create (truncate) every file the options name.
    pub fn create(args: &Args) -> Result<Exports, ExportError> {
        let wanted = [(Format::Gmon, &args.gmon), (Format::Collapsed, &args.collapsed), (Format::Json, &args.json)];
        let mut files = Vec::new();
        for (format, path) in wanted {
            if let Some(path) = path {
                let file = File::create(path).map_err(|error| ExportError { path: path.clone(), error })?;
                files.push((format, path.clone(), file));
            }
        }
        Ok(Exports { files })
    }

    /// Write every export of the finished run.
    pub fn write(
        self,
        run: &Outcome,
        flat: &FlatProfile,
        samples: &[Sample],
        symbolizer: &Symbolizer,
    ) -> Result<(), ExportError> {
        for (format, path, mut file) in self.files {
            let bytes = match format {
                Format::Gmon => gmon::render(&run.profile.image_samples, run.frequency_hz),
                Format::Collapsed => collapsed::render(&run.program, flat).into_bytes(),
                Format::Json => json::render(run, flat, samples, symbolizer).into_bytes(),
            };
            file.write_all(&bytes).map_err(|error| ExportError { path, error })?;
        }
        Ok(())
    }
}
