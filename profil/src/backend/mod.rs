//! Where profiling happens, per OS:
//!
//! * Linux: [`embedded`] runs the profd core in this process over `perf_event_open`.
//! * Redox: [`scheme`] asks the profd daemon through `/scheme/prof`.
//!
//! Both offer the same `Profiler` with `start` / `wait_for_end` / `profile`; a system-wide run
//! (`-a`) is `record_system` (Linux: every CPU's perf event; Redox: profd's `start all`).

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

#[cfg(target_os = "redox")]
pub use scheme::record_system;
