//! The stack walk's reader of user memory in interrupt context (`read_user_word_checked`):
//! over a fake memory map, it reads only words of present, user-accessible pages whose frames
//! lie in RAM; anything else (a frame outside RAM, device memory a driver maps, a kernel-only
//! or absent page, a word past RAM's end) is refused without any read at all.

use std::cell::Cell;

use kprof::{UserPage, read_user_word_checked};

const PAGE: u64 = 4096;
/// RAM: two areas, as the kernel's `memory::areas()` gives them (base, size).
const RAM: [(u64, u64); 2] = [(0x10_0000, 0x10_0000), (0x4000_0000, 0x2000)];
/// A driver's MMIO (an HPET, a BAR), mapped into its user space: not RAM.
const DEVICE: u64 = 0xFED0_0000;

/// Address spaces of the test: virtual page -> (frame, present, user).
fn table(vpage: u64) -> Option<UserPage> {
    let page = |frame, present, user| Some(UserPage { frame, present, user });
    match vpage {
        0x40_0000 => page(0x10_2000, true, true),      // RAM
        0x40_1000 => page(0x4000_1000, true, true),    // the last page of the second area
        0x50_0000 => page(DEVICE, true, true),         // device memory, user-mapped
        0x50_1000 => page(0x8000_0000, true, true),    // a frame outside every area (stale)
        0x60_0000 => page(0x10_3000, true, false),     // RAM, but kernel-only
        0x60_1000 => page(0x10_4000, false, true),     // not present
        0x70_0000 => page(0x4000_2000, true, true),    // just past the second area's end
        _ => None,
    }
}

/// Reads `addr`, recording every physical read.
fn read(addr: u64, reads: &Cell<Vec<u64>>) -> Option<u64> {
    read_user_word_checked(
        addr,
        PAGE,
        |a| table(a & !(PAGE - 1)),
        RAM,
        |phys| {
            let mut r = reads.take();
            r.push(phys);
            reads.set(r);
            phys ^ 0xABCD
        },
    )
}

#[test]
fn words_of_present_user_pages_in_ram_are_read_from_their_frames() {
    let reads = Cell::new(Vec::new());
    assert_eq!(read(0x40_0008, &reads), Some(0x10_2008 ^ 0xABCD));
    assert_eq!(read(0x40_1ff8, &reads), Some(0x4000_1ff8 ^ 0xABCD));
    assert_eq!(reads.take(), [0x10_2008, 0x4000_1ff8]);
}

#[test]
fn device_memory_frames_outside_ram_and_non_user_pages_are_never_read() {
    let reads = Cell::new(Vec::new());
    for addr in [
        0x50_0000, // device memory
        0x50_1008, // a frame outside RAM
        0x60_0000, // kernel-only page
        0x60_1000, // not present
        0x70_0000, // past the end of RAM
        0x80_0000, // unmapped
        0x40_0004, // unaligned
        kprof::KERNEL_SPACE_START, // the kernel's half
        !7, // the top of the address space
    ] {
        assert_eq!(read(addr, &reads), None, "{addr:#x}");
    }
    assert_eq!(reads.take(), [], "a refused word must not be read at all");
}

#[test]
fn a_word_is_read_only_if_it_lies_wholly_inside_one_area() {
    // An area ending 4 bytes into a word: the word is refused.
    let reads = Cell::new(Vec::new());
    let got = read_user_word_checked(
        0x40_0ff8,
        PAGE,
        |_| Some(UserPage { frame: 0x10_0000, present: true, user: true }),
        [(0x10_0000, 0xffc)],
        |_| {
            reads.set(vec![1]);
            0
        },
    );
    assert_eq!(got, None);
    assert_eq!(reads.take(), []);
    // No RAM at all: nothing is read.
    let got = read_user_word_checked(
        0x40_0000,
        PAGE,
        |_| Some(UserPage { frame: 0x10_0000, present: true, user: true }),
        [],
        |_| 1,
    );
    assert_eq!(got, None);
}
