//! The few Redox system calls the selftest makes, straight through `syscall`, and the kernel
//! scheme capabilities the kernel leaves in the bootstrap's metadata page.

use core::arch::asm;
use core::fmt;

// Numbers and flags from the redox_syscall crate (0.9).
const SYS_CLASS_PATH: usize = 0x1000_0000;
const SYS_CLASS_FILE: usize = 0x2000_0000;
const SYS_ARG_SLICE: usize = 0x0100_0000;
const SYS_ARG_MSLICE: usize = 0x0200_0000;
const SYS_RET_FILE: usize = 0x0010_0000;
const SYS_OPENAT_INTO: usize = SYS_CLASS_PATH | SYS_RET_FILE | 987;
const SYS_DUP_INTO: usize = SYS_CLASS_FILE | SYS_RET_FILE | 988;
const SYS_CLOSE: usize = SYS_CLASS_FILE | 6;
const SYS_READ: usize = SYS_CLASS_FILE | SYS_ARG_MSLICE | 3;
const SYS_WRITE: usize = SYS_CLASS_FILE | SYS_ARG_SLICE | 4;
const SYS_YIELD: usize = 158;
const SYS_NANOSLEEP: usize = 162;
const SYS_CLOCK_GETTIME: usize = 265;
const CLOCK_MONOTONIC: usize = 4;
const O_RDWR: usize = 0x0003_0000;

/// `[usize count][{u8 scheme_id; usize fd} x count][usize scheme-creation cap]`
const METADATA: usize = 0x7FFF_FFFF_C000;
pub const SCHEME_DEBUG: u8 = 1;
pub const SCHEME_SYS: u8 = 8;
pub const SCHEME_PROC: u8 = 9;

/// A negative errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub usize);
pub const ENOENT: Errno = Errno(2);

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "errno {}", self.0)
    }
}

unsafe fn syscall(
    n: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
    f: usize,
    g: usize,
) -> Result<usize, Errno> {
    let ret: usize;
    unsafe {
        asm!("syscall", inlateout("rax") n => ret, in("rdi") b, in("rsi") c, in("rdx") d,
             in("r10") e, in("r8") f, in("r9") g, lateout("rcx") _, lateout("r11") _,
             options(nostack));
    }
    if ret > usize::MAX - 4096 {
        Err(Errno(ret.wrapping_neg()))
    } else {
        Ok(ret)
    }
}

/// The root capability of kernel scheme `id`.
pub fn scheme_root(id: u8) -> Option<usize> {
    #[repr(C)]
    struct Info {
        scheme_id: u8,
        fd: usize,
    }
    let count = unsafe { (METADATA as *const usize).read_volatile() };
    let infos = (METADATA + 8) as *const Info;
    (0..count.min(64))
        .map(|i| unsafe { infos.add(i).read_volatile() })
        .find(|info| info.scheme_id == id)
        .map(|info| info.fd)
}

/// Fds we choose ourselves (the *_into calls take the number): the lowest free one from 100,
/// reused once closed (the kernel refuses numbers past its table with EEXIST, and the
/// selftest opens thousands of files).
const FIRST_FD: usize = 100;
const FDS: usize = 1024;
static USED_FDS: [core::sync::atomic::AtomicU64; FDS / 64] = [const { core::sync::atomic::AtomicU64::new(0) }; FDS / 64];

fn new_fd() -> usize {
    use core::sync::atomic::Ordering;
    for (i, word) in USED_FDS.iter().enumerate() {
        let mut bits = word.load(Ordering::Relaxed);
        while bits != u64::MAX {
            let bit = (!bits).trailing_zeros() as usize;
            match word.compare_exchange(bits, bits | 1 << bit, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return FIRST_FD + 64 * i + bit,
                Err(now) => bits = now,
            }
        }
    }
    FIRST_FD + FDS // all taken: the call fails and says so
}

fn free_fd(fd: usize) {
    if let Some(at) = fd.checked_sub(FIRST_FD).filter(|&at| at < FDS) {
        USED_FDS[at / 64].fetch_and(!(1 << (at % 64)), core::sync::atomic::Ordering::AcqRel);
    }
}

/// Open `path` relative to a scheme root.
pub fn openat(root: usize, path: &str) -> Result<usize, Errno> {
    into_new_fd(|fd| unsafe { syscall(SYS_OPENAT_INTO, root, path.as_ptr() as usize, path.len(), O_RDWR, 0, fd) })
}

