//! The ring reader on record streams built to the kernel's layout: upstream's kind 0 as the
//! stock kernel writes it, every typed kind, and streams cut, damaged or interleaved.

use prof_events::layout::{self, header, Kind, Reason, Source, MARKER, MAX_WORDS};
use prof_events::{record_words, ring_bytes, Counts, Event, Header, Ids, NewerLayout, RingDecoder, Sample, Start, Switch, Version};

/// The words upstream's `nmi_handler` writes for one sample.
fn upstream(ip: u64, tsc: u64, context: u32, frames: &[u64]) -> Vec<u64> {
    let mut w = vec![MARKER | (4 + frames.len()) as u64, ip, tsc, context as u64];
    w.extend_from_slice(frames);
    w
}

fn bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn decode(stream: &[u8]) -> (Vec<Event>, Counts) {
    let mut d = RingDecoder::new(3);
    let mut out = Vec::new();
    d.push(stream, &mut out).expect("a layout this reader knows");
    let counts = d.finish();
    (out, counts)
}

fn sample(e: &Event) -> &Sample {
    match e {
        Event::Sample(s) => s,
        other => panic!("not a sample: {other:?}"),
    }
}

const K: u64 = 0xffff_ffff_8000_1000;

fn who(pid: u32, thread: u32) -> Ids {
    Ids { pid: Some(pid), thread }
}

/// One event of every kind, as a session started with `2` writes them.
fn every_kind() -> Vec<Event> {
    vec![
        Event::Name { cpu: 3, time: 5, who: who(7, 40), name: "/scheme/initfs/bin/fib".into() },
        Event::Exec { cpu: 3, time: 6, who: who(7, 40), entry: 0x40_1000 },
        Event::NewThread { cpu: 3, time: 7, who: who(7, 41), giver: who(7, 40) },
        Event::Sample(Sample {
            cpu: 3,
            time: 10,
            who: who(7, 40),
            kernel: false,
            source: Some(Source::Tick),
            ip: 0x40_1234,
            kernel_frames: vec![],
            user_frames: vec![0x40_2000, 0x40_3000],
        }),
        // A kernel sample from a system call: kernel frames, the call's user IP, its caller.
        Event::Sample(Sample {
            cpu: 3,
            time: 11,
            who: who(7, 41),
            kernel: true,
            source: Some(Source::NmiIpi),
            ip: K,
            kernel_frames: vec![K + 0x10, K + 0x20],
            user_frames: vec![0x40_5000, 0x40_6000],
        }),
        Event::Switch(Switch {
            cpu: 3,
            time: 12,
            left: who(7, 40),
            entered: who(2, 9),
            reason: Some(Reason::Scheme),
            detail: 4,
            stack: vec![],
        }),
        // Where a thread blocked: its user IP and stack.
        Event::Sample(Sample {
            cpu: 3,
            time: 12,
            who: who(7, 40),
            kernel: false,
            source: Some(Source::Block),
            ip: 0x40_7000,
            kernel_frames: vec![],
            user_frames: vec![0x40_8000],
        }),
        Event::Request { cpu: 3, time: 13, daemon: who(2, 9), caller: who(7, 40), scheme: 4, tag: 99, answered: false },
        Event::Request { cpu: 3, time: 14, daemon: who(2, 9), caller: who(7, 40), scheme: 4, tag: 99, answered: true },
        Event::Lost { cpu: 3, time: 15, count: 12 },
        // A system call's end (layout 1.1): a read of fd 3 that returned 1 byte.
        Event::Syscall { cpu: 3, time: 16, who: who(7, 40), entered: 9, number: 0x2000_0003, result: 1 },
    ]
}

#[test]
fn every_kind_reads_back_as_written() {
    let events = every_kind();
    let (out, counts) = decode(&ring_bytes(&events));
    assert_eq!(out, events);
    assert_eq!(counts, Counts { records: 11, damaged: 0, stray_words: 0, unknown: 0, lost: 12 });
}

