//! Records of upstream Redox's own profiler (the kernel's cargo feature `profiling`,
//! `src/profiling.rs` at 663e6641), as `debug:profiling-N` gives them: the words one CPU's
//! ring held, little endian, 8 bytes each.
//!
//! One record per NMI the profiling CPU sent:
//!
//! | word | what |
//! |---|---|
//! | 0 | `0xfedfac00 \| len`: the marker, and the record's length in words (4 to 32) |
//! | 1 | the interrupted instruction pointer |
//! | 2 | the TSC when the NMI came (`rdtsc`) |
//! | 3 | the running context's `debug_id` (`current_dbg_id`, stored at each switch) |
//! | 4.. | return addresses of the frame-pointer walk: user frames for a user sample; for a kernel one, kernel frames, then (where the walk reached the system call) the user instruction pointer and the user frames |
//!
//! What the format does not say, and this decoder copes with: the ring drops what does not fit
//! when full, mid-record (`RingBuffer::extend` writes what fits), so a record can be cut short
//! and the next record's marker then stands where a frame was expected; such a record is
//! counted as damaged, never read as a sample. A read (`drain_buffer`) copies as many bytes as
//! the reader's buffer takes but consumes whole words only (a word cut by the buffer's end is
//! sent again, whole, by the next read), so a record can end in the next read: [`RingDecoder`]
//! keeps the words of an unfinished record until the next read comes, and drops a read's cut
//! word. Kernel samples taken with interrupts enabled (the idle loop, and any kernel code
//! running with interrupts on) are not recorded at all. At 663e6641 `walk_ustack` reads the
//! page a frame is on from its start (`translate` gives the frame's page, not its address), so
//! the user frames of a stock kernel's records are not the program's: [`Record::user_frames`]
//! is what the kernel wrote, for a reader that knows its kernel has the fix.

/// The marker of a record's first word (its low byte is the length).
pub const MARKER: u64 = 0xfedf_ac00;

/// The longest record, in words (the kernel's buffer: `[usize; 32]`).
pub const MAX_WORDS: usize = 32;

/// The shortest: marker, IP, TSC, debug_id.
pub const HEADER_WORDS: usize = 4;

/// Where the kernel's half of the address space starts (x86_64): an address at or above it is
/// the kernel's.
pub const KERNEL_BASE: u64 = 0xffff_8000_0000_0000;

/// One sample from upstream's ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The interrupted instruction pointer.
    pub ip: u64,
    /// The TSC when the sample was taken.
    pub tsc: u64,
    /// The running context's `debug_id` (named through the kernel's `DBG_ID_MAP`).
    pub context: u32,
    /// Was the CPU in the kernel (the IP is the kernel's)?
    pub kernel: bool,
    /// The kernel's return addresses, innermost first (kernel samples only).
    pub kernel_frames: Vec<u64>,
    /// The user call stack, innermost first, after `ip` (or, for a kernel sample that came
    /// from a system call, starting with the user IP of the call).
    pub user_frames: Vec<u64>,
}

/// What one CPU's stream held besides samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples decoded.
    pub records: u64,
    /// Records cut short (the ring was full) or with a length the format cannot have.
    pub damaged: u64,
    /// Words that were no part of a record (before the first marker, or after a damaged one).
    pub stray_words: u64,
}

/// Is `word` a record's first word? Its length must be one the kernel writes.
fn record_length(word: u64) -> Option<usize> {
    if word & !0xff != MARKER {
        return None;
    }
    let len = (word & 0xff) as usize;
    (HEADER_WORDS..=MAX_WORDS).contains(&len).then_some(len)
}

/// Looks like a record's first word, whatever its length says.
fn is_marker(word: u64) -> bool {
    word & !0xff == MARKER
}

/// A record from its words (`words.len()` is its length; none of its words after the first is
/// a marker).
fn record(words: &[u64]) -> Record {
    let (ip, tsc, context) = (words[1], words[2], words[3] as u32);
    let frames = &words[HEADER_WORDS..];
    let kernel = ip >= KERNEL_BASE;
    // A kernel walk ends in the kernel's frames, then goes on at the system call's user IP.
    let split = match kernel {
        true => frames.iter().position(|&f| f < KERNEL_BASE).unwrap_or(frames.len()),
        false => 0,
    };
    Record { ip, tsc, context, kernel, kernel_frames: frames[..split].to_vec(), user_frames: frames[split..].to_vec() }
}

/// One CPU's decoder: bytes in as `debug:profiling-N` reads give them, records out.
#[derive(Debug, Default)]
pub struct RingDecoder {
    /// Words of a record not yet whole.
    pending: Vec<u64>,
    pub counts: Counts,
}

impl RingDecoder {
    pub fn new() -> RingDecoder {
        RingDecoder::default()
    }

