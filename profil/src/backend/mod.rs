//! Where profiling happens, per OS:
//!
//! * Linux: [`embedded`] runs the profd core in this process over `perf_event_open`.
//! * Redox: [`scheme`] asks the profd daemon through `/scheme/prof`.
//!
//! Both offer the same `Profiler` with `start` / `wait_for_end` / `profile`.

#[cfg(target_os = "linux")]
mod embedded;
#[cfg(target_os = "linux")]
pub use embedded::Profiler;

#[cfg(target_os = "redox")]
mod scheme;
#[cfg(target_os = "redox")]
pub use scheme::Profiler;
