//! Linux: a system-wide run (`-a`) over `perf_event_open` on every CPU
//! ([`prof_samplers::system_wide`]), until `-t` passes or Ctrl-C.

use std::time::{Duration, Instant};

use prof_core::system::SystemRecord;
use prof_core::ProfError;
use prof_samplers::system_wide::{SystemConfig, SystemSampler};

use crate::cli::Args;
use crate::profile::Profile;

/// Sample every process until `args.duration` passes or a signal (Ctrl-C, SIGTERM, SIGHUP)
/// comes; the profile of the run, which lasted the time it gives.
pub fn record_system(args: &Args) -> Result<(Profile, Duration), ProfError> {
    // Installed before counting starts, so Ctrl-C ends the run rather than profil.
    crate::interrupt::install();
    let mut sampler = SystemSampler::start(SystemConfig { frequency_hz: args.frequency_hz, call_graph: args.call_graph, requests: args.requests })?;
    let started = Instant::now();
    let deadline = args.duration.map(|d| started + d);
    let mut record = SystemRecord::default();
    while crate::interrupt::caught().is_none() {
        let timeout_ms = match deadline {
            None => 1000,
            Some(d) if Instant::now() >= d => break,
            Some(d) => d.saturating_duration_since(Instant::now()).as_millis().min(1000) as i32 + 1,
        };
        sampler.wait(timeout_ms).map_err(|e| ProfError::failed("poll", &e))?;
        record.ingest(sampler.collect(false));
    }
    let elapsed = started.elapsed();
    record.ingest(sampler.collect(true));
    // The session ends here: the lock is let go with the events.
    drop(sampler);
    let mut profile = Profile::from_system(&record, args.call_graph != prof_core::sampler::CallGraph::None);
    profile.parts_mut().clock.elapsed = Some(elapsed);
    profile.parts_mut().source.cpus = std::thread::available_parallelism().ok().map(|n| n.get() as u64);
    profile.parts_mut().source.kernel = crate::kernel::running();
    Ok((profile, elapsed))
}
