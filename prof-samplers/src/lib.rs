//! prof-samplers: each OS's [`prof_core::Sampler`], the part of a profiling session that
//! counts the profiled process's instruction pointers (the rules stay in `prof-core`).
//!
//! * Linux: [`perf_event::PerfEventSampler`] (`perf_event_open(2)` on the process and its
//!   children), with [`unwind`] (call stacks from copied user stacks), [`off_cpu`] (where
//!   threads blocked) and [`syscalls`] (every system call's latency).
//! * Redox: [`upstream_kernel::UpstreamSampler`] over the kernel's own profiler (its `profiling`
//!   feature: `debug:ctl-profiling`, `debug:profiling-N`), whose records `prof_events` decodes:
//!   upstream's, or the typed, timestamped records of kernel-patch/events, from which
//!   [`program_records`] builds the program's clock, waits, daemons, process tree and
//!   requests (in a session on every process, every process's requests).
//!   [`fake_debug_files::FakeDebugFiles`] are those files in memory, for the host tests.

pub mod context_table;
pub mod fake_debug_files;
#[cfg(target_os = "linux")]
pub mod off_cpu;
#[cfg(target_os = "linux")]
pub mod perf_event;
#[cfg(target_os = "linux")]
pub mod proc_maps;
pub mod program_records;
pub mod record_span;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod syscall_names;
#[cfg(target_os = "linux")]
pub mod syscalls;
#[cfg(target_os = "linux")]
pub mod system_wide;
#[cfg(target_os = "linux")]
pub mod unwind;
pub mod upstream_kernel;
