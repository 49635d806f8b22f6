//! One CPU's ring into events, and the reader's half of the layout (the kernel's
//! [`layout`](crate::layout) is what it writes).
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
//!
//! A kernel that versions its layout begins each typed session on each ring with a
//! [`Kind::Start`] record, which becomes [`Event::Start`]: the records after it are of its CPU
//! (the events carry the kernel's number), and a major version newer than this reader's stops
//! the ring's reading ([`NewerLayout`]). Records without one (a stock kernel's kind 0, and the
//! typed records of a kernel from before versions) are read as before, of the CPU the decoder
//! was made for.

use std::fmt;

use crate::event::{Event, Ids, Sample, Start, Switch, Version};
use crate::layout::{self, Kind, Reason, Source, MAX_WORDS};

/// What of a header word is the marker.
pub const MARKER_MASK: u64 = 0xffff_ff00;

/// A header word's fields, if it is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub aux: u16,
}

impl Header {
    /// The fields of `word`, if its marker is there (its kind and length are the reader's to
    /// check).
    pub const fn parse(word: u64) -> Option<Header> {
        if word & MARKER_MASK != layout::MARKER {
            return None;
        }
        Some(Header { len: (word & 0xff) as usize, kind: (word >> 32) as u8, flags: (word >> 40) as u8, aux: (word >> 48) as u16 })
    }
}

/// The kind numbered `kind`, if this reader knows it.
pub const fn kind_of(kind: u8) -> Option<Kind> {
    Some(match kind {
        0 => Kind::Upstream,
        1 => Kind::Sample,
        2 => Kind::Switch,
        3 => Kind::Lost,
        4 => Kind::Context,
        5 => Kind::Exec,
        6 => Kind::NewContext,
        8 => Kind::Request,
        9 => Kind::Start,
        10 => Kind::Syscall,
        _ => return None,
    })
}

/// The fewest words a record of `kind` has, its header included.
pub const fn min_words(kind: Kind) -> usize {
    match kind {
        Kind::Upstream => 4,
        Kind::Sample => 4,
        Kind::Switch => 5,
        Kind::Lost => 3,
        Kind::Context => 3,
        Kind::Exec => 4,
        Kind::NewContext => 4,
        Kind::Request => 6,
        Kind::Start => 6,
        Kind::Syscall => 6,
    }
}

/// The reason numbered `reason`, if this reader knows it.
pub const fn reason_of(reason: u16) -> Option<Reason> {
    Some(match reason {
        0 => Reason::Preempted,
        1 => Reason::Blocked,
        2 => Reason::Futex,
        3 => Reason::Sleep,
        4 => Reason::Scheme,
        5 => Reason::Pipe,
        7 => Reason::Event,
        8 => Reason::Stopped,
        9 => Reason::Exit,
        10 => Reason::SchemeIdle,
        _ => return None,
    })
}

/// A ring whose kernel writes a major version of the layout newer than this reader's: its
/// records from its `Start` on are not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewerLayout {
    pub cpu: u32,
    pub version: Version,
}

impl fmt::Display for NewerLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CPU {}'s profiling records are of layout version {}, newer than the {}.x this reader knows: not read (a newer profd reads them)",
            self.cpu,
            self.version,
            Version::OURS.major
        )
    }
}

impl std::error::Error for NewerLayout {}

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
    let kind = kind_of(h.kind);
    let shortest = kind.map_or(2, min_words);
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
    /// The CPU of the events: the one the decoder was made for until a `Start` names one.
    cpu: u32,
    /// Words of a record not yet whole.
    pending: Vec<u64>,
    /// The last `Start` read.
    start: Option<Start>,
    /// The version of a `Start` this reader does not read: nothing after it is read.
    refused: Option<Version>,
    pub counts: Counts,
}

impl RingDecoder {
    pub fn new(cpu: u32) -> RingDecoder {
        RingDecoder { cpu, ..RingDecoder::default() }
    }

