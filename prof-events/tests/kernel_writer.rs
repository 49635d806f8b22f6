//! How the kernel's writers take turns at a CPU's ring (`src/profiling/writer.rs`, added by the
//! series whole; `kernel_writer/writer.rs` is that file, checked equal below): run on the host
//! with a fake ring, and an NMI's write made at every step of another write, as an NMI can come
//! between any two instructions. Every record is written whole or counted lost, none is cut by
//! another, none is left held after the write it came in, the losses said are the losses, and
//! every typed record comes after its session's `Start` on the ring.

mod common;

/// The layout the kernel's `writer.rs` reaches as `super::record`.
mod record {
    pub use prof_events::layout::*;
}

#[allow(dead_code, reason = "the kernel's module, used here in part")]
#[path = "kernel_writer/writer.rs"]
mod writer;

use prof_events::layout::{self, Kind};
use prof_events::Header;
use std::cell::{Cell, RefCell};
use writer::{Ring, Writer};

/// What the NMI writes when it comes.
#[derive(Clone, Copy, Debug)]
enum Nmi {
    /// A typed sample, `len` words, numbered `id`.
    Typed { id: usize, len: usize },
    /// A typed sample of the session after [`TYPED_SESSION`] (the mode changed during the write).
    NextSession { id: usize },
    /// Upstream's kind-0 record (a session of `1` begun while a typed write went on).
    Upstream { id: usize },
}

/// A CPU's ring: a bounded list of words, and a counter of the steps of the write in progress;
/// at step `nmi_at` (counted from 1) an NMI writes through the same writer.
struct FakeRing {
    words: RefCell<Vec<usize>>,
    capacity: usize,
    writer: Writer,
    steps: Cell<usize>,
    nmis: RefCell<Vec<(usize, Nmi)>>,
    in_nmi: Cell<bool>,
    fired: Cell<usize>,
    session: Cell<usize>,
}

impl FakeRing {
    fn new(capacity: usize) -> Self {
        FakeRing {
            words: RefCell::new(Vec::new()),
            capacity,
            writer: Writer::new(),
            steps: Cell::new(0),
            nmis: RefCell::new(Vec::new()),
            in_nmi: Cell::new(false),
            fired: Cell::new(0),
            session: Cell::new(TYPED_SESSION),
        }
    }
}

impl Ring for FakeRing {
    fn free_words(&self) -> usize {
        self.capacity - self.words.borrow().len()
    }
    fn cpu(&self) -> usize {
        CPU
    }
    fn clock_hz(&self) -> usize {
        CLOCK_HZ
    }
    unsafe fn put(&self, words: &[usize]) {
        for &word in words {
            if self.words.borrow().len() == self.capacity {
                return;
            }
            self.words.borrow_mut().push(word);
            self.step();
        }
    }
    fn step(&self) {
        if self.in_nmi.get() {
            return;
        }
        let step = self.steps.get() + 1;
        self.steps.set(step);
        let due: Vec<Nmi> = self.nmis.borrow().iter().filter(|(at, _)| *at == step).map(|(_, nmi)| *nmi).collect();
        for nmi in due {
            self.in_nmi.set(true);
            self.fired.set(self.fired.get() + 1);
            match nmi {
                // SAFETY: one thread: this ring's CPU.
                Nmi::Typed { id, len } => unsafe { self.writer.write_record(self, &typed(id, len), self.session.get()) },
                // SAFETY: as above.
                Nmi::NextSession { id } => unsafe { self.writer.write_record(self, &typed(id, 5), NEXT_SESSION) },
                // SAFETY: as above.
                Nmi::Upstream { id } => unsafe { self.writer.write_upstream(self, &upstream(id)) },
            }
            self.in_nmi.set(false);
        }
    }
}

/// A session of typed records, as the kernel's SESSION word has it (mode 2, session 1).
const TYPED_SESSION: usize = (1 << 2) | 2;
/// The typed session after it (one change to `0` between them).
const NEXT_SESSION: usize = TYPED_SESSION + 8;
/// What the fake ring's `Start` records say.
const CPU: usize = 3;
const CLOCK_HZ: usize = 2_500_000_000;

/// A typed record numbered `id`: header, time (= id), then words that name it.
fn typed(id: usize, len: usize) -> Vec<usize> {
    let mut words = vec![layout::header(Kind::Sample, len, 0, 0) as usize, id];
    words.extend((2..len).map(|i| id * 1000 + i));
    words
}

