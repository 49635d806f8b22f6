//! The spec's test program: three functions that each really spend time, and the link-time
//! addresses of `main`, `fib`, `loop`, `overflow` and `printf` so a profile can be read.
//!
//! The functions have unmangled names (`nm` shows `fib`, `loop`, `overflow`, `main`,
//! `fib_printf`) and are never inlined; `black_box` keeps the optimiser from folding the work.
//!
//! `fib [N [LOOPS]]` changes fib's argument and loop's size (defaults: the spec's 38 and 1000),
//! so tests can run shorter.  With `FIB_TIMINGS=1` each phase's wall time goes to stderr
//! (used to cross-check profiles where `perf` is not available).

#![no_main]

use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

/// Doubly recursive Fibonacci, in floating point as the spec's C program computes it.
#[no_mangle]
#[inline(never)]
pub extern "C" fn fib(n: i32) -> f64 {
    if n == 0 || n == 1 {
        1.0
    } else {
        fib(black_box(n - 1)) + fib(black_box(n - 2))
    }
}

/// Square roots by Newton's method, n*n of them.
#[export_name = "loop"]
#[inline(never)]
pub extern "C" fn loop_(n: i32) {
    for i in 0..n {
        for k in 0..n {
            let x = if i < k { k as f64 } else { (i + 1) as f64 };
            let mut a = x / 2.0;
            let mut d = (a * a - x).abs();
            while d > 0.0001 {
                a = black_box((x / a + a) / 2.0);
                d = (a * a - x).abs();
            }
        }
    }
}

/// Count up until the counter wraps negative.
#[no_mangle]
#[inline(never)]
pub extern "C" fn overflow() {
    let mut n: i32 = 1;
    while n > 0 {
        n = black_box(n).wrapping_add(1);
    }
}

/// The program's one output routine (the C program's `printf`).
#[no_mangle]
#[inline(never)]
pub extern "C" fn fib_printf(line: &std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    // A closed stdout must not turn into a panic in a test program.
    let _ = out.write_fmt(*line).and_then(|_| out.write_all(b"\n")).and_then(|_| out.flush());
}

/// The runtime load base of this executable (0 unless it is position independent).
///
/// `__ehdr_start` is defined by the linker at the ELF header; the `PT_LOAD` segment with file
/// offset 0 gives the header's link-time address, so the difference is the load base.
fn load_base() -> usize {
    extern "C" {
        static __ehdr_start: [u8; 64];
    }
    // SAFETY: the ELF header and program headers are mapped (they are in the first PT_LOAD).
    unsafe {
        let ehdr = std::ptr::addr_of!(__ehdr_start) as *const u8;
        let phoff = (ehdr.add(0x20) as *const u64).read_unaligned() as usize;
        let phentsize = (ehdr.add(0x36) as *const u16).read_unaligned() as usize;
        let phnum = (ehdr.add(0x38) as *const u16).read_unaligned() as usize;
        for i in 0..phnum {
            let ph = ehdr.add(phoff + i * phentsize);
            let p_type = (ph as *const u32).read_unaligned();
            let p_offset = (ph.add(0x08) as *const u64).read_unaligned();
            let p_vaddr = (ph.add(0x10) as *const u64).read_unaligned() as usize;
            if p_type == 1 && p_offset == 0 {
                return ehdr as usize - p_vaddr;
            }
        }
        0
    }
}

fn arg(args: &[String], i: usize, default: i32) -> i32 {
    match args.get(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("usage: fib [N [LOOPS]]  (N and LOOPS are integers; defaults 38 and 1000)");
            std::process::exit(2)
        }),
    }
}

fn timed<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    if std::env::var_os("FIB_TIMINGS").is_some() {
        eprintln!("fib.time.{name}: {:.6}", t.elapsed().as_secs_f64());
    }
    r
}

/// The C entry point.
///
/// # Safety
/// `argv` holds `argc` valid, NUL-terminated strings, as the C runtime passes them.
#[no_mangle]
pub unsafe extern "C" fn main(argc: i32, argv: *const *const std::ffi::c_char) -> i32 {
    // Read argv directly: with `no_main`, std's own argument capture is platform dependent.
    let args: Vec<String> = (0..argc.max(0) as usize)
        // SAFETY: the C runtime passes argc valid, NUL-terminated strings.
        .map(|i| unsafe { std::ffi::CStr::from_ptr(*argv.add(i)) }.to_string_lossy().into_owned())
        .collect();
    let n = arg(&args, 1, 38);
    let loops = arg(&args, 2, 1000);
    let x = timed("fib", || fib(black_box(n)));
    timed("loop", || loop_(black_box(loops)));
    timed("overflow", || overflow());
    let link = |f: usize| f - load_base();
    fib_printf(&format_args!("fib({}) = {:.6}", n, x));
    fib_printf(&format_args!("fib.main: {:#x}", link(main as *const () as usize)));
    fib_printf(&format_args!("fib.fib: {:#x}", link(fib as *const () as usize)));
    fib_printf(&format_args!("fib.loop: {:#x}", link(loop_ as *const () as usize)));
    fib_printf(&format_args!("fib.overflow: {:#x}", link(overflow as *const () as usize)));
    fib_printf(&format_args!("fib.printf: {:#x}", link(fib_printf as *const () as usize)));
    0
}
