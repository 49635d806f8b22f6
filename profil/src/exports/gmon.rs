//! `-o FILE`: the program's samples as a `gmon.out` that GNU gprof reads
//! (`gprof prog gmon.out` prints the flat profile).
//!
//! Layout (binutils' `gmon_out.h`; integers little endian, as on x86-64):
//!
//! * header: `"gmon"`, version 1 (u32), 12 spare bytes;
//! * `GMON_TAG_TIME_HIST` records: tag 0, `low_pc` (u64), `high_pc` (u64), `hist_size` (u32,
//!   the number of bins), `prof_rate` (u32, Hz), `dimen` (`"seconds"`, 15 bytes NUL padded),
//!   `dimen_abbrev` (`'s'`), then `hist_size` u16 counters.
//!
//! The histogram spans the program's sampled addresses in bins of two bytes of text (coarser
//! only past 16 Mi bins), from an even `low_pc`: gprof measures addresses in 2-byte units (its
//! `UNIT`, a u16), so that is its finest bin; every tick goes to the function holding it
//! (a function starting at an odd address shares its first unit with its predecessor).
//! A u16 counter holds at most 65535: a bin with more ticks goes on in further records with
//! the same range, which gprof adds up (it is how gprof sums several gmon.out files), so the
//! counts stay exact.  Only the program's own samples are in it, as with `-pg`.
//!
//! With call stacks (`-g`), `GMON_TAG_CG_ARC` records follow: tag 1, `from_pc` (u64, in the
//! caller), `self_pc` (u64, the callee), `count` (u32). Sampling sees no calls, so the count
//! is the number of samples in which the caller called the callee directly: gprof then
//! shares a function's time among its callers as the samples did (`gprof -q` prints the call
//! graph of a program never built with `-pg`). Arcs are between the program's functions.

/// Most bins per record before bins grow beyond one byte.
const MAX_BINS: u64 = 1 << 24;

const GMON_TAG_TIME_HIST: u8 = 0;
const GMON_TAG_CG_ARC: u8 = 1;

/// A call-graph arc: a caller's and a callee's link-time addresses, and its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arc {
    pub from_pc: u64,
    pub self_pc: u64,
    pub count: u64,
}

