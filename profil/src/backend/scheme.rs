//! Redox: talk to the profd daemon through the `prof:` scheme (its contract is in the README:
//! "The prof: scheme").

use std::io::{self, Read, Write};
use std::path::Path;

use profd::formats::{parse_samples, parse_status, reason_from_str};
use profd::{ImageLayout, ProfData, ProfError, StartRequest};

use crate::profile::Profile;

const CTL: &str = "/scheme/prof/ctl";
const STATUS: &str = "/scheme/prof/status";
const DATA: &str = "/scheme/prof/data";
const SAMPLES: &str = "/scheme/prof/samples";

pub struct Profiler;

fn errno(e: io::Error) -> ProfError {
    e.raw_os_error().map_or(ProfError::Generic, ProfError::from_errno)
}

fn read_file(path: &str) -> Result<Vec<u8>, ProfError> {
    let mut bytes = Vec::new();
    std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(errno)?;
    Ok(bytes)
}

fn ctl(line: &str) -> Result<(), ProfError> {
    let mut f = std::fs::OpenOptions::new().write(true).open(CTL).map_err(errno)?;
    f.write_all(line.as_bytes()).map_err(errno)
}

impl Profiler {
    /// The daemon samples at the kernel's timer rate; `-F` does not apply on Redox.
    pub fn new(_program: &Path, _frequency_hz: u64) -> io::Result<Profiler> {
        // Fail with a clear word before anything runs if the daemon is not there.
        std::fs::File::open(STATUS).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot open {STATUS}: {} (is profd running?)", crate::run::os_message(&e)))
        })?;
        Ok(Profiler)
    }

    /// `profile(pid, start, end, interval)`: one line to `/scheme/prof/ctl`, with the text
    /// bounds from the ELF so the daemon can check the range and bin by link-time address.
    pub fn start(&mut self, req: StartRequest, image: &ImageLayout) -> Result<(), ProfError> {
        ctl(&profd::ctl::format_start(&req, &image.text))
    }

    /// The kernel ends the session when the program exits; profil waits for the child itself.
    pub fn wait_for_end(&mut self) -> Result<(), ProfError> {
        Ok(())
    }

    /// Read back the status, the bins and the exact samples (after the child was reaped).
    pub fn profile(&self) -> Result<Profile, ProfError> {
        let status = |text: &[u8]| -> Vec<(String, String)> { parse_status(&String::from_utf8_lossy(text)) };
        let mut st = status(&read_file(STATUS)?);
        let get = |st: &[(String, String)], k: &str| st.iter().find(|kv| kv.0 == k).map(|kv| kv.1.clone()).unwrap_or_default();
        if get(&st, "state") == "running" {
            // The program is gone but the session has not noticed yet (e.g. a child of it
            // still runs): end it now so the data is final.
            ctl("stop\n")?;
            st = status(&read_file(STATUS)?);
        }
        let data = ProfData::from_bytes(&read_file(DATA)?).map_err(|_| ProfError::Generic)?;
        let (image_samples, foreign_samples) = parse_samples(&String::from_utf8_lossy(&read_file(SAMPLES)?));
        let num = |k: &str| profd::ctl::number(&get(&st, k)).unwrap_or(0);
        Ok(Profile {
            data,
            image_samples,
            foreign_samples,
            mappings: Vec::new(),
            user_ticks: num("ticks_user"),
            kernel_ticks: Some(num("ticks_kernel")),
            lost: num("dropped"),
            stop_reason: reason_from_str(&get(&st, "reason")),
        })
    }
}
