//! Taking turns at a CPU's ring. Its writers all run on that CPU: code that switches, blocks or
//! takes a request (interrupts off), and the NMI (or the timer tick) that may come in the middle
//! of such a write. One writes at a time: a record that comes during another write is held and
//! written right after it, never interleaved, never left for a later write. No lock and, but
//! where a record is lost, no locked read-modify-write: an NMI runs to its end before the write
//! it interrupted goes on, and the writer that interrupts is never interrupted by a third (NMIs
//! do not nest; an NMI-sending machine does not sample at its tick).
//!
//! A typed session's first record on the ring comes after a `Start` record (the layout's
//! version, the clock's rate, the CPU), written with it, whole with it or lost with it.
//!
//! It sees the ring through [`Ring`] alone, so a test can run it on the host and come in, as an
//! NMI would, between any two of its steps ([`Ring::step`]).

use core::{
    cell::UnsafeCell,
    sync::atomic::{compiler_fence, AtomicBool, AtomicUsize, Ordering},
};

use super::record::{self, Kind};

/// The longest record that can be held: an NMI's or a tick's sample.
pub const HELD_WORDS: usize = 32;

/// The ring, as a writer sees it.
pub trait Ring {
    /// Words that can be written.
    fn free_words(&self) -> usize;
    /// Writes what fits of `words` after the last record.
    ///
    /// # Safety
    /// Only the writer holding the ring ([`Writer`]) may call it.
    unsafe fn put(&self, words: &[usize]);
    /// The ring's CPU, for a session's `Start` record.
    fn cpu(&self) -> usize;
    /// The records' clock's counts a second, for a session's `Start` record (0: not known).
    fn clock_hz(&self) -> usize;
    /// A point between two steps of a write, where an NMI may come: nothing in the kernel.
    #[inline(always)]
    fn step(&self) {}
}

/// Which writer holds a CPU's ring, what is held for it, and what was lost.
pub struct Writer {
    /// A write is in progress.
    busy: AtomicBool,
    /// The length of the record held (0: none), in `held`: it came during another write.
    held_len: AtomicUsize,
    held: UnsafeCell<[usize; HELD_WORDS]>,
    /// The session of the record held.
    held_session: AtomicUsize,
    /// Typed records the ring had no room for, not yet said in a `Lost` record.
    lost: AtomicUsize,
    /// The latest session a typed record came in: losses of an earlier one are not said.
    session: AtomicUsize,
    /// That session's `Start` is still to be written, before its first record.
    start_due: AtomicBool,
}

impl Writer {
    pub const fn new() -> Self {
        Self {
            busy: AtomicBool::new(false),
            held_len: AtomicUsize::new(0),
            held: UnsafeCell::new([0; HELD_WORDS]),
            held_session: AtomicUsize::new(0),
            lost: AtomicUsize::new(0),
            session: AtomicUsize::new(0),
            start_due: AtomicBool::new(false),
        }
    }

    /// Writes a typed record of `session` whole, or counts it lost; during another write, holds
    /// it for that write to write after its own (a second one, or a longer one, is lost). Lost
    /// records are said first, in a `Lost` record at the time of the record they come before,
    /// and a session's first record on the ring after its `Start`.
    ///
    /// # Safety
    /// Only code running on the ring's CPU may call it.
    pub unsafe fn write_record(&self, ring: &impl Ring, record: &[usize], session: usize) {
        if !self.claim(ring, Some(session)) {
            self.hold(record, session);
            return;
        }
        // SAFETY: this write holds the ring (`claim`).
        unsafe { self.write_whole(ring, record) };
        // SAFETY: this write holds the ring.
        unsafe { self.release(ring) };
    }

    /// Writes upstream's kind-0 record: what fits, as upstream does. Dropped if it comes during
    /// another write.
    ///
    /// # Safety
    /// Only code running on the ring's CPU may call it.
    pub unsafe fn write_upstream(&self, ring: &impl Ring, record: &[usize]) {
        if !self.claim(ring, None) {
            return;
        }
        // SAFETY: this write holds the ring (`claim`).
        unsafe { ring.put(record) };
        // SAFETY: this write holds the ring.
        unsafe { self.release(ring) };
    }

    /// Takes the ring for a record (of a typed `session`), and writes first what a write held
    /// that this one came at the end of; false during another write.
    fn claim(&self, ring: &impl Ring, session: Option<usize>) -> bool {
        if self.busy.load(Ordering::Relaxed) {
            return false;
        }
        ring.step();
        if let Some(session) = session {
            // Before `busy`: what an NMI counts from then on is this session's.
            self.enter(ring, session);
        }
        self.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        ring.step();
        // SAFETY: this write holds the ring.
        unsafe { self.write_held(ring) };
        true
    }

