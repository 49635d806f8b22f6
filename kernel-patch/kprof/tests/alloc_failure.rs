//! Out of memory is an error the system call returns (ENOMEM), never a panic: every
//! allocation the kernel makes for `sys:prof_data` (the copy of the tables, the stacks' frames,
//! the encoding of up to ~17 MiB) and for `start` (the tables) is fallible. This test binary's
//! allocator fails a thread's allocations on demand; an infallible allocation that it failed
//! would abort the whole binary (`handle_alloc_error`), as it would panic the kernel.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kprof::{CountFrom, CtlError, HostKernel, Profiler, Source, State, StackBuf};

/// The system allocator, except that a thread's allocations fail once its budget is spent.
struct Failing;

thread_local! {
    /// Allocations this thread may still make (`usize::MAX`: any number).
    static BUDGET: Cell<usize> = const { Cell::new(usize::MAX) };
    /// Allocations this thread has asked for.
    static ASKED: Cell<usize> = const { Cell::new(0) };
    /// Allocations this thread has freed.
    static FREED: Cell<usize> = const { Cell::new(0) };
}

/// May this thread allocate once more? Counts the request.
fn permitted() -> bool {
    ASKED.with(|asked| asked.set(asked.get() + 1));
    BUDGET.with(|budget| match budget.get() {
        0 => false,
        usize::MAX => true,
        left => {
            budget.set(left - 1);
            true
        }
    })
}

