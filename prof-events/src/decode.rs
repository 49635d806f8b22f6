//! One CPU's ring into events.
//!
//! Reads of `debug:profiling-N` copy as many bytes as the reader's buffer takes but consume
//! whole words only (a word cut by the buffer's end comes again, whole, in the next read), so
//! a record can end in the next read: [`RingDecoder`] keeps the words of an unfinished record
//! until the next read comes, and drops a read's cut word.
//!
//! Upstream's profiler (kind 0) writes what fits of a record when its ring is full, so a kind 0
//! record can be cut short, the next record's marker standing where a frame was expected: such
//! a record is counted as damaged, never read as a sample. Every other kind is written whole
//! or not at all, so its words are read by its length; a kind this reader does not know is
//! skipped by its length and counted.

use crate::event::{Event, Ids, Sample, Switch};
use crate::layout::{self, Header, Kind, Reason, Source, MAX_WORDS};

/// The longest record upstream's profiler writes (kind 0: its `nmi_handler`'s `[usize; 32]`).
pub const UPSTREAM_MAX_WORDS: usize = 32;

/// Where the kernel's half of the address space starts (x86_64): in a kind 0 record, which
/// does not say how many frames are the kernel's, the first frame below it is the user's.
pub const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

/// What one CPU's stream held besides its events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Records decoded.
    pub records: u64,
    /// Records cut short (a full ring, kind 0) or with a length their kind cannot have.
    pub damaged: u64,
    /// Words that were no part of a record (before the first marker, or after a damaged one).
    pub stray_words: u64,
    /// Records of a kind this reader does not know, skipped.
    pub unknown: u64,
    /// Records the kernel said it had no room for ([`Event::Lost`]).
    pub lost: u64,
}

/// The header of a record this reader can read whole: its kind (or `None`, a kind to skip)
/// and length.
fn record_start(word: u64) -> Option<(Option<Kind>, usize)> {
    let h = Header::parse(word)?;
    let kind = Kind::from_u8(h.kind);
    let shortest = kind.map_or(2, Kind::min_words);
    let longest = match kind {
        Some(Kind::Upstream) => UPSTREAM_MAX_WORDS,
        _ => MAX_WORDS,
    };
    if h.len < shortest || h.len > longest {
        return None;
    }
    if kind == Some(Kind::Upstream) && (h.flags != 0 || h.aux != 0) {
        return None;
    }
    Some((kind, h.len))
}

/// A kind 0 record's first word, whatever its length says: what ends a record cut short.
fn is_upstream_marker(word: u64) -> bool {
    word & !0xff == layout::MARKER
}

/// One CPU's decoder: bytes in as `debug:profiling-N` reads give them, events out.
#[derive(Debug, Default)]
pub struct RingDecoder {
    cpu: u32,
    /// Words of a record not yet whole.
    pending: Vec<u64>,
    pub counts: Counts,
}

impl RingDecoder {
    pub fn new(cpu: u32) -> RingDecoder {
        RingDecoder { cpu, ..RingDecoder::default() }
    }