    /// Gives the ring back. Whoever takes it next writes what is held first: the last look at
    /// `held_len` is made with the ring given back, and one that finds a record takes the ring
    /// again to write it.
    ///
    /// # Safety
    /// The caller holds the ring.
    unsafe fn release(&self, ring: &impl Ring) {
        loop {
            compiler_fence(Ordering::SeqCst);
            self.busy.store(false, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            ring.step();
            if self.held_len.load(Ordering::Relaxed) == 0 {
                return;
            }
            ring.step();
            // Held between this write's end and `busy`'s store. An NMI that took the ring in
            // between wrote it, and `write_held` finds nothing.
            self.busy.store(true, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            ring.step();
            // SAFETY: this write holds the ring again.
            unsafe { self.write_held(ring) };
        }
    }

    /// A typed record of `session` is to be written: if that session is later than the ring's
    /// (its writers read the session before they take the ring, so one may come after a later
    /// session's record: it is written in the later one), it is the ring's, with its `Start`
    /// due and none of the last one's losses.
    fn enter(&self, ring: &impl Ring, session: usize) {
        let current = self.session.load(Ordering::Relaxed);
        // Later, as the session's count goes (it wraps).
        if session.wrapping_sub(current) as isize > 0 {
            self.session.store(session, Ordering::Relaxed);
            self.lost.store(0, Ordering::Relaxed);
            self.start_due.store(true, Ordering::Relaxed);
            ring.step();
        }
    }

    /// During another write (an NMI): the record waits in `held`, if it is free and long enough.
    fn hold(&self, record: &[usize], session: usize) {
        if self.held_len.load(Ordering::Relaxed) == 0 {
            // SAFETY: the write this one interrupted reads `held` only while `held_len` is not
            // 0, and nothing interrupts this one.
            let held = unsafe { &mut *self.held.get() };
            if let Some(slot) = held.get_mut(..record.len()) {
                slot.copy_from_slice(record);
                self.held_session.store(session, Ordering::Relaxed);
                compiler_fence(Ordering::SeqCst);
                self.held_len.store(record.len(), Ordering::Relaxed);
                return;
            }
        }
        self.lost.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes the record held, if any, and frees `held`.
    ///
    /// # Safety
    /// The caller holds the ring.
    unsafe fn write_held(&self, ring: &impl Ring) {
        let len = self.held_len.load(Ordering::Relaxed);
        if len == 0 {
            return;
        }
        // SAFETY: an NMI does not write `held` while `held_len` is not 0.
        let held = unsafe { &*self.held.get() };
        // Its session began during the write it came in.
        self.enter(ring, self.held_session.load(Ordering::Relaxed));
        // SAFETY: the caller holds the ring.
        unsafe { self.write_whole(ring, held.get(..len).unwrap_or(&[])) };
        compiler_fence(Ordering::SeqCst);
        ring.step();
        self.held_len.store(0, Ordering::Relaxed);
    }

    /// Writes a typed record whole, after its session's `Start` if it is the first, and a `Lost`
    /// record if records were lost, or counts it lost.
    ///
    /// # Safety
    /// The caller holds the ring.
    unsafe fn write_whole(&self, ring: &impl Ring, record: &[usize]) {
        let time = record.get(1).copied().unwrap_or(0);
        let start_due = self.start_due.load(Ordering::Relaxed);
        let start_record = if start_due {
            [
                record::header(Kind::Start, 6, 0, 0) as usize,
                time,
                record::VERSION as usize,
                ring.clock_hz(),
                ring.cpu(),
                self.session.load(Ordering::Relaxed),
            ]
        } else {
            [0; 6]
        };
        let start: &[usize] = if start_due { &start_record } else { &[] };
        let lost = self.lost.load(Ordering::Relaxed);
        let lost_record = [record::header(Kind::Lost, 3, 0, 0) as usize, time, lost];
        let before: &[usize] = if lost == 0 { &[] } else { &lost_record };
        let len = start.len().saturating_add(before.len());
        if ring.free_words() < len.saturating_add(record.len()) {
            self.lost.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // SAFETY: the caller holds the ring.
        unsafe {
            ring.put(start);
            ring.put(before);
            ring.put(record);
        }
        self.start_due.store(false, Ordering::Relaxed);
        if lost != 0 {
            // An NMI may have counted one more meanwhile.
            self.lost.fetch_sub(lost, Ordering::Relaxed);
        }
    }
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}