/// Upstream's record numbered `id`: marker and length, then words that name it.
fn upstream(id: usize) -> Vec<usize> {
    let len = 5;
    let mut words = vec![layout::MARKER as usize | len, id];
    words.extend((2..len).map(|i| id * 1000 + i));
    words
}

/// The ring's records, decoded by their headers; panics on a word that is no header where one
/// must be, a record cut short, a typed record before any `Start`, a `Start` that does not say
/// what the layout says, or a session going back.
#[derive(Debug, PartialEq)]
enum Record {
    Typed(Vec<usize>),
    Upstream(Vec<usize>),
    Lost { count: usize },
    Start { session: usize },
}

fn decode_all(words: &[usize]) -> Vec<Record> {
    decode_words(words, true)
}

/// The ring's records but the `Start`s (checked as `decode_all` checks them).
fn decode(words: &[usize]) -> Vec<Record> {
    decode_all(words).into_iter().filter(|r| !matches!(r, Record::Start { .. })).collect()
}

/// `decode` of a ring the reader drained: it may begin after the `Start`.
fn decode_drained(words: &[usize]) -> Vec<Record> {
    decode_words(words, false).into_iter().filter(|r| !matches!(r, Record::Start { .. })).collect()
}

fn decode_words(words: &[usize], from_the_start: bool) -> Vec<Record> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut session = None;
    while at < words.len() {
        let header = words[at] as u64;
        let parsed = Header::parse(header).unwrap_or_else(|| panic!("no header at word {at}: {words:x?}"));
        let len = parsed.len;
        assert!(len >= 2 && at + len <= words.len(), "record at {at} cut short: {words:x?}");
        let record = words[at..at + len].to_vec();
        let record = match parsed.kind {
            0 => Record::Upstream(record),
            k if k == Kind::Start as u8 => {
                assert_eq!(record[2..], [layout::VERSION as usize, CLOCK_HZ, CPU, record[5]], "a start at {at}: {words:x?}");
                assert!(session < Some(record[5]), "a session going back at {at}: {words:x?}");
                session = Some(record[5]);
                Record::Start { session: record[5] }
            }
            k if k == Kind::Lost as u8 => Record::Lost { count: record[2] },
            _ => Record::Typed(record),
        };
        let typed = !matches!(record, Record::Upstream(_));
        assert!(!from_the_start || !typed || session.is_some(), "a typed record before a start at {at}: {words:x?}");
        out.push(record);
        at += len;
    }
    out
}


/// The steps one typed write takes on an empty ring, with no NMI.
fn steps_of_one_write(len: usize) -> usize {
    let ring = FakeRing::new(1000);
    // SAFETY: one thread.
    unsafe { ring.writer.write_record(&ring, &typed(1, len), TYPED_SESSION) };
    ring.steps.get()
}

#[test]
fn an_nmi_at_any_step_of_a_typed_write_is_written_whole_after_it_or_before_it() {
    let steps = steps_of_one_write(5);
    assert!(steps >= 8, "{steps} steps");
    let mut held_and_written_after = 0;
    for at in 1..=steps + 1 {
        let ring = FakeRing::new(1000);
        ring.nmis.borrow_mut().push((at, Nmi::Typed { id: 2, len: 7 }));
        // SAFETY: one thread.
        unsafe { ring.writer.write_record(&ring, &typed(1, 5), TYPED_SESSION) };
        let records = decode(&ring.words.borrow());
        let nmi_written = records.len() == 2;
        if at <= steps {
            // Not stranded: the NMI's record is in the ring once the write it came in returns.
            assert!(nmi_written, "NMI at step {at}: {records:?}");
        }
        assert!(records.contains(&Record::Typed(typed(1, 5))), "NMI at step {at}: {records:?}");
        if nmi_written {
            assert!(records.contains(&Record::Typed(typed(2, 7))), "NMI at step {at}: {records:?}");
            held_and_written_after += usize::from(records[1] == Record::Typed(typed(2, 7)));
        }
    }
    // From the ring's words on, the NMI's record waits for the write it came in.
    assert!(held_and_written_after >= steps - 3, "{held_and_written_after} of {steps}");
}