#[test]
fn headers_hold_kind_flags_and_aux_where_the_layout_says() {
    // A kernel sample taken by the tick, with 2 kernel frames, 6 words long.
    let h = header(Kind::Sample, 6, layout::SAMPLE_KERNEL | 1 << 1, 2);
    assert_eq!(h, 0x0002_0301_fedf_ac06);
    let e = &every_kind()[5];
    assert_eq!(record_words(e)[0], 0x0004_0002_fedf_ac05, "a switch to a scheme, 5 words");
    assert_eq!(layout::ids(7, 40), 0x0000_0007_0000_0028);
}

#[test]
fn upstream_samples_as_the_stock_kernel_writes_them() {
    let mut stream = upstream(0x40_1234, 1000, 7, &[0x40_2000, 0x40_3000]);
    stream.extend(upstream(K, 2000, 9, &[K + 0x10, K + 0x20, 0x40_5000, 0x40_6000]));
    stream.extend(upstream(K + 0x40, 3000, 1, &[K + 0x50]));
    let (out, counts) = decode(&bytes(&stream));
    assert_eq!(counts, Counts { records: 3, ..Counts::default() });
    assert_eq!(
        sample(&out[0]),
        &Sample {
            cpu: 3,
            time: 1000,
            who: Ids { pid: None, thread: 7 },
            kernel: false,
            source: None,
            ip: 0x40_1234,
            kernel_frames: vec![],
            user_frames: vec![0x40_2000, 0x40_3000]
        }
    );
    let s = sample(&out[1]);
    assert_eq!((s.kernel, &s.kernel_frames[..], &s.user_frames[..]), (true, &[K + 0x10, K + 0x20][..], &[0x40_5000, 0x40_6000][..]));
    let s = sample(&out[2]);
    assert_eq!((&s.kernel_frames[..], s.user_frames.is_empty()), (&[K + 0x50][..], true));
}

#[test]
fn a_record_split_across_reads_anywhere_is_whole() {
    let mut stream = upstream(0x40_1234, 1000, 7, &[0x40_2000; 28]);
    stream.extend(upstream(0x40_1000, 1001, 8, &[]));
    let mut all = bytes(&stream);
    // A session begins on the ring (a kernel that versions its layout), of CPU 5.
    all.extend(ring_bytes(&[Event::Start(start(5, Version::OURS))]));
    all.extend(ring_bytes(&every_kind()));
    let (whole, _) = decode(&all);
    assert_eq!(whole.len(), 14);
    assert!(whole[3..].iter().all(|e| cpu_of(e) == 5), "after the start, CPU 5's: {whole:?}");
    for cut in 0..all.len() {
        let mut d = RingDecoder::new(3);
        let mut out = Vec::new();
        // As the kernel reads: the first read's cut word is not consumed, and comes again,
        // whole, at the start of the next.
        d.push(&all[..cut], &mut out).unwrap();
        d.push(&all[cut / 8 * 8..], &mut out).unwrap();
        assert_eq!(d.finish(), Counts { records: 14, lost: 12, ..Counts::default() }, "cut at {cut}");
        assert_eq!(out, whole, "cut at {cut}");
    }
}

#[test]
fn an_upstream_record_the_full_ring_cut_short_is_counted_not_read() {
    // The ring was full: of a 6-word record, 3 words were written; then the next record.
    let mut stream = upstream(0x40_1234, 1000, 7, &[0x40_2000, 0x40_3000])[..3].to_vec();
    stream.extend(upstream(0x40_1000, 1001, 8, &[0x40_2000]));
    // A stream that ends inside a record (the last write cut short too).
    stream.extend(&upstream(0x40_1000, 1002, 8, &[0x40_2000])[..2]);
    let (out, counts) = decode(&bytes(&stream));
    assert_eq!(counts, Counts { records: 1, damaged: 2, ..Counts::default() });
    assert_eq!(sample(&out[0]).time, 1001);
}

