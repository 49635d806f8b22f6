//! What a bare initfs program needs before `main`: the initfs header the bootloader and kernel
//! read, a stack, a heap (kprof's decoder returns a `Vec`) and a panic handler.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::sys;

// The 0x40-byte header at 0x1000: magic `RedoxFtw` (checked by the bootloader) and the 64-bit
// entry point at offset 0x1a (read by the kernel).
core::arch::global_asm!(
    ".section .header, \"a\"",
    ".ascii \"RedoxFtw\"",
    ".fill 0x1a - 8, 1, 0",
    ".quad _start",
    ".fill 0x40 - 0x22, 1, 0",
);

const STACK_SIZE: usize = 64 * 1024;

#[repr(C, align(16))]
struct Stack([u8; STACK_SIZE]);

static mut STACK: Stack = Stack([0; STACK_SIZE]);

/// The kernel enters here with no stack.
#[unsafe(naked)]
#[unsafe(no_mangle)]
#[unsafe(link_section = ".text._start")]
pub unsafe extern "C" fn _start() -> ! {
    core::arch::naked_asm!(
        "lea rsp, [rip + {stack} + {size}]",
        "and rsp, -16",
        "call {main}",
        "ud2",
        stack = sym STACK,
        size = const STACK_SIZE,
        main = sym crate::main,
    )
}

const HEAP_SIZE: usize = 1024 * 1024;

#[repr(C, align(4096))]
struct Heap([u8; HEAP_SIZE]);

static mut HEAP: Heap = Heap([0; HEAP_SIZE]);

/// A bump allocator that takes back the latest block when it is freed and starts over
/// whenever nothing is live (enough for a few snapshots at a time).
struct Bump {
    next: AtomicUsize,
    live: AtomicUsize,
}

#[global_allocator]
static ALLOCATOR: Bump = Bump {
    next: AtomicUsize::new(0),
    live: AtomicUsize::new(0),
};

unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = &raw mut HEAP as usize;
        let start = (base + self.next.load(Ordering::Relaxed)).next_multiple_of(layout.align());
        let end = start + layout.size();
        if end > base + HEAP_SIZE {
            return core::ptr::null_mut();
        }
        self.next.store(end - base, Ordering::Relaxed);
        self.live.fetch_add(1, Ordering::Relaxed);
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let offset = ptr as usize - &raw mut HEAP as usize;
        if self.live.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.next.store(0, Ordering::Relaxed);
        } else if offset + layout.size() == self.next.load(Ordering::Relaxed) {
            self.next.store(offset, Ordering::Relaxed);
        }
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    crate::say!("kprof-selftest: FAIL panic: {}", info);
    sys::shutdown()
}
