//! Call stacks: the frame-pointer walk over a fake user memory, and the lock-free stack table
//! driven as the timer hooks of many CPUs drive it.

use std::collections::HashMap;
use std::sync::Arc;

use kprof::{
    CountFrom, ENTRY_STUB_LEN, MAX_ROOTS, MAX_STACK_DEPTH, Profiler, DEFAULT_STACKS, StackBuf,
    StackEntry, walk_frame_pointers, walk_kernel_frame_pointers,
};

const PID: usize = 42;

/// A user stack: frame records (saved frame pointer, return address) at their addresses.
fn memory(frames: &[(u64, u64, u64)]) -> HashMap<u64, u64> {
    let mut m = HashMap::new();
    for &(at, next, ret) in frames {
        m.insert(at, next);
        m.insert(at + 8, ret);
    }
    m
}

fn stack(frames: &[u64], truncated: bool) -> StackBuf {
    let mut s = StackBuf::new();
    s.frames[..frames.len()].copy_from_slice(frames);
    s.len = frames.len();
    s.truncated = truncated;
    s
}

#[test]
fn a_complete_chain_ends_at_a_zero_frame_pointer() {
    // c (pc) <- b <- a <- main; main's frame record has a zero saved frame pointer.
    let m = memory(&[(0x7000, 0x7040, 0x1105), (0x7040, 0x7080, 0x1205), (0x7080, 0, 0x1305)]);
    let s = walk_frame_pointers(0x1010, 0x7000, &[], |a| m.get(&a).copied());
    assert_eq!(s, stack(&[0x1010, 0x1105, 0x1205, 0x1305], false));
}

#[test]
fn broken_chains_are_cut_and_marked() {
    let unreadable = memory(&[(0x7000, 0x9000, 0x1105)]);
    let s = walk_frame_pointers(0x1010, 0x7000, &[], |a| unreadable.get(&a).copied());
    assert_eq!(s, stack(&[0x1010, 0x1105], true), "next frame unmapped");
    let backwards = memory(&[(0x7000, 0x6ff0, 0x1105)]);
    let s = walk_frame_pointers(0x1010, 0x7000, &[], |a| backwards.get(&a).copied());
    assert_eq!(s, stack(&[0x1010, 0x1105], true), "frame pointer moving down");
    let s = walk_frame_pointers(0x1010, 0x7004, &[], |_| Some(0));
    assert_eq!(s, stack(&[0x1010], true), "misaligned");
    // No frame pointer at all (a root, or code without frames whose rbp is 0).
    assert_eq!(walk_frame_pointers(0x1010, 0, &[], |_| None), stack(&[0x1010], false));
    // A zero return address ends the chain as a root.
    let rooted = memory(&[(0x7000, 0x7040, 0)]);
    assert_eq!(walk_frame_pointers(0x1010, 0x7000, &[], |a| rooted.get(&a).copied()), stack(&[0x1010], false));
    // The top of the address space: the return address's own address would overflow.
    assert!(walk_frame_pointers(0x1010, !7, &[], |_| Some(1)).truncated);
}

/// `_start` at 0x1000 calls the libc start routine; the return address is just past its call.
const ENTRY: u64 = 0x1000;
const INTO_START: u64 = ENTRY + 0x2a;

