//! Where profiling happens, per OS:
//!
//! * Linux: [`embedded`] runs the profd core in this process over `perf_event_open`.
//! * Redox: [`scheme`] asks the profd daemon through `/scheme/prof`.
//!
//! Both offer the same `Profiler` with `start` / `wait_for_end` / `profile`; a system-wide run
//! (`-a`) is [`record_system`] (Linux; the command line refuses it elsewhere).

#[cfg(target_os = "linux")]
mod embedded;
#[cfg(target_os = "linux")]
pub use embedded::Profiler;

#[cfg(target_os = "redox")]
mod scheme;
#[cfg(target_os = "redox")]
pub use scheme::Profiler;

#[cfg(target_os = "linux")]
mod system_wide;
#[cfg(target_os = "linux")]
pub use system_wide::record_system;

/// No system-wide run here: the kernel's session samples one process (the command line
/// refuses `-a` before this).
#[cfg(not(target_os = "linux"))]
pub fn record_system(_: &crate::cli::Args) -> Result<(crate::profile::Profile, std::time::Duration), prof_core::ProfError> {
    Err(prof_core::ProfError::failed_at("-a is not supported on this system"))
}