#[test]
fn two_nmis_in_one_write_one_is_held_and_the_other_counted_and_said() {
    let steps = steps_of_one_write(5);
    for first in 1..=steps {
        for second in first + 1..=steps + 8 {
            let ring = FakeRing::new(1000);
            ring.nmis.borrow_mut().extend([(first, Nmi::Typed { id: 2, len: 6 }), (second, Nmi::Typed { id: 3, len: 6 })]);
            // SAFETY: one thread.
            unsafe { ring.writer.write_record(&ring, &typed(1, 5), TYPED_SESSION) };
            // The next write says what was lost.
            // SAFETY: one thread.
            unsafe { ring.writer.write_record(&ring, &typed(4, 5), TYPED_SESSION) };
            let records = decode(&ring.words.borrow());
            let written = records.iter().filter(|r| matches!(r, Record::Typed(_))).count();
            let lost: usize = records.iter().map(|r| if let Record::Lost { count } = r { *count } else { 0 }).sum();
            assert_eq!(written + lost, 2 + ring.fired.get(), "NMIs at {first}, {second}: {records:?}");
            assert!(records.contains(&Record::Typed(typed(1, 5))) && records.contains(&Record::Typed(typed(4, 5))));
        }
    }
}

#[test]
fn upstreams_record_never_cuts_a_typed_one_when_the_mode_changes_mid_write() {
    let steps = steps_of_one_write(5);
    for at in 1..=steps + 1 {
        let ring = FakeRing::new(1000);
        ring.nmis.borrow_mut().push((at, Nmi::Upstream { id: 2 }));
        // SAFETY: one thread.
        unsafe { ring.writer.write_record(&ring, &typed(1, 5), TYPED_SESSION) };
        // decode panics on an overlap or a record cut short.
        let records = decode(&ring.words.borrow());
        assert!(records.contains(&Record::Typed(typed(1, 5))), "NMI at {at}: {records:?}");
        assert!(records.len() <= 2 && records.iter().all(|r| *r == Record::Typed(typed(1, 5)) || *r == Record::Upstream(upstream(2))));
    }
}

#[test]
fn a_typed_nmi_during_upstreams_write_waits_for_it() {
    // The other way round: a write of kind 0 in progress (an NMI never interrupts an NMI, but
    // the writer's rule is the same for every writer).
    let ring = FakeRing::new(1000);
    ring.nmis.borrow_mut().push((3, Nmi::Typed { id: 2, len: 6 }));
    // SAFETY: one thread.
    unsafe { ring.writer.write_upstream(&ring, &upstream(1)) };
    assert_eq!(decode(&ring.words.borrow()), [Record::Upstream(upstream(1)), Record::Typed(typed(2, 6))]);
}

#[test]
fn a_full_ring_counts_records_lost_and_says_them_once_there_is_room() {
    // The session's start (6 words) and two records of 5.
    let ring = FakeRing::new(16);
    for id in 1..=4 {
        // SAFETY: one thread.
        unsafe { ring.writer.write_record(&ring, &typed(id, 5), TYPED_SESSION) };
    }
    // Two fit; two lost.
    assert_eq!(decode(&ring.words.borrow()).len(), 2);
    ring.words.borrow_mut().clear(); // the reader drains the ring
    // SAFETY: one thread.
    unsafe { ring.writer.write_record(&ring, &typed(5, 5), TYPED_SESSION) };
    assert_eq!(decode_drained(&ring.words.borrow()), [Record::Lost { count: 2 }, Record::Typed(typed(5, 5))]);
    // Said once.
    ring.words.borrow_mut().clear();
    // SAFETY: one thread.
    unsafe { ring.writer.write_record(&ring, &typed(6, 5), TYPED_SESSION) };
    assert_eq!(decode_drained(&ring.words.borrow()), [Record::Typed(typed(6, 5))]);
}

#[test]
fn a_new_session_does_not_say_the_losses_of_the_last() {
    // A start and one record of 5.
    let ring = FakeRing::new(11);
    for id in 1..=3 {
        // SAFETY: one thread.
        unsafe { ring.writer.write_record(&ring, &typed(id, 5), TYPED_SESSION) };
    }
    ring.words.borrow_mut().clear();
    let next = TYPED_SESSION + 4;
    // SAFETY: one thread.
    unsafe { ring.writer.write_record(&ring, &typed(4, 5), next) };
    assert_eq!(decode(&ring.words.borrow()), [Record::Typed(typed(4, 5))]);
}