// SAFETY: defers to the system allocator, or returns null (allowed: allocation failure).
unsafe impl GlobalAlloc for Failing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if permitted() {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if permitted() {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(layout) }
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if permitted() {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREED.with(|freed| freed.set(freed.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Failing = Failing;

/// Run `f` with `budget` allocations allowed on this thread; its result and how many it asked.
fn with_budget<T>(budget: usize, f: impl FnOnce() -> T) -> (T, usize) {
    let before = ASKED.with(Cell::get);
    BUDGET.with(|b| b.set(budget));
    let out = f();
    BUDGET.with(|b| b.set(usize::MAX));
    (out, ASKED.with(Cell::get) - before)
}

const PID: usize = 42;
const DAEMON: usize = 9;

/// A session with PCs, program stacks and server stacks in its tables.
fn busy_profiler() -> Profiler {
    let p = Profiler::new(u64::MAX);
    p.start(PID, 256, CountFrom::Now).unwrap();
    p.note_request_taken(DAEMON, 0, PID, 1, 1);
    for i in 0..100u64 {
        let mut stack = StackBuf::new();
        for depth in 0..=(i % 7) {
            stack.frames[depth as usize] = 0x40_1000 + i * 0x10 + depth;
        }
        stack.len = (i % 7) as usize + 1;
        p.note_switch(0, PID);
        p.sample_from(Source::Timer, 0, true, stack.frames[0], Some(&stack));
        p.note_switch(1, DAEMON);
        p.sample_from(Source::Timer, 1, true, stack.frames[0] + 0x1000, Some(&stack));
    }
    p
}

#[test]
fn every_allocation_of_a_read_may_fail() {
    let p = busy_profiler();
    let whole = p.snapshot().unwrap();
    assert_eq!((whole.entries.len(), whole.stacks.len(), whole.server_stacks.len()), (100, 100, 100));
    let (_, asked) = with_budget(usize::MAX, || p.data(&mut HostKernel::default()).unwrap());
    assert_eq!(asked, 4, "entries, two stack indexes, one frames array");
    for budget in 0..asked {
        let (read, _) = with_budget(budget, || p.data(&mut HostKernel::default()));
        assert_eq!(read.err(), Some(CtlError::NoMemory), "allocation {budget} failed");
        // The control lock was given back and nothing changed.
        assert_eq!(p.snapshot().unwrap(), whole, "after allocation {budget} failed");
    }
}

#[test]
fn the_encoding_without_memory_is_an_error() {
    let snapshot = busy_profiler().data(&mut HostKernel::default()).unwrap();
    let ((bytes, len), asked) = with_budget(usize::MAX, || {
        let bytes = snapshot.to_bytes().unwrap();
        let len = bytes.len();
        (bytes, len)
    });
    assert_eq!(asked, 1, "one allocation of the exact length");
    assert_eq!((len, bytes.capacity()), (snapshot.encoded_len(), snapshot.encoded_len()));
    let (failed, _) = with_budget(0, || snapshot.to_bytes());
    assert_eq!(failed, Err(CtlError::NoMemory));
}

#[test]
fn every_allocation_of_a_start_may_fail() {
    // How many allocations a start makes, on a profiler of its own.
    let p = busy_profiler();
    p.stop();
    let (_, asked) = with_budget(usize::MAX, || {
        p.ctl(b"start 42 64", &mut HostKernel::default()).unwrap();
    });
    drop(p);
    assert!(asked >= 3, "three tables: {asked}");
    let p = busy_profiler();
    p.stop();
    let last = p.snapshot().unwrap();
    for budget in 0..asked {
        let (started, _) = with_budget(budget, || p.ctl(b"start 42 64", &mut HostKernel::default()));
        assert_eq!(started, Err(CtlError::NoMemory), "allocation {budget} of {asked} failed");
        assert_eq!(p.state(), State::Stopped);
        assert_eq!(p.snapshot().unwrap(), last, "the last session's data stays");
    }
    p.ctl(b"start 42 64", &mut HostKernel::default()).unwrap();
    assert_eq!(p.state(), State::Running);
}

/// A session whose tables hold `n` distinct program stacks (and up to 1,000 server stacks),
/// stopped, as `sys:prof_data` reads it after a big `-g` session.
fn profiler_with_stacks(n: u64) -> Profiler {
    let p = Profiler::new(u64::MAX);
    let start = format!("start {PID} 4096 stacks={n}");
    p.ctl(start.as_bytes(), &mut HostKernel::default()).unwrap();
    p.note_request_taken(DAEMON, 0, PID, 1, 1);
    for i in 0..n {
        let mut stack = StackBuf::new();
        // fib-like: 32 frames, distinct by the innermost ones.
        stack.len = 32;
        for (depth, frame) in stack.frames[..32].iter_mut().enumerate() {
            *frame = 0x40_1000 + (i >> (depth / 2)) * 0x10 + depth as u64;
        }
        p.note_switch(0, PID);
        p.sample_from(Source::Timer, 0, true, stack.frames[0], Some(&stack));
        if i < 1000 {
            p.note_switch(1, DAEMON);
            p.sample_from(Source::Timer, 1, true, stack.frames[0] + 0x1000, Some(&stack));
        }
    }
    p.stop();
    p
}

/// Allocations and frees of one `sys:prof_data` read as the glue makes it: the snapshot, its
/// encoding, and dropping both.
fn read_cost(p: &Profiler) -> (usize, usize, usize) {
    let (asked_before, freed_before) = (ASKED.with(Cell::get), FREED.with(Cell::get));
    let bytes = p.data(&mut HostKernel::default()).and_then(|s| s.to_bytes()).unwrap();
    let len = bytes.len();
    drop(bytes);
    (ASKED.with(Cell::get) - asked_before, FREED.with(Cell::get) - freed_before, len)
}

#[test]
fn a_read_allocates_the_same_however_many_stacks() {
    // 2026-11-25: a read after a 60 s `-g -F 4000` session on fib (~230,000 stacks) made one
    // allocation a stack; freeing them in the kernel's list allocator froze the guest for
    // minutes. Now: a constant number, and as many frees.
    let mut costs = Vec::new();
    for n in [10, 1_000, 100_000, 250_000] {
        let p = profiler_with_stacks(n);
        let whole = p.snapshot().unwrap();
        assert_eq!(whole.stacks.len() as u64, n, "every stack kept");
        assert_eq!(whole.server_stacks.len() as u64, n.min(1000));
        let (asked, freed, len) = read_cost(&p);
        assert_eq!(len, whole.encoded_len(), "the bytes decode to the same snapshot");
        costs.push((n, asked, freed));
    }
    eprintln!("(stacks, allocations, frees) of a read: {costs:?}");
    for &(n, asked, freed) in &costs {
        assert_eq!((asked, freed), (5, 5), "{n} stacks: entries, 2 indexes, frames, bytes");
    }
}