#[test]
fn a_chain_that_returns_into_the_entry_stub_is_complete() {
    // pc in fib <- main <- relibc_start_v1 <- _start. What `_start`'s caller frame would be
    // is whatever the stub left in rbp: here a readable, upward garbage record, which the walk
    // must not follow.
    let m = memory(&[
        (0x7000, 0x7040, 0x1505),
        (0x7040, 0x7080, 0x1405),
        (0x7080, 0x70c0, INTO_START),
        (0x70c0, 0x7100, 0xdead_beef),
    ]);
    let read = |a: u64| m.get(&a).copied();
    let want = stack(&[0x1010, 0x1505, 0x1405, INTO_START], false);
    assert_eq!(walk_frame_pointers(0x1010, 0x7000, &[ENTRY, 0, 0, 0], read), want);
    // Any of the roots; unused (0) roots never match.
    assert_eq!(walk_frame_pointers(0x1010, 0x7000, &[0, 0x9000, ENTRY], read), want);
    // Without the entry the same chain runs into the garbage.
    let s = walk_frame_pointers(0x1010, 0x7000, &[], read);
    assert_eq!(&s.frames()[..5], &[0x1010, 0x1505, 0x1405, INTO_START, 0xdead_beef]);
    // A relibc without frame pointers: the record above main's is garbage, unreadable; the
    // chain never returns into the stub and stays truncated.
    let no_fp = memory(&[(0x7000, 0x7040, 0x1505), (0x7040, 0x1234_5678, 0x1405)]);
    let s = walk_frame_pointers(0x1010, 0x7000, &[ENTRY], |a| no_fp.get(&a).copied());
    assert_eq!(s, stack(&[0x1010, 0x1505, 0x1405], true));
}

#[test]
fn only_returns_just_past_an_entry_are_into_its_stub() {
    for (ret, root) in [
        (ENTRY, false),
        (ENTRY + 1, true),
        (ENTRY + ENTRY_STUB_LEN, true),
        (ENTRY + ENTRY_STUB_LEN + 1, false),
        (ENTRY - 1, false),
    ] {
        let m = memory(&[(0x7000, 0x7040, ret), (0x7040, 0x7080, 0x2000), (0x7080, 0, 0x2100)]);
        let s = walk_frame_pointers(0x1010, 0x7000, &[ENTRY], |a| m.get(&a).copied());
        let want: &[u64] = if root { &[0x1010, ret] } else { &[0x1010, ret, 0x2000, 0x2100] };
        assert_eq!(s, stack(want, false), "return address {ret:#x}");
    }
}

#[test]
fn a_session_remembers_the_entry_points_of_its_process() {
    let p = Profiler::new(u64::MAX);
    p.start(PID, 64, CountFrom::Exec).unwrap();
    assert_eq!(p.roots(), [0; MAX_ROOTS]);
    // Another process's exec is not ours.
    p.note_addr_space_switch(7, 0x40_0000, 0x40_1000);
    assert_eq!(p.roots(), [0; MAX_ROOTS]);
    // The exec, then threads: each distinct entry once, the first MAX_ROOTS kept.
    p.note_addr_space_switch(PID, 0x40_0000, 0x40_1000);
    p.note_addr_space_switch(PID, 0x40_0000, 0x40_1000);
    p.note_addr_space_switch(PID, 0x40_0000, 0);
    for entry in [0x40_2000, 0x40_3000, 0x40_4000, 0x40_5000] {
        p.note_addr_space_switch(PID, 0x40_0000, entry);
    }
    assert_eq!(p.roots(), [0x40_1000, 0x40_2000, 0x40_3000, 0x40_4000]);
    // The next session starts with none.
    p.stop();
    p.start(PID, 64, CountFrom::Now).unwrap();
    assert_eq!(p.roots(), [0; MAX_ROOTS]);
}

#[test]
fn deep_chains_stop_at_the_depth_bound() {
    // An endless chain upwards: frame i at 0x10000 + 0x10 i.
    let s = walk_frame_pointers(0x1010, 0x10000, &[], |a| Some(if a % 16 == 0 { a + 16 } else { 0x2000 + a }));
    assert_eq!(s.len, MAX_STACK_DEPTH);
    assert!(s.truncated);
}

fn running() -> Profiler {
    let p = Profiler::new(u64::MAX);
    p.start(PID, 64, CountFrom::Now).unwrap();
    p
}

fn stacks(p: &Profiler) -> Vec<(Vec<u64>, bool, u64)> {
    let s = p.snapshot().unwrap();
    s.stacks.into_iter().map(|StackEntry { count, truncated, frames, .. }| (frames, truncated, count)).collect()
}