    /// Decode `bytes`, the next read of this CPU's ring, into `out`. A record whose words are
    /// not all here yet waits for the next read; a word the read cut short is dropped (the
    /// kernel did not consume it and sends it again: read with a buffer of whole words).
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Record>) {
        for word in bytes.chunks_exact(8) {
            self.word(u64::from_le_bytes(word.try_into().expect("8 bytes")), out);
        }
    }

    fn word(&mut self, word: u64, out: &mut Vec<Record>) {
        if self.pending.is_empty() {
            match record_length(word) {
                Some(_) => self.pending.push(word),
                None if is_marker(word) => self.counts.damaged += 1,
                None => self.counts.stray_words += 1,
            }
            return;
        }
        if is_marker(word) {
            // The record before was cut short: the ring was full.
            self.counts.damaged += 1;
            self.pending.clear();
            self.word(word, out);
            return;
        }
        self.pending.push(word);
        let len = record_length(self.pending[0]).expect("a pending record starts with a marker");
        if self.pending.len() == len {
            out.push(record(&self.pending));
            self.counts.records += 1;
            self.pending.clear();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The words the kernel's `nmi_handler` writes for one sample.
    fn words(ip: u64, tsc: u64, context: u32, frames: &[u64]) -> Vec<u64> {
        let len = HEADER_WORDS + frames.len();
        let mut w = vec![MARKER | len as u64, ip, tsc, context as u64];
        w.extend_from_slice(frames);
        w
    }

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn decode(stream: &[u8]) -> (Vec<Record>, Counts) {
        let mut d = RingDecoder::new();
        let mut out = Vec::new();
        d.push(stream, &mut out);
        let counts = d.finish();
        (out, counts)
    }

    const K: u64 = 0xffff_ffff_8000_1000;

    #[test]
    fn user_and_kernel_samples_as_the_kernel_writes_them() {
        let mut stream = words(0x40_1234, 1000, 7, &[0x40_2000, 0x40_3000]);
        // A kernel sample from a system call: two kernel frames, the call's user IP, its caller.
        stream.extend(words(K, 2000, 9, &[K + 0x10, K + 0x20, 0x40_5000, 0x40_6000]));
        // A kernel thread's: kernel frames alone.
        stream.extend(words(K + 0x40, 3000, 1, &[K + 0x50]));
        let (records, counts) = decode(&bytes(&stream));
        assert_eq!(counts, Counts { records: 3, damaged: 0, stray_words: 0 });
        assert_eq!(
            records[0],
            Record { ip: 0x40_1234, tsc: 1000, context: 7, kernel: false, kernel_frames: vec![], user_frames: vec![0x40_2000, 0x40_3000] }
        );
        assert_eq!(
            records[1],
            Record { ip: K, tsc: 2000, context: 9, kernel: true, kernel_frames: vec![K + 0x10, K + 0x20], user_frames: vec![0x40_5000, 0x40_6000] }
        );
        assert_eq!((records[2].kernel_frames.clone(), records[2].user_frames.is_empty()), (vec![K + 0x50], true));
    }

    #[test]
    fn a_record_split_across_reads_anywhere_is_whole() {
        let mut stream = words(0x40_1234, 1000, 7, &[0x40_2000; 28]);
        stream.extend(words(0x40_1000, 1001, 8, &[]));
        let all = bytes(&stream);
        let (whole, _) = decode(&all);
        for cut in 0..all.len() {
            let mut d = RingDecoder::new();
            let mut out = Vec::new();
            // As the kernel reads: the first read's cut word is not consumed, and comes
            // again, whole, at the start of the next.
            let resent = cut / 8 * 8;
            d.push(&all[..cut], &mut out);
            d.push(&all[resent..], &mut out);
            assert_eq!(d.finish(), Counts { records: 2, damaged: 0, stray_words: 0 }, "cut at {cut}");
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    #[test]
    fn a_record_the_full_ring_cut_short_is_counted_not_read() {
        // The ring was full: of a 6-word record, 3 words were written; then the next record.
        let mut stream = words(0x40_1234, 1000, 7, &[0x40_2000, 0x40_3000])[..3].to_vec();
        stream.extend(words(0x40_1000, 1001, 8, &[0x40_2000]));
        // A stream that ends inside a record (the last write cut short too).
        stream.extend(&words(0x40_1000, 1002, 8, &[0x40_2000])[..2]);
        let (records, counts) = decode(&bytes(&stream));
        assert_eq!(counts, Counts { records: 1, damaged: 2, stray_words: 0 });
        assert_eq!(records[0].tsc, 1001);
    }

    #[test]
    fn words_before_a_marker_and_lengths_the_kernel_never_writes_are_skipped() {
        let mut stream = vec![0, 0x1234];
        stream.push(MARKER | 2); // shorter than a header
        stream.push(MARKER | 33); // longer than the kernel's buffer
        stream.extend(words(0x40_1234, 1000, 7, &[]));
        // Three bytes of a word at the end: a word the read cut, dropped.
        let mut b = bytes(&stream);
        b.extend_from_slice(&[1, 2, 3]);
        let (records, counts) = decode(&b);
        assert_eq!(records.len(), 1);
        assert_eq!(counts, Counts { records: 1, damaged: 2, stray_words: 2 });
    }
}
