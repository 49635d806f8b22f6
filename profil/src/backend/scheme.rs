//! Redox: talk to the profd daemon through the `prof:` scheme.

use std::io::{self, Read, Write};
use std::path::Path;

use profd::{ImageLayout, ProfData, ProfError, StartRequest};

use crate::profile::Profile;

const CTL: &str = "/scheme/prof/ctl";
const DATA: &str = "/scheme/prof/data";
const SAMPLES: &str = "/scheme/prof/samples";

pub struct Profiler {
    program: std::path::PathBuf,
}

fn errno(e: io::Error) -> ProfError {
    e.raw_os_error().map_or(ProfError::Generic, ProfError::from_errno)
}

impl Profiler {
    pub fn new(program: &Path, _frequency_hz: u64) -> io::Result<Profiler> {
        Ok(Profiler { program: program.to_path_buf() })
    }

    /// `profile(pid, start, end, interval)` as one write to `/scheme/prof/ctl`.
    pub fn start(&mut self, req: StartRequest, _image: &ImageLayout) -> Result<(), ProfError> {
        let line = format!(
            "start {} {:#x} {:#x} {:#x} {}\n",
            req.pid,
            req.start,
            req.end,
            req.interval,
            self.program.display()
        );
        let mut ctl = std::fs::OpenOptions::new().write(true).open(CTL).map_err(errno)?;
        ctl.write_all(line.as_bytes()).map_err(errno)
    }

    /// The daemon ends the session when the program exits; profil waits for the child itself.
    pub fn wait_for_end(&mut self) -> Result<(), ProfError> {
        Ok(())
    }

    /// Read back the bins and the exact samples.
    pub fn profile(&self) -> Result<Profile, ProfError> {
        let mut bytes = Vec::new();
        std::fs::File::open(DATA).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(errno)?;
        let data = ProfData::from_bytes(&bytes).map_err(|_| ProfError::Generic)?;
        let mut text = String::new();
        std::fs::File::open(SAMPLES).and_then(|mut f| f.read_to_string(&mut text)).map_err(errno)?;
        let image_samples = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some((crate::cli::parse_number(w.next()?)?, crate::cli::parse_number(w.next()?)?))
            })
            .collect::<Vec<_>>();
        let user_ticks = image_samples.iter().map(|s| s.1).sum();
        Ok(Profile { data, image_samples, user_ticks, ..Default::default() })
    }
}
