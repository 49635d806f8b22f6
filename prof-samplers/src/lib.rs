//! prof-samplers: each OS's [`prof_core::Sampler`], the part of a profiling session that
//! counts the profiled process's instruction pointers (the rules stay in `prof-core`).
//!
//! * Linux: [`perf_event::PerfEventSampler`] (`perf_event_open(2)` on the process and its
//!   children), with [`unwind`] (call stacks from copied user stacks) and [`off_cpu`] (where
//!   threads blocked).
//! * Redox: [`redox_kernel::KernelSampler`] over the kernel's `sys:prof_ctl` / `sys:prof_data`
//!   (the kernel patch's prof table), through [`redox_kernel::KernelFiles`]: the real files on
//!   Redox, [`fake_kernel::FakeKernel`] (the kernel patch's module run on the host) in tests.
//! * Redox, a stock kernel: [`upstream_kernel::UpstreamSampler`] over upstream's own profiler
//!   (the kernel's `profiling` feature, `debug:profiling-N`), whose records
//!   `prof_events` decodes; [`upstream_kernel::EitherKernel`] is whichever of the two the kernel has.

pub mod fake_kernel;
#[cfg(target_os = "linux")]
pub mod off_cpu;
#[cfg(target_os = "linux")]
pub mod perf_event;
pub mod program_records;
pub mod record_span;
pub mod redox_kernel;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod syscall_names;
#[cfg(target_os = "linux")]
pub mod system_wide;
#[cfg(target_os = "linux")]
pub mod unwind;
pub mod upstream_kernel;