#[test]
fn stacks_of_counted_ticks_only() {
    let p = running();
    p.note_switch(0, PID);
    p.note_switch(1, 7);
    let a = stack(&[0x1310, 0x1105, 0x1005], false);
    let b = stack(&[0x1310, 0x1205, 0x1005], false);
    assert!(p.wants_stack(0) && !p.wants_stack(1));
    for _ in 0..3 {
        p.sample_stack(0, true, 0x1310, Some(&a));
    }
    p.sample_stack(0, true, 0x1310, Some(&b));
    p.sample_stack(1, true, 0x1310, Some(&b));
    // A kernel sample: kernel frames, then the program's below its system call.
    let k = stack(&[0xffff_8000_0000_1010, 0xffff_8000_0000_2005, 0x1315, 0x1005], false);
    p.sample_stack(0, false, 0xffff_8000_0000_1010, Some(&k));
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.kernel_ticks, s.stacks_dropped, s.stack_capacity), (4, 1, 0, DEFAULT_STACKS as u64));
    assert_eq!(
        stacks(&p),
        vec![
            (vec![0x1310, 0x1105, 0x1005], false, 3),
            (vec![0x1310, 0x1205, 0x1005], false, 1),
            (vec![0xffff_8000_0000_1010, 0xffff_8000_0000_2005, 0x1315, 0x1005], false, 1)
        ]
    );
    // The same frames cut short are another stack.
    p.sample_stack(0, true, 0x1310, Some(&stack(&[0x1310, 0x1105, 0x1005], true)));
    assert_eq!(stacks(&p).len(), 4);
    // A new session starts with an empty stack table.
    p.stop();
    p.start(PID, 64, CountFrom::Now).unwrap();
    assert_eq!(stacks(&p), vec![]);
    assert!(!Profiler::new(u64::MAX).wants_stack(0), "no session");
}

#[test]
fn a_full_stack_table_drops_and_says_so() {
    let p = running();
    p.note_switch(0, PID);
    for i in 0..DEFAULT_STACKS as u64 + 10 {
        p.sample_stack(0, true, 0x1000, Some(&stack(&[0x1000, 0x2000 + i], false)));
    }
    // Known stacks still count in a full table.
    p.sample_stack(0, true, 0x1000, Some(&stack(&[0x1000, 0x2000], false)));
    let s = p.snapshot().unwrap();
    assert_eq!(s.stacks.len(), DEFAULT_STACKS);
    assert_eq!(s.stacks_dropped, 10);
    assert_eq!(s.stacks.iter().map(|e| e.count).sum::<u64>() + s.stacks_dropped, s.user_ticks);
    assert_eq!(s.stacks.iter().find(|e| e.frames == [0x1000, 0x2000]).unwrap().count, 2);
}

