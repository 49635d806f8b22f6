//! The vdso's ELF image. The kernel maps the same vdso into every 64-bit process, so ours is
//! the profiled program's (as `perf` reads it too): its symbols name samples in it, and its
//! `.eh_frame` unwinds through it. Only Linux has one.

/// The vdso as mapped in this process, or `None` where the kernel gave none.
#[cfg(target_os = "linux")]
pub fn image() -> Option<&'static [u8]> {
    // SAFETY: getauxval has no preconditions.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    let maps = crate::bounded::read_to_string(std::path::Path::new("/proc/self/maps"), crate::bounded::proc_limits::MAPS).ok()?;
    let range = maps.lines().find(|l| l.ends_with("[vdso]"))?.split_whitespace().next()?;
    let (lo, hi) = range.split_once('-')?;
    let (lo, hi) = (usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?);
    if base == 0 || lo != base || hi <= lo {
        return None;
    }
    // SAFETY: the vdso is mapped readable at [lo, hi) for the whole life of the process.
    Some(unsafe { std::slice::from_raw_parts(lo as *const u8, hi - lo) })
}

/// No vdso on this system.
#[cfg(not(target_os = "linux"))]
pub fn image() -> Option<&'static [u8]> {
    None
}