/// Duplicate `fd` with a transform (how the proc scheme opens context handles).
pub fn dup(fd: usize, what: &str) -> Result<usize, Errno> {
    into_new_fd(|new| unsafe { syscall(SYS_DUP_INTO, fd, what.as_ptr() as usize, what.len(), new, 0, 0) })
}

/// Run a *_into call with a free fd number; the number is free again if the call fails.
fn into_new_fd(call: impl FnOnce(usize) -> Result<usize, Errno>) -> Result<usize, Errno> {
    let fd = new_fd();
    let result = call(fd);
    if result.is_err() {
        free_fd(fd);
    }
    result
}

pub fn read(fd: usize, buf: &mut [u8]) -> Result<usize, Errno> {
    unsafe { syscall(SYS_READ, fd, buf.as_mut_ptr() as usize, buf.len(), 0, 0, 0) }
}

pub fn write(fd: usize, buf: &[u8]) -> Result<usize, Errno> {
    unsafe { syscall(SYS_WRITE, fd, buf.as_ptr() as usize, buf.len(), 0, 0, 0) }
}

pub fn close(fd: usize) {
    let _ = unsafe { syscall(SYS_CLOSE, fd, 0, 0, 0, 0, 0) };
    free_fd(fd);
}

pub fn sched_yield() {
    let _ = unsafe { syscall(SYS_YIELD, 0, 0, 0, 0, 0, 0) };
}

/// Sleep (blocking lets the scheduler move us to another CPU).
pub fn sleep_ms(ms: u32) {
    #[repr(C)]
    struct TimeSpec {
        sec: i64,
        nsec: i32,
    }
    let request = TimeSpec {
        sec: 0,
        nsec: ms as i32 * 1_000_000,
    };
    let mut remaining = TimeSpec { sec: 0, nsec: 0 };
    let _ = unsafe {
        syscall(
            SYS_NANOSLEEP,
            &request as *const _ as usize,
            &mut remaining as *mut _ as usize,
            0,
            0,
            0,
            0,
        )
    };
}

/// Nanoseconds of the kernel's monotonic clock.
pub fn monotonic_ns() -> u64 {
    #[repr(C)]
    struct TimeSpec {
        sec: i64,
        nsec: i32,
    }
    let mut now = TimeSpec { sec: 0, nsec: 0 };
    let _ = unsafe { syscall(SYS_CLOCK_GETTIME, CLOCK_MONOTONIC, &mut now as *mut _ as usize, 0, 0, 0, 0) };
    now.sec as u64 * 1_000_000_000 + now.nsec as u64
}

/// Read a whole file into `out`.
pub fn read_all(fd: usize, out: &mut alloc::vec::Vec<u8>) -> Result<(), Errno> {
    let mut chunk = [0; 4096];
    loop {
        let n = read(fd, &mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Open, read whole and close `sys:<name>`.
pub fn read_sys(name: &str) -> Result<alloc::vec::Vec<u8>, Errno> {
    let fd = openat(scheme_root(SCHEME_SYS).ok_or(ENOENT)?, name)?;
    let mut bytes = alloc::vec::Vec::new();
    let result = read_all(fd, &mut bytes);
    close(fd);
    result.map(|()| bytes)
}

/// Write once to `sys:<name>`.
pub fn write_sys(name: &str, text: &str) -> Result<usize, Errno> {
    let fd = openat(scheme_root(SCHEME_SYS).ok_or(ENOENT)?, name)?;
    let result = write(fd, text.as_bytes());
    close(fd);
    result
}

/// The serial line: the debug scheme.
pub struct Debug;

static DEBUG_FD: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(usize::MAX);

impl fmt::Write for Debug {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut fd = DEBUG_FD.load(core::sync::atomic::Ordering::Relaxed);
        if fd == usize::MAX {
            fd = scheme_root(SCHEME_DEBUG)
                .and_then(|root| openat(root, "").ok())
                .ok_or(fmt::Error)?;
            DEBUG_FD.store(fd, core::sync::atomic::Ordering::Relaxed);
        }
        write(fd, s.as_bytes()).map(|_| ()).map_err(|_| fmt::Error)
    }
}

/// One line on the serial port.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use core::fmt::Write as _;
        let _ = writeln!($crate::sys::Debug, $($arg)*);
    }};
}

/// Power off (ends QEMU).
pub fn shutdown() -> ! {
    let _ = write_sys("kstop", "shutdown");
    loop {
        core::hint::spin_loop();
    }
}