#[test]
fn stray_words_bad_lengths_and_unknown_kinds() {
    let mut stream = vec![0, 0x1234];
    stream.push(MARKER | 2); // shorter than an upstream record
    stream.push(MARKER | (MAX_WORDS as u64 + 1)); // longer than any record
    stream.push(MARKER | 33); // longer than upstream's buffer
    stream.push(header(Kind::Exec, 3, 0, 0)); // shorter than an exec record
    // A kind from a later kernel: skipped by its length, whatever its words are.
    stream.extend([0x0000_0042_fedf_ac04, MARKER | 4, 1, 2]);
    stream.extend(upstream(0x40_1234, 1000, 7, &[]));
    // Three bytes of a word at the end: a word the read cut, dropped.
    let mut b = bytes(&stream);
    b.extend_from_slice(&[1, 2, 3]);
    let (out, counts) = decode(&b);
    assert_eq!(out.len(), 1);
    assert_eq!(counts, Counts { records: 1, damaged: 4, stray_words: 2, unknown: 1, lost: 0 });
}

#[test]
fn a_typed_record_is_read_by_its_length_whatever_its_words() {
    // A frame that happens to look like a marker does not end a typed record: the kernel
    // writes those whole.
    let s = Event::Sample(Sample {
        cpu: 3,
        time: 1,
        who: who(1, 2),
        kernel: false,
        source: Some(Source::NmiIpi),
        ip: 0x40_0000,
        kernel_frames: vec![],
        user_frames: vec![MARKER | 4, header(Kind::Lost, 3, 0, 0)],
    });
    let (out, counts) = decode(&ring_bytes(std::slice::from_ref(&s)));
    assert_eq!((out, counts.records), (vec![s], 1));
}

#[test]
fn names_of_any_length_up_to_the_record() {
    for len in [0, 1, 7, 8, 9, 31, 32, 100] {
        let name: String = "abcdefghij".chars().cycle().take(len).collect();
        let e = Event::Name { cpu: 3, time: 1, who: who(1, 2), name: name.clone() };
        let (out, _) = decode(&ring_bytes(std::slice::from_ref(&e)));
        assert_eq!(out, vec![e], "{len} bytes");
    }
}

#[test]
fn a_reader_of_upstream_records_alone_skips_typed_ones() {
    // What upstream's own readers check: the whole word, marker and length.
    let typed = ring_bytes(&every_kind());
    let headers = typed.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap()));
    assert_eq!(headers.filter(|w| w & !0xff == MARKER).count(), 0);
}

/// A session's first record on CPU `cpu`'s ring, of layout `version`.
fn start(cpu: u32, version: Version) -> Start {
    Start { cpu, time: 4, version, clock_hz: Some(1_000_000_000), session: 6 }
}

fn cpu_of(e: &Event) -> u32 {
    match e {
        Event::Sample(s) => s.cpu,
        Event::Switch(s) => s.cpu,
        Event::Lost { cpu, .. }
        | Event::Name { cpu, .. }
        | Event::Exec { cpu, .. }
        | Event::NewThread { cpu, .. }
        | Event::Request { cpu, .. }
        | Event::Syscall { cpu, .. } => *cpu,
        Event::Start(s) => s.cpu,
    }
}

/// The events of `every_kind` as CPU `cpu`'s.
fn every_kind_on(cpu: u32) -> Vec<Event> {
    let (out, _) = decode(&ring_bytes(&every_kind()));
    let mut d = RingDecoder::new(cpu);
    let mut on = Vec::new();
    d.push(&ring_bytes(&out), &mut on).unwrap();
    on
}