    /// Decode `bytes`, the next read of this CPU's ring, into `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        for word in bytes.chunks_exact(8) {
            self.word(u64::from_le_bytes(word.try_into().expect("8 bytes")), out);
        }
    }

    fn word(&mut self, word: u64, out: &mut Vec<Event>) {
        let Some(&first) = self.pending.first() else {
            match record_start(word) {
                Some(_) => self.pending.push(word),
                None if Header::parse(word).is_some() => self.counts.damaged += 1,
                None => self.counts.stray_words += 1,
            }
            return self.maybe_done(out);
        };
        let (kind, len) = record_start(first).expect("a pending record starts with a header");
        if kind == Some(Kind::Upstream) && is_upstream_marker(word) {
            // The record before was cut short: the ring was full.
            self.counts.damaged += 1;
            self.pending.clear();
            return self.word(word, out);
        }
        self.pending.push(word);
        if self.pending.len() == len {
            self.maybe_done(out);
        }
    }

    /// A pending record that is whole becomes its event.
    fn maybe_done(&mut self, out: &mut Vec<Event>) {
        let Some(&first) = self.pending.first() else { return };
        let (kind, len) = record_start(first).expect("a pending record starts with a header");
        if self.pending.len() < len {
            return;
        }
        match kind {
            Some(kind) => {
                let event = event(self.cpu, kind, &self.pending);
                if let Event::Lost { count, .. } = event {
                    self.counts.lost += count;
                }
                out.push(event);
                self.counts.records += 1;
            }
            None => self.counts.unknown += 1,
        }
        self.pending.clear();
    }

    /// The stream is over: a record still unfinished was cut short.
    pub fn finish(&mut self) -> Counts {
        if !self.pending.is_empty() {
            self.counts.damaged += 1;
            self.pending.clear();
        }
        self.counts
    }
}

/// A whole record's event (`w.len()` is the record's length, at least its kind's shortest).
fn event(cpu: u32, kind: Kind, w: &[u64]) -> Event {
    let h = Header::parse(w[0]).expect("a record starts with a header");
    let time = w[1];
    match kind {
        Kind::Upstream => {
            let (ip, time, thread) = (w[1], w[2], w[3] as u32);
            let frames = &w[4..];
            let kernel = ip >= KERNEL_BASE;
            // A kernel walk ends in the kernel's frames, then goes on at the call's user IP.
            let split = match kernel {
                true => frames.iter().position(|&f| f < KERNEL_BASE).unwrap_or(frames.len()),
                false => 0,
            };
            Event::Sample(Sample {
                cpu,
                time,
                who: Ids { pid: None, thread },
                kernel,
                source: None,
                ip,
                kernel_frames: frames[..split].to_vec(),
                user_frames: frames[split..].to_vec(),
            })
        }
        Kind::Sample => {
            let frames = &w[4..];
            let split = usize::from(h.aux).min(frames.len());
            Event::Sample(Sample {
                cpu,
                time,
                who: Ids::from_word(w[2]),
                kernel: h.flags & layout::SAMPLE_KERNEL != 0,
                source: match (h.flags >> 1) & 3 {
                    0 => Some(Source::NmiIpi),
                    1 => Some(Source::Tick),
                    2 => Some(Source::Block),
                    _ => None,
                },
                ip: w[3],
                kernel_frames: frames[..split].to_vec(),
                user_frames: frames[split..].to_vec(),
            })
        }
        Kind::Switch => Event::Switch(Switch {
            cpu,
            time,
            left: Ids::from_word(w[2]),
            entered: Ids::from_word(w[3]),
            reason: Reason::from_u16(h.aux),
            detail: w[4],
            stack: w[5..].to_vec(),
        }),
        Kind::Lost => Event::Lost { cpu, time, count: w[2] },
        Kind::Context => {
            let bytes: Vec<u8> = w[3..].iter().flat_map(|x| x.to_le_bytes()).collect();
            let name = &bytes[..usize::from(h.aux).min(bytes.len())];
            Event::Name { cpu, time, who: Ids::from_word(w[2]), name: String::from_utf8_lossy(name).into_owned() }
        }
        Kind::Exec => Event::Exec { cpu, time, who: Ids::from_word(w[2]), entry: w[3] },
        Kind::NewContext => Event::NewThread { cpu, time, who: Ids::from_word(w[2]), giver: Ids::from_word(w[3]) },
        Kind::Exit => Event::Exit { cpu, time, who: Ids::from_word(w[2]) },
        Kind::Request => Event::Request {
            cpu,
            time,
            daemon: Ids::from_word(w[2]),
            caller: Ids::from_word(w[3]),
            scheme: w[4],
            tag: w[5],
            answered: h.flags & layout::REQUEST_ANSWERED != 0,
        },
    }
}