    /// Decode `bytes`, the next read of this CPU's ring, into `out`. A `Start` of a newer
    /// major version of the layout ends the ring's reading: that read's events before it are
    /// in `out`, and this and every later push answer [`NewerLayout`].
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), NewerLayout> {
        for word in bytes.chunks_exact(8) {
            if self.refused.is_some() {
                break;
            }
            self.word(u64::from_le_bytes(word.try_into().expect("8 bytes")), out);
        }
        match self.refused {
            Some(version) => Err(NewerLayout { cpu: self.cpu, version }),
            None => Ok(()),
        }
    }

    /// The last `Start` read: the layout's version, the clock's rate, the CPU. `None`: a stock
    /// kernel's records, or typed ones from before versions.
    pub fn start(&self) -> Option<&Start> {
        self.start.as_ref()
    }

    /// The CPU of the events decoded from now on.
    pub fn cpu(&self) -> u32 {
        self.cpu
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
                match event {
                    Event::Lost { count, .. } => self.counts.lost += count,
                    Event::Start(start) if start.version.major > Version::OURS.major => {
                        self.refused = Some(start.version);
                        self.cpu = start.cpu;
                        self.pending.clear();
                        return;
                    }
                    Event::Start(start) => {
                        self.cpu = start.cpu;
                        self.start = Some(start);
                    }
                    _ => {}
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
            reason: reason_of(h.aux),
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
        Kind::Request => Event::Request {
            cpu,
            time,
            daemon: Ids::from_word(w[2]),
            caller: Ids::from_word(w[3]),
            scheme: w[4],
            tag: w[5],
            answered: h.flags & layout::REQUEST_ANSWERED != 0,
        },
        Kind::Start => Event::Start(Start {
            cpu: w[4] as u32,
            time,
            version: Version::from_word(w[2]),
            clock_hz: Some(w[3]).filter(|&hz| hz != 0),
            session: w[5],
        }),
        Kind::Syscall => Event::Syscall { cpu, time, who: Ids::from_word(w[2]), entered: w[3], number: w[4], result: w[5] },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::header;

    const KINDS: [Kind; 10] = [
        Kind::Upstream,
        Kind::Sample,
        Kind::Switch,
        Kind::Lost,
        Kind::Context,
        Kind::Exec,
        Kind::NewContext,
        Kind::Request,
        Kind::Start,
        Kind::Syscall,
    ];
    const REASONS: [Reason; 10] = [
        Reason::Preempted,
        Reason::Blocked,
        Reason::Futex,
        Reason::Sleep,
        Reason::Scheme,
        Reason::Pipe,
        Reason::Event,
        Reason::Stopped,
        Reason::Exit,
        Reason::SchemeIdle,
    ];

    #[test]
    fn every_kind_and_reason_of_the_layout_is_read_back_by_its_number() {
        for kind in KINDS {
            assert_eq!(kind_of(kind as u8), Some(kind));
        }
        for reason in REASONS {
            assert_eq!(reason_of(reason as u16), Some(reason));
        }
        // The numbers no record has: kind 7 and reason 6 were never written, and later ones
        // are a later layout's.
        assert_eq!((kind_of(7), kind_of(11), kind_of(0xff)), (None, None, None));
        assert_eq!((reason_of(6), reason_of(11), reason_of(u16::MAX)), (None, None, None));
    }

    #[test]
    fn a_header_is_parsed_where_its_marker_is_and_only_there() {
        let word = header(Kind::Request, 6, layout::REQUEST_ANSWERED, 0x1234);
        assert_eq!(Header::parse(word), Some(Header { len: 6, kind: 8, flags: 1, aux: 0x1234 }));
        assert_eq!(Header::parse(word ^ (1 << 8)), None);
        assert_eq!(Header::parse(0), None);
        // Upstream's kind 0: the marker and the length alone.
        assert_eq!(Header::parse(layout::MARKER | 7), Some(Header { len: 7, kind: 0, flags: 0, aux: 0 }));
    }

    #[test]
    fn a_start_shorter_than_its_words_is_damaged_not_read() {
        let mut d = RingDecoder::new(1);
        let mut out = Vec::new();
        let words = [header(Kind::Start, 5, 0, 0), 1, layout::VERSION, 0, 1];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        d.push(&bytes, &mut out).unwrap();
        assert!(out.is_empty() && d.start().is_none());
        assert_eq!(d.finish(), Counts { damaged: 1, stray_words: 4, ..Counts::default() });
    }

    #[test]
    fn the_refusal_says_the_cpu_and_both_versions() {
        let e = NewerLayout { cpu: 2, version: Version { major: 3, minor: 1 } };
        assert_eq!(
            e.to_string(),
            "CPU 2's profiling records are of layout version 3.1, newer than the 1.x this reader knows: not read (a newer profd reads them)"
        );
    }
}