#[test]
fn the_kernel_series_adds_this_writer_as_tested_here() {
    let ours = include_str!("kernel_writer/writer.rs");
    let adding: Vec<(String, String)> = common::added_files().into_iter().filter(|(_, path, _)| path == "src/profiling/writer.rs").map(|(patch, _, text)| (patch, text)).collect();
    assert_eq!(adding.len(), 1, "one patch adds the writer");
    assert!(adding[0].1 == ours, "{} adds src/profiling/writer.rs unlike prof-events/tests/kernel_writer/writer.rs", adding[0].0);
    let changing = common::patches().iter().filter(|p| std::fs::read_to_string(p).unwrap().contains("b/src/profiling/writer.rs\n")).count();
    assert_eq!(changing, 1, "no later patch changes it");
}

#[test]
fn a_sessions_first_record_comes_after_its_start_and_a_new_session_starts_again() {
    let ring = FakeRing::new(1000);
    // SAFETY: one thread.
    unsafe {
        ring.writer.write_record(&ring, &typed(1, 5), TYPED_SESSION);
        ring.writer.write_record(&ring, &typed(2, 5), TYPED_SESSION);
        // Upstream's records (a session of `1` between) have no start.
        ring.writer.write_upstream(&ring, &upstream(3));
        ring.writer.write_record(&ring, &typed(4, 5), NEXT_SESSION);
    }
    let records = decode_all(&ring.words.borrow());
    let start = |session| Record::Start { session };
    assert_eq!(
        records,
        [
            start(TYPED_SESSION),
            Record::Typed(typed(1, 5)),
            Record::Typed(typed(2, 5)),
            Record::Upstream(upstream(3)),
            start(NEXT_SESSION),
            Record::Typed(typed(4, 5)),
        ]
    );
    // At the time of the record it comes before.
    assert_eq!(ring.words.borrow()[1], 1);
}

#[test]
fn a_record_of_an_earlier_session_after_a_later_ones_start_is_written_in_the_later_one() {
    // A writer read the session, then an NMI of the next one wrote first.
    let ring = FakeRing::new(1000);
    // SAFETY: one thread.
    unsafe {
        ring.writer.write_record(&ring, &typed(1, 5), NEXT_SESSION);
        ring.writer.write_record(&ring, &typed(2, 5), TYPED_SESSION);
    }
    let records = decode_all(&ring.words.borrow());
    assert_eq!(records, [Record::Start { session: NEXT_SESSION }, Record::Typed(typed(1, 5)), Record::Typed(typed(2, 5))]);
}

#[test]
fn a_full_ring_at_a_sessions_start_loses_the_record_and_starts_with_the_next_that_fits() {
    let ring = FakeRing::new(11);
    // SAFETY: one thread.
    unsafe {
        // Start (6) and 6 words do not fit in 11: lost, and the start is still due.
        ring.writer.write_record(&ring, &typed(1, 6), TYPED_SESSION);
        assert!(ring.words.borrow().is_empty());
        ring.writer.write_record(&ring, &typed(2, 2), TYPED_SESSION);
    }
    // Start, the loss said, then the record: 6 + 3 + 2 words.
    assert_eq!(decode_all(&ring.words.borrow()), [Record::Start { session: TYPED_SESSION }, Record::Lost { count: 1 }, Record::Typed(typed(2, 2))]);
}

#[test]
fn an_nmi_of_the_next_session_during_a_write_is_written_after_its_own_start() {
    let steps = steps_of_one_write(5);
    for at in 1..=steps {
        let ring = FakeRing::new(1000);
        ring.nmis.borrow_mut().push((at, Nmi::NextSession { id: 2 }));
        // SAFETY: one thread.
        unsafe { ring.writer.write_record(&ring, &typed(1, 5), TYPED_SESSION) };
        // decode_all panics on a record before its start, or a session going back.
        let records = decode_all(&ring.words.borrow());
        let typed_records: Vec<&Record> = records.iter().filter(|r| matches!(r, Record::Typed(_))).collect();
        assert_eq!(typed_records.len(), 2, "NMI at {at}: {records:?}");
        let next = records.iter().position(|r| *r == Record::Start { session: NEXT_SESSION });
        let its = records.iter().position(|r| *r == Record::Typed(typed(2, 5)));
        assert!(next < its, "NMI at {at}: {records:?}");
    }
}