/// Threads on 8 CPUs inserting the same few stacks at once (every insert races for the same
/// slots): every tick's stack is counted exactly once, none is torn.
#[test]
fn concurrent_inserts_sum_exactly() {
    let p = Arc::new(running());
    let shapes: Vec<StackBuf> = (0..6u64).map(|i| stack(&[0x1000 + i, 0x2000, 0x3000 + i % 2], i == 5)).collect();
    let shapes = Arc::new(shapes);
    let threads: Vec<_> = (0..8)
        .map(|cpu| {
            let (p, shapes) = (p.clone(), shapes.clone());
            std::thread::spawn(move || {
                p.note_switch(cpu, PID);
                for i in 0..20_000usize {
                    let s = &shapes[(i + cpu) % shapes.len()];
                    p.sample_stack(cpu, true, s.frames[0], Some(s));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = p.snapshot().unwrap();
    assert_eq!((s.user_ticks, s.stacks_dropped), (160_000, 0));
    assert_eq!(s.stacks.len(), 6);
    for (e, shape) in s.stacks.iter().zip(shapes.iter()) {
        assert_eq!((e.frames.as_slice(), e.truncated), (shape.frames(), shape.truncated));
        assert!(e.count > 20_000, "{e:?}");
    }
    assert_eq!(s.stacks.iter().map(|e| e.count).sum::<u64>(), 160_000);
}

// The kernel walk: an NMI that interrupted the kernel in a system call of the program.

/// The interrupted context's kernel stack (64 KiB, naturally aligned, as the kernel's `Kstack`).
const KSTACK: (u64, u64) = (0xffff_8000_0123_0000, 0xffff_8000_0124_0000);
const KTEXT: (u64, u64) = (0xffff_ffff_8000_0000, 0xffff_ffff_8010_0000);

fn is_ktext(a: u64) -> bool {
    (KTEXT.0..KTEXT.1).contains(&a)
}

/// The kernel stack of a `read` system call: `sys_read` <- `syscall` (the Rust handler) <-
/// the entry stub, whose frame record holds the user's frame pointer (0x7000).
fn kernel_memory() -> HashMap<u64, u64> {
    let top = KSTACK.1;
    memory(&[
        (top - 0x400, top - 0x200, 0xffff_ffff_8000_5105), // sys_read's record
        (top - 0x200, top - 0x100, 0xffff_ffff_8000_6205), // syscall's
        (top - 0x100, 0x7000, 0xffff_ffff_8000_0042),      // the stub's caller: the user fp
    ])
}

#[test]
fn a_kernel_stack_joins_the_programs_at_its_system_call() {
    let k = kernel_memory();
    let user = memory(&[(0x7000, 0x7040, 0x1105), (0x7040, 0, 0x1205)]);
    let s = walk_kernel_frame_pointers(
        0xffff_ffff_8000_5010,
        KSTACK.1 - 0x400,
        KSTACK,
        is_ktext,
        |a| k.get(&a).copied(),
        Some(0x1010),
        &[],
        |a| user.get(&a).copied(),
    );
    assert_eq!(
        s,
        stack(
            &[
                0xffff_ffff_8000_5010,
                0xffff_ffff_8000_5105,
                0xffff_ffff_8000_6205,
                0xffff_ffff_8000_0042,
                0x1010,
                0x1105,
                0x1205
            ],
            false
        )
    );
}

#[test]
fn the_kernel_walk_reads_only_its_kernel_stack() {
    let k = kernel_memory();
    let read_k = |a: u64| {
        assert!(a >= KSTACK.0 && a + 8 <= KSTACK.1, "read outside the kernel stack: {a:#x}");
        k.get(&a).copied()
    };
    let no_user = |_: u64| None;
    // A frame pointer outside the stack from the start (the entry stub, before any frame of
    // its own): the user's; the kernel part is the PC alone.
    let s = walk_kernel_frame_pointers(0xffff_ffff_8000_0030, 0x7000, KSTACK, is_ktext, read_k, Some(0x1010), &[], |a| {
        (a == 0x7000 || a == 0x7008).then_some(0)
    });
    assert_eq!(s, stack(&[0xffff_ffff_8000_0030, 0x1010], false));
    // A record whose return address is not kernel text: cut.
    let bad = memory(&[(KSTACK.1 - 0x400, KSTACK.1 - 0x200, 0x1234)]);
    let s = walk_kernel_frame_pointers(0xffff_ffff_8000_5010, KSTACK.1 - 0x400, KSTACK, is_ktext, |a| bad.get(&a).copied(), Some(0x1010), &[], no_user);
    assert_eq!(s, stack(&[0xffff_ffff_8000_5010], true));
    // A record at the very top (no room for its return address), misaligned, or moving down.
    for fp in [KSTACK.1 - 8, KSTACK.1 - 0x3fc] {
        let s = walk_kernel_frame_pointers(1 << 63, fp, KSTACK, is_ktext, read_k, Some(0x1010), &[], no_user);
        assert!(s.truncated && s.len == 1, "{fp:#x}");
    }
    let down = memory(&[(KSTACK.1 - 0x400, KSTACK.1 - 0x500, 0xffff_ffff_8000_5105)]);
    let s = walk_kernel_frame_pointers(1 << 63, KSTACK.1 - 0x400, KSTACK, is_ktext, |a| down.get(&a).copied(), Some(0x1010), &[], no_user);
    assert_eq!(s, stack(&[1 << 63, 0xffff_ffff_8000_5105], true));
    // Leaving the stack for a kernel address (not a user frame pointer): cut.
    let away = memory(&[(KSTACK.1 - 0x400, 0xffff_8000_9999_0000, 0xffff_ffff_8000_5105)]);
    let s = walk_kernel_frame_pointers(1 << 63, KSTACK.1 - 0x400, KSTACK, is_ktext, |a| away.get(&a).copied(), Some(0x1010), &[], no_user);
    assert_eq!(s, stack(&[1 << 63, 0xffff_ffff_8000_5105], true));
}

#[test]
fn a_kernel_context_without_a_user_entry() {
    let k = kernel_memory();
    // Not entered from user mode: where the chain leaves the stack nothing more is known.
    let s = walk_kernel_frame_pointers(0xffff_ffff_8000_5010, KSTACK.1 - 0x400, KSTACK, is_ktext, |a| k.get(&a).copied(), None, &[], |_| None);
    assert_eq!(s.frames(), &[0xffff_ffff_8000_5010, 0xffff_ffff_8000_5105, 0xffff_ffff_8000_6205, 0xffff_ffff_8000_0042]);
    assert!(s.truncated);
    // A kernel thread's chain ends at a zero return address: complete.
    let root = memory(&[(KSTACK.1 - 0x400, 0, 0)]);
    let s = walk_kernel_frame_pointers(0xffff_ffff_8000_5010, KSTACK.1 - 0x400, KSTACK, is_ktext, |a| root.get(&a).copied(), None, &[], |_| None);
    assert_eq!(s, stack(&[0xffff_ffff_8000_5010], false));
}

#[test]
fn kernel_and_user_frames_share_the_depth_bound() {
    // A deep user chain under a three-frame kernel stack: cut at MAX_STACK_DEPTH in all.
    let k = kernel_memory();
    let user: HashMap<u64, u64> = (0..200u64)
        .flat_map(|i| [(0x7000 + 0x40 * i, 0x7040 + 0x40 * i), (0x7008 + 0x40 * i, 0x1105 + i)])
        .collect();
    let s = walk_kernel_frame_pointers(0xffff_ffff_8000_5010, KSTACK.1 - 0x400, KSTACK, is_ktext, |a| k.get(&a).copied(), Some(0x1010), &[], |a| user.get(&a).copied());
    assert_eq!(s.len, MAX_STACK_DEPTH);
    assert!(s.truncated);
    assert_eq!(&s.frames()[..5], &[0xffff_ffff_8000_5010, 0xffff_ffff_8000_5105, 0xffff_ffff_8000_6205, 0xffff_ffff_8000_0042, 0x1010]);
}

/// The program's stacks are kept by thread: the context's id the scheduler's hook wrote for
/// the CPU owns each (the same stack in two threads is two records); one not known is 0.
#[test]
fn the_programs_stacks_are_kept_by_thread() {
    let p = Profiler::new(u64::MAX);
    p.start(PID, 64, CountFrom::Now).unwrap();
    let on = |cpu: usize, ctx: u32, frames: &[u64]| {
        p.note_switch_begin(cpu);
        p.note_switch_to(cpu, PID, ctx);
        p.note_switch_end(cpu);
        p.sample_stack(cpu, true, frames[0], Some(&stack(frames, false)));
    };
    on(0, 31, &[0x1010, 0x1105]);
    on(1, 32, &[0x1010, 0x1105]);
    on(1, 32, &[0x1010, 0x1105]);
    on(0, 31, &[0x1020]);
    p.note_switch(2, PID);
    p.sample_stack(2, true, 0x1030, Some(&stack(&[0x1030], false)));
    let s = p.snapshot().unwrap();
    let mut by_thread: Vec<(u64, Vec<u64>, u64)> = s.stacks.iter().map(|e| (e.thread, e.frames.clone(), e.count)).collect();
    by_thread.sort();
    assert_eq!(
        by_thread,
        [(0, vec![0x1030], 1), (31, vec![0x1010, 0x1105], 1), (31, vec![0x1020], 1), (32, vec![0x1010, 0x1105], 2)]
    );
    assert_eq!(s.user_ticks, 5);
}
