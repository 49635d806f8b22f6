//! The `sys:prof_data` layout: the kernel's encoder and userspace's decoder agree, and the
//! decoder refuses (without panicking) anything else.

use kprof::{
    CountFrom, DecodeError, Entry, FollowedProcess, HEADER_LEN, HEADER_LEN_V1, HEADER_LEN_V2,
    HEADER_LEN_V3, HEADER_LEN_V4, MAGIC, MAX_STACK_DEPTH, Profiler, ServerStack, Snapshot, Source,
    StackEntry, State, StopReason, decode, owner_key,
};

fn sample_snapshot() -> Snapshot {
    Snapshot {
        state: State::Stopped,
        stop_reason: Some(StopReason::Exit),
        source: Source::NmiHpet,
        rate: 1000,
        pid: 0x1234_5678_9abc,
        exec_base: 0x5555_5555_4000,
        addr_space_switches: 1,
        user_ticks: 11,
        kernel_ticks: 3,
        dropped: 1,
        capacity: 4096,
        entries: vec![
            Entry {
                addr: 0x5555_5555_4010,
                count: 7,
            },
            Entry {
                addr: 0x5555_5555_4020,
                count: 3,
            },
        ],
        stacks_dropped: 2,
        stack_capacity: 1024,
        stacks: vec![
            StackEntry {
                thread: 7,
                count: 5,
                truncated: false,
                frames: vec![0x5555_5555_4010, 0x5555_5555_4105],
            },
            StackEntry {
                thread: 9,
                count: 2,
                truncated: true,
                frames: vec![0x5555_5555_4020],
            },
        ],
        idle_ticks: 40,
        other_ticks: 6,
        server_user_ticks: 9,
        server_kernel_ticks: 2,
        servers_dropped: 1,
        server_stack_capacity: 1024,
        server_stacks: vec![
            ServerStack {
                pid: 12,
                image: 0,
                stack: StackEntry {
                    thread: 0,
                    count: 5,
                    truncated: false,
                    frames: vec![0x40_2010, 0x40_3105],
                },
            },
            ServerStack {
                pid: 31,
                image: 2,
                stack: StackEntry {
                    thread: 0,
                    count: 3,
                    truncated: true,
                    frames: vec![0x41_0000],
                },
            },
        ],
        children_user_ticks: 3,
        children_kernel_ticks: 0,
        followed_missed: 1,
        followed: vec![FollowedProcess {
            pid: 31,
            parent: owner_key(0x5678_9abc, 0),
            execs: 2,
            flags: 1,
            name: *b"/usr/bin/fib\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        }],
    }
}

/// The same session without what version 5 added (no process followed).
fn without_tree(mut s: Snapshot) -> Snapshot {
    s.children_user_ticks = 0;
    s.children_kernel_ticks = 0;
    s.followed_missed = 0;
    s.followed.clear();
    for server in &mut s.server_stacks {
        server.image = 0;
    }
    for stack in &mut s.stacks {
        stack.thread = 0;
    }
    s
}

/// The body of the sample snapshot's encoding as a version before 5 wrote it: the entries, the
/// program's stacks without their threads, and with `servers` the server stacks (whose owners
/// keep the image bits these bytes have).
fn body_before_v5(v5: &[u8], servers: bool) -> Vec<u8> {
    let body = &v5[HEADER_LEN..];
    let mut old = [&body[..32], &body[40..72], &body[80..104]].concat();
    if servers {
        old.extend_from_slice(&body[104..176]);
    }
    old
}

/// The same session without what versions 4 and 5 added (a version-3 kernel sampled the
/// timer).
fn without_source(s: Snapshot) -> Snapshot {
    let mut s = without_tree(s);
    s.source = Source::Timer;
    s.rate = 0;
    s
}

/// The same session without what versions 3 and 4 added.
fn without_servers(s: Snapshot) -> Snapshot {
    let mut s = without_source(s);
    s.idle_ticks = 0;
    s.other_ticks = 0;
    s.server_user_ticks = 0;
    s.server_kernel_ticks = 0;
    s.servers_dropped = 0;
    s.server_stack_capacity = 0;
    s.server_stacks.clear();
    s
}

#[test]
fn header_fields_sit_where_the_docs_say() {
    let bytes = sample_snapshot().to_bytes().unwrap();
    assert_eq!(
        bytes.len(),
        HEADER_LEN + 2 * 16 + (24 + 16) + (24 + 8) + (24 + 16) + (24 + 8) + 56
    );
    assert_eq!(&bytes[0..8], &MAGIC);
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!(
        (u32_at(8), u32_at(12), u32_at(16), u32_at(20)),
        (5, 216, 2, 2)
    );
    assert_eq!(u64_at(24), 0x1234_5678_9abc);
    assert_eq!(u64_at(32), 0x5555_5555_4000);
    assert_eq!(u64_at(40), 1);
    assert_eq!((u64_at(48), u64_at(56), u64_at(64)), (11, 3, 1));
    assert_eq!((u64_at(72), u64_at(80)), (4096, 2));
    assert_eq!((u64_at(88), u64_at(96), u64_at(104)), (2, 1024, 2));
    // Version 3: idle, other, server user/kernel ticks, servers dropped, capacity, count.
    assert_eq!(
        [112, 120, 128, 136, 144, 152, 160].map(u64_at),
        [40, 6, 9, 2, 1, 1024, 2]
    );
    // Version 4: source (1 = nmi-hpet) and rate.
    assert_eq!((u64_at(168), u64_at(176)), (1, 1000));
    // Version 5: the children's user and kernel ticks, processes missed, followed ones.
    assert_eq!([184, 192, 200, 208].map(u64_at), [3, 0, 1, 1]);
    let o = 48;
    assert_eq!((u64_at(o + 168), u64_at(o + 176)), (0x5555_5555_4010, 7));
    assert_eq!((u64_at(o + 184), u64_at(o + 192)), (0x5555_5555_4020, 3));
    // Stacks: thread, count, depth, flags, frames.
    assert_eq!((u64_at(o + 200), u64_at(o + 208), u32_at(o + 216), u32_at(o + 220)), (7, 5, 2, 0));
    assert_eq!((u64_at(o + 224), u64_at(o + 232)), (0x5555_5555_4010, 0x5555_5555_4105));
    assert_eq!(
        (u64_at(o + 240), u64_at(o + 248), u32_at(o + 256), u32_at(o + 260), u64_at(o + 264)),
        (9, 2, 1, 1, 0x5555_5555_4020)
    );
    // Server stacks: pid, count, depth, flags, frames.
    assert_eq!((u64_at(o + 272), u64_at(o + 280), u32_at(o + 288), u32_at(o + 292)), (12, 5, 2, 0));
    assert_eq!((u64_at(o + 296), u64_at(o + 304)), (0x40_2010, 0x40_3105));
    // A followed process's owner: its pid, its image above bit 32.
    assert_eq!(
        (u64_at(o + 312), u64_at(o + 320), u32_at(o + 328), u32_at(o + 332), u64_at(o + 336)),
        (2 << 32 | 31, 3, 1, 1, 0x41_0000)
    );
    // Followed processes: pid, parent's owner key, execs, flags, name.
    assert_eq!(
        (u64_at(o + 344), u64_at(o + 352), u32_at(o + 360), u32_at(o + 364)),
        (31, 0x5678_9abc, 2, 1)
    );
    assert_eq!(&bytes[o + 368..o + 380], b"/usr/bin/fib");
    assert_eq!(bytes.len(), o + 400);
}

/// A version-4 kernel's data (no process followed) still decodes.
#[test]
fn version_4_decodes_without_a_tree() {
    let v5 = sample_snapshot().to_bytes().unwrap();
    let mut v4 = v5[..HEADER_LEN_V4].to_vec();
    v4[8..12].copy_from_slice(&4u32.to_le_bytes());
    v4[12..16].copy_from_slice(&(HEADER_LEN_V4 as u32).to_le_bytes());
    v4.extend_from_slice(&body_before_v5(&v5, true));
    // (A version-4 kernel wrote pids alone as owners; these bytes keep the image's.)
    let mut got = decode(&v4).unwrap();
    got.server_stacks[1].image = 0;
    assert_eq!(got, without_tree(sample_snapshot()));
}

/// A version-3 kernel's data (no source or rate: the timer tick) still decodes.
#[test]
fn version_3_decodes_as_a_timer_session() {
    let v4 = sample_snapshot().to_bytes().unwrap();
    let mut v3 = v4[..HEADER_LEN_V3].to_vec();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    v3[12..16].copy_from_slice(&(HEADER_LEN_V3 as u32).to_le_bytes());
    v3.extend_from_slice(&body_before_v5(&v4, true));
    let mut got = decode(&v3).unwrap();
    got.server_stacks[1].image = 0;
    assert_eq!(got, without_source(sample_snapshot()));
}

/// An unknown source is refused.
#[test]
fn an_unknown_source_is_refused() {
    let mut bytes = sample_snapshot().to_bytes().unwrap();
    bytes[168..176].copy_from_slice(&2u64.to_le_bytes());
    assert_eq!(decode(&bytes), Err(DecodeError::BadState));
}

/// A version-2 reader's data (no server fields, no server stacks) still decodes.
#[test]
fn version_2_decodes_without_servers() {
    let v3 = sample_snapshot().to_bytes().unwrap();
    let mut v2 = v3[..HEADER_LEN_V2].to_vec();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    v2[12..16].copy_from_slice(&(HEADER_LEN_V2 as u32).to_le_bytes());
    // Entries and the program's stacks, not the server stacks.
    v2.extend_from_slice(&body_before_v5(&v3, false));
    assert_eq!(decode(&v2), Ok(without_servers(sample_snapshot())));
}

/// A version-1 reader's data (no stack fields, no stacks) still decodes.
#[test]
fn version_1_decodes_without_stacks() {
    let v2 = sample_snapshot().to_bytes().unwrap();
    let mut v1 = v2[..HEADER_LEN_V1].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    v1[12..16].copy_from_slice(&(HEADER_LEN_V1 as u32).to_le_bytes());
    v1.extend_from_slice(&v2[HEADER_LEN..HEADER_LEN + 32]);
    let mut want = without_servers(sample_snapshot());
    want.stacks_dropped = 0;
    want.stack_capacity = 0;
    want.stacks.clear();
    assert_eq!(decode(&v1), Ok(want));
}

#[test]
fn round_trip() {
    let snapshot = sample_snapshot();
    assert_eq!(decode(&snapshot.to_bytes().unwrap()), Ok(snapshot));
    let empty = Profiler::new(u64::MAX).snapshot().unwrap();
    assert_eq!(empty.to_bytes().unwrap().len(), HEADER_LEN);
    assert_eq!(decode(&empty.to_bytes().unwrap()), Ok(empty));
}

#[test]
fn round_trip_from_a_live_profiler() {
    let p = Profiler::new(u64::MAX);
    p.start(9, 32, CountFrom::Now).unwrap();
    p.note_switch(3, 9);
    for pc in [0x30, 0x10, 0x20, 0x10] {
        p.sample(3, true, pc);
    }
    p.sample(3, false, 0xffff_8000_0012_3456);
    let s = p.snapshot().unwrap();
    let back = decode(&s.to_bytes().unwrap()).unwrap();
    assert_eq!(back, s);
    assert_eq!(back.state, State::Running);
    // A kernel sample's PC is an entry too, above every user one.
    assert_eq!(
        back.entries.iter().map(|e| e.addr).collect::<Vec<_>>(),
        vec![0x10, 0x20, 0x30, 0xffff_8000_0012_3456]
    );
    assert_eq!((back.user_ticks, back.kernel_ticks), (4, 1));
}

#[test]
fn encode_at_any_offset_with_any_buffer_size() {
    let snapshot = sample_snapshot();
    let whole = snapshot.to_bytes().unwrap();
    for chunk in [1, 3, 7, 16, 50, 88, 89, 1000] {
        let mut rebuilt = Vec::new();
        let mut offset = 0;
        loop {
            let mut buf = vec![0xaa; chunk];
            let n = snapshot.encode(offset, &mut buf);
            if n == 0 {
                break;
            }
            rebuilt.extend_from_slice(&buf[..n]);
            offset += n;
        }
        assert_eq!(rebuilt, whole, "chunk {chunk}");
    }
    let mut buf = [0; 8];
    assert_eq!(snapshot.encode(whole.len(), &mut buf), 0);
    assert_eq!(snapshot.encode(usize::MAX, &mut buf), 0);
    assert_eq!(snapshot.encode(0, &mut []), 0);
    assert_eq!(snapshot.encode(whole.len() - 3, &mut buf), 3);
    assert_eq!(&buf[..3], &whole[whole.len() - 3..]);
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample_snapshot().to_bytes().unwrap();
    for len in 0..bytes.len() {
        let err = decode(&bytes[..len]).unwrap_err();
        let expected = if len < HEADER_LEN {
            DecodeError::Truncated
        } else {
            DecodeError::LengthMismatch
        };
        assert_eq!(err, expected, "len {len}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(decode(&longer), Err(DecodeError::LengthMismatch));
}

#[test]
fn corrupt_headers_are_errors() {
    let good = sample_snapshot().to_bytes().unwrap();
    let patched = |at: usize, value: &[u8]| {
        let mut bytes = good.clone();
        bytes[at..at + value.len()].copy_from_slice(value);
        decode(&bytes)
    };
    assert_eq!(patched(0, b"X"), Err(DecodeError::BadMagic));
    assert_eq!(
        patched(8, &6u32.to_le_bytes()),
        Err(DecodeError::UnsupportedVersion(6))
    );
    assert_eq!(
        patched(12, &183u32.to_le_bytes()),
        Err(DecodeError::BadHeaderLen(183))
    );
    assert_eq!(
        patched(12, &u32::MAX.to_le_bytes()),
        Err(DecodeError::BadHeaderLen(u32::MAX))
    );
    assert_eq!(
        patched(12, &232u32.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    // Stacks: too many, a depth past the bound, unknown flags.
    assert_eq!(
        patched(104, &3u64.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(264, &(MAX_STACK_DEPTH as u32 + 1).to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(268, &2u32.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    // Server stacks: too many, too few, a depth past the bound, unknown flags.
    assert_eq!(
        patched(160, &3u64.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(160, &1u64.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(336, &(MAX_STACK_DEPTH as u32 + 1).to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(340, &2u32.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    // Followed processes: too many, too few.
    assert_eq!(
        patched(208, &2u64.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(208, &0u64.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(patched(16, &7u32.to_le_bytes()), Err(DecodeError::BadState));
    assert_eq!(patched(20, &9u32.to_le_bytes()), Err(DecodeError::BadState));
    assert_eq!(
        patched(20, &0u32.to_le_bytes()),
        Err(DecodeError::BadState),
        "stopped without reason"
    );
    assert_eq!(
        patched(16, &1u32.to_le_bytes()),
        Err(DecodeError::BadState),
        "running with a reason"
    );
    assert_eq!(
        patched(80, &u64::MAX.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(80, &(1u64 << 60).to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
    assert_eq!(
        patched(80, &3u64.to_le_bytes()),
        Err(DecodeError::LengthMismatch)
    );
}

#[test]
fn a_longer_header_of_the_same_version_is_skipped() {
    let mut bytes = sample_snapshot().to_bytes().unwrap();
    bytes[12..16].copy_from_slice(&(HEADER_LEN as u32 + 8).to_le_bytes());
    bytes.splice(HEADER_LEN..HEADER_LEN, [0xee; 8]);
    assert_eq!(decode(&bytes), Ok(sample_snapshot()));
}

#[test]
fn garbage_never_panics() {
    // A small xorshift generator: random lengths, random bytes, and random flips of good data.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let good = sample_snapshot().to_bytes().unwrap();
    for _ in 0..20_000 {
        let len = (next() % 200) as usize;
        let random: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = decode(&random);
        let mut flipped = good.clone();
        let at = (next() as usize) % flipped.len();
        flipped[at] ^= 1 << (next() % 8);
        let _ = decode(&flipped);
        let mut with_magic = MAGIC.to_vec();
        with_magic.extend_from_slice(&random);
        let _ = decode(&with_magic);
    }
}

#[test]
fn image_load_base_from_exec_base() {
    let mut s = sample_snapshot();
    s.exec_base = 0x5555_5555_5000;
    assert_eq!(
        s.image_load_base(0x1000),
        Some(0x5555_5555_4000),
        "PIE, text at 0x1000"
    );
    assert_eq!(
        s.image_load_base(0x1234),
        Some(0x5555_5555_4000),
        "page of the segment"
    );
    s.exec_base = 0x40_1000;
    assert_eq!(
        s.image_load_base(0x40_1000),
        Some(0),
        "non-PIE: mapped at its link address"
    );
    s.exec_base = 0;
    assert_eq!(s.image_load_base(0x1000), None, "unknown");
    s.exec_base = 0x1000;
    assert_eq!(s.image_load_base(0x40_1000), None, "inconsistent");
}

#[test]
fn names_for_status_lines() {
    assert_eq!(State::Running.as_str(), "running");
    assert_eq!(StopReason::Overflow.as_str(), "overflow");
    assert_eq!(State::from_u32(2), Some(State::Stopped));
    // The codes of sys:prof_data's header: 0 for none.
    for reason in [None, Some(StopReason::Request), Some(StopReason::Exit), Some(StopReason::Overflow)] {
        assert_eq!(StopReason::from_u32(StopReason::code(reason)), reason);
    }
    assert_eq!(StopReason::code(Some(StopReason::Exit)), 2);
    assert_eq!(StopReason::from_u32(4), None);
}

/// A followed process's name is its bytes up to the first NUL; none kept, none given.
#[test]
fn a_followed_processs_name_as_text() {
    let mut f = sample_snapshot().followed[0];
    assert_eq!(f.name_text().as_deref(), Some("/usr/bin/fib"));
    f.name = [0; 32];
    assert_eq!(f.name_text(), None);
}