/// The gmon.out bytes for `samples` (link-time address, ticks) taken at `rate_hz`, and the
/// call-graph `arcs`. `text_start` places the empty histogram a run with no samples still
/// writes (gprof refuses a file without one: "gmon.out file is missing histogram").
pub fn render(samples: &[(u64, u64)], text_start: u64, rate_hz: u64, arcs: &[Arc]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"gmon");
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&[0; 12]);
    let low = samples.iter().map(|s| s.0).min().unwrap_or(text_start);
    let high = samples.iter().map(|s| s.0).max().unwrap_or(text_start);
    let low = low & !1;
    let span = high - low + 1;
    let bin_size = 2 * span.div_ceil(2 * MAX_BINS);
    let nbins = span.div_ceil(bin_size);
    let mut bins = vec![0u64; nbins as usize];
    for &(a, n) in samples {
        bins[((a - low) / bin_size) as usize] += n;
    }
    // At least one record, so that gprof reads even a run with no samples.
    let records = bins.iter().max().map_or(0, |m| m.div_ceil(u64::from(u16::MAX))).max(1);
    for r in 0..records {
        out.push(GMON_TAG_TIME_HIST);
        out.extend_from_slice(&low.to_le_bytes());
        out.extend_from_slice(&(low + nbins * bin_size).to_le_bytes());
        out.extend_from_slice(&(nbins as u32).to_le_bytes());
        out.extend_from_slice(&(rate_hz.min(u64::from(u32::MAX)) as u32).to_le_bytes());
        let mut dimen = [0u8; 15];
        dimen[..7].copy_from_slice(b"seconds");
        out.extend_from_slice(&dimen);
        out.push(b's');
        let already = r * u64::from(u16::MAX);
        for &b in &bins {
            let c = b.saturating_sub(already).min(u64::from(u16::MAX)) as u16;
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    for a in arcs {
        out.push(GMON_TAG_CG_ARC);
        out.extend_from_slice(&a.from_pc.to_le_bytes());
        out.extend_from_slice(&a.self_pc.to_le_bytes());
        out.extend_from_slice(&(a.count.min(u64::from(u32::MAX)) as u32).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &[u8; 20] = b"gmon\x01\x00\x00\x00\0\0\0\0\0\0\0\0\0\0\0\0";

    fn record(low: u64, high: u64, rate: u32, counts: &[u16]) -> Vec<u8> {
        let mut r = vec![0u8];
        r.extend_from_slice(&low.to_le_bytes());
        r.extend_from_slice(&high.to_le_bytes());
        r.extend_from_slice(&(counts.len() as u32).to_le_bytes());
        r.extend_from_slice(&rate.to_le_bytes());
        r.extend_from_slice(b"seconds\0\0\0\0\0\0\0\0s");
        for c in counts {
            r.extend_from_slice(&c.to_le_bytes());
        }
        r
    }

    #[test]
    fn two_byte_bins_over_the_sampled_span() {
        let got = render(&[(0x1007, 2), (0x1001, 5), (0x1002, 1), (0x1000, 1)], 0, 1000, &[]);
        let mut want = HEADER.to_vec();
        want.extend(record(0x1000, 0x1008, 1000, &[6, 1, 0, 2]));
        assert_eq!(got, want);
        // low_pc is rounded down to an even address.
        assert_eq!(
            &render(&[(0x1003, 1)], 0, 1000, &[])[21..37],
            &[0x1002u64.to_le_bytes(), 0x1004u64.to_le_bytes()].concat()[..]
        );
    }

    #[test]
    fn counts_past_65535_continue_in_records_with_the_same_range() {
        let got = render(&[(0x2000, 150_000), (0x2002, 7)], 0, 250, &[]);
        let mut want = HEADER.to_vec();
        want.extend(record(0x2000, 0x2004, 250, &[65535, 7]));
        want.extend(record(0x2000, 0x2004, 250, &[65535, 0]));
        want.extend(record(0x2000, 0x2004, 250, &[(150_000 - 2 * 65535u32) as u16, 0]));
        assert_eq!(got, want);
    }

    #[test]
    fn no_samples_is_one_empty_histogram_at_the_text() {
        let mut want = HEADER.to_vec();
        want.extend(record(0x1000, 0x1002, 1000, &[0]));
        assert_eq!(render(&[], 0x1000, 1000, &[]), want);
    }

    #[test]
    fn huge_spans_use_wider_bins() {
        let got = render(&[(0, 1), (MAX_BINS * 6 - 1, 1)], 0, 1000, &[]);
        let nbins = u32::from_le_bytes(got[20 + 17..20 + 21].try_into().unwrap());
        assert_eq!(u64::from(nbins), MAX_BINS);
        assert_eq!(u64::from_le_bytes(got[29..37].try_into().unwrap()), MAX_BINS * 6);
    }

    #[test]
    fn arcs_follow_the_histogram() {
        let arcs = [Arc { from_pc: 0x1000, self_pc: 0x1100, count: 3 }, Arc { from_pc: 0x1200, self_pc: 0x1100, count: 1 << 40 }];
        let got = render(&[(0x1100, 4)], 0, 1000, &arcs);
        let plain = render(&[(0x1100, 4)], 0, 1000, &[]);
        let mut want = plain.clone();
        for (from, to, n) in [(0x1000u64, 0x1100u64, 3u32), (0x1200, 0x1100, u32::MAX)] {
            want.push(1);
            want.extend_from_slice(&from.to_le_bytes());
            want.extend_from_slice(&to.to_le_bytes());
            want.extend_from_slice(&n.to_le_bytes());
        }
        assert_eq!(got, want);
    }
}