#[test]
fn a_session_starts_with_the_version_the_clocks_rate_and_the_cpu() {
    let first = start(5, Version::OURS);
    let mut events = vec![Event::Start(first)];
    events.extend(every_kind_on(5));
    let stream = ring_bytes(&events);
    // The words as the layout says: header, time, version, rate, CPU, session.
    let words: Vec<u64> = stream.chunks_exact(8).take(6).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
    assert_eq!(words, [header(Kind::Start, 6, 0, 0), 4, (1 << 32) | 1, 1_000_000_000, 5, 6], "version 1.1");
    // The decoder was made for ring 3; the kernel says the ring is CPU 5's.
    let mut d = RingDecoder::new(3);
    let mut out = Vec::new();
    d.push(&stream, &mut out).unwrap();
    assert_eq!(out, events);
    assert_eq!((d.start(), d.cpu()), (Some(&first), 5));
    assert_eq!(d.finish(), Counts { records: 12, lost: 12, ..Counts::default() });
    // A rate of 0: the kernel does not know it.
    let unknown = Start { clock_hz: None, ..first };
    let (out, _) = decode(&ring_bytes(&[Event::Start(unknown)]));
    assert_eq!(out, [Event::Start(unknown)]);
    assert_eq!(record_words(&Event::Start(unknown))[3], 0);
}

#[test]
fn typed_records_without_a_start_are_a_kernel_from_before_versions() {
    // The records of the series before it versioned its layout: the same words, no `Start`.
    let mut d = RingDecoder::new(3);
    let mut out = Vec::new();
    d.push(&ring_bytes(&every_kind()), &mut out).unwrap();
    assert_eq!((out, d.start(), d.cpu()), (every_kind(), None, 3));
}

#[test]
fn a_later_minor_version_is_read_and_its_added_words_skipped() {
    let later = Version { major: Version::OURS.major, minor: Version::OURS.minor + 3 };
    let mut start_words = record_words(&Event::Start(start(2, later)));
    // A later minor may add words after a record's own, and kinds this reader skips.
    start_words.push(0x1234);
    start_words[0] = header(Kind::Start, 7, 0, 0);
    let mut stream = bytes(&start_words);
    stream.extend(bytes(&[0x0000_0063_fedf_ac03, 1, 2]));
    stream.extend(ring_bytes(&every_kind_on(2)));
    let mut d = RingDecoder::new(0);
    let mut out = Vec::new();
    d.push(&stream, &mut out).unwrap();
    assert_eq!(out[0], Event::Start(start(2, later)));
    assert_eq!(out[1..], every_kind_on(2));
    assert_eq!(d.finish().unknown, 1);
}

#[test]
fn a_newer_major_version_is_refused_with_an_error_that_says_so() {
    let newer = Version { major: Version::OURS.major + 1, minor: 0 };
    // A record of the layout this reader knows, then a session of the newer one, whose words
    // may mean anything.
    let mut stream = ring_bytes(&every_kind_on(4)[..1]);
    stream.extend(ring_bytes(&[Event::Start(start(4, newer))]));
    stream.extend(bytes(&[header(Kind::Sample, 4, 0, 0), 1, 2, 3]));
    for cut in [stream.len(), 8 * 9] {
        let mut d = RingDecoder::new(4);
        let mut out = Vec::new();
        let first = d.push(&stream[..cut], &mut out);
        let second = d.push(&stream[cut..], &mut out);
        let refused = NewerLayout { cpu: 4, version: newer };
        let (Err(e), Err(again)) = (first.and(second), second) else { panic!("read: {out:?}") };
        assert_eq!((e, again), (refused, refused));
        // What came before it is read; nothing of it or after it.
        assert_eq!(out, every_kind_on(4)[..1]);
        let message = e.to_string();
        assert!(message.contains("CPU 4") && message.contains("version 2.0") && message.contains("1.x"), "{message}");
    }
}

#[test]
fn the_version_word_holds_major_above_minor() {
    assert_eq!(Version::OURS, Version { major: 1, minor: 1 }, "1.1: the system calls' records");
    assert_eq!(Version::from_word(layout::VERSION), Version::OURS);
    assert_eq!(Version { major: 2, minor: 7 }.word(), 0x2_0000_0007);
    assert_eq!(Version { major: 2, minor: 7 }.to_string(), "2.7");
    assert!(Version { major: 1, minor: 9 } < Version { major: 2, minor: 0 });
    assert_eq!(Header::parse(header(Kind::Start, 6, 0, 0)).map(|h| (h.kind, h.len)), Some((9, 6)));
}
