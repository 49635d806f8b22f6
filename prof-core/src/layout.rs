//! The bin arithmetic of `profile(pid, start, end, interval)`: the Minix rules, made exact.
//!
//! * The profiled range is `[start, end)` in link-time addresses; its size is `end - start`.
//! * `end == 0` means "to the end of the text segment"; `start == 0` means "from the start of
//!   the text segment" (Minix text segments begin at address 0, so the spec's default start of
//!   0 is the beginning of the text); so `start == end == 0` is the whole text segment.
//! * EFAULT when `start > end` (end given), when the range is empty or leaves the text segment,
//!   or when the interval is non-zero but smaller than the minimum bin size.
//! * Minimum bin size = ceil(size / 1024).  Interval 0 means that minimum; otherwise the bin
//!   size is the interval.  nr_bins = ceil(size / bin_sz); the last bin may be partial.

use crate::error::ProfError;
use crate::image::TextSegment;

/// The fixed number of bin counters (the kernel's table size in Minix).
pub const MAX_BINS: usize = 1024;

/// A validated range split into bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinLayout {
    /// First profiled address (link-time).
    pub start: u64,
    /// One past the last profiled address (link-time).
    pub end: u64,
    /// Bytes per bin.
    pub bin_sz: u64,
    /// Bins in use (at most [`MAX_BINS`]).
    pub nr_bins: usize,
}

impl BinLayout {
    /// Apply the rules of `profile()` to a request against the program's text segment.
    pub fn new(text: TextSegment, start: u64, end: u64, interval: u64) -> Result<BinLayout, ProfError> {
        if end != 0 && start > end {
            return Err(ProfError::AddressRange);
        }
        let start = if start == 0 { text.start } else { start };
        let end = if end == 0 { text.end } else { end };
        if start >= end || start < text.start || end > text.end {
            return Err(ProfError::AddressRange);
        }
        let size = end - start;
        let min = min_bin_size(size);
        let bin_sz = match interval {
            0 => min,
            i if i < min => return Err(ProfError::AddressRange),
            i => i,
        };
        let nr_bins = size.div_ceil(bin_sz) as usize;
        debug_assert!(nr_bins <= MAX_BINS);
        Ok(BinLayout { start, end, bin_sz, nr_bins })
    }

    /// Bytes in the profiled range.
    pub fn size(&self) -> u64 {
        self.end - self.start
    }

    /// The smallest bin size that covers this range with [`MAX_BINS`] bins.
    pub fn min_bin_size(&self) -> u64 {
        min_bin_size(self.size())
    }

    /// Bytes covered by the last bin (equal to `bin_sz` unless the last bin is partial).
    pub fn last_bin_bytes(&self) -> u64 {
        self.size() - (self.nr_bins as u64 - 1) * self.bin_sz
    }

    /// The bin counting link-time address `addr`, if it is inside the range.
    pub fn bin_of(&self, addr: u64) -> Option<usize> {
        if (self.start..self.end).contains(&addr) {
            Some(((addr - self.start) / self.bin_sz) as usize)
        } else {
            None
        }
    }

    /// The addresses bin `i` covers, as an inclusive range `lo..=hi` (clipped to `end`).
    pub fn bin_bounds(&self, i: usize) -> (u64, u64) {
        let lo = self.start + i as u64 * self.bin_sz;
        let hi = lo.saturating_add(self.bin_sz).min(self.end) - 1;
        (lo, hi)
    }
}

/// ceil(size / 1024), the minimum bytes per bin.
pub fn min_bin_size(size: u64) -> u64 {
    size.div_ceil(MAX_BINS as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHOLE: TextSegment = TextSegment { start: 0, end: 0x10_0000 };

    fn layout(start: u64, end: u64, interval: u64) -> Result<BinLayout, ProfError> {
        BinLayout::new(WHOLE, start, end, interval)
    }

    #[test]
    fn spec_example_40008_bytes() {
        let l = layout(0x1000, 0x1000 + 40008, 0).unwrap();
        assert_eq!(l.min_bin_size(), 40);
        assert_eq!(l.bin_sz, 40);
        assert_eq!(l.nr_bins, 1001);
        assert_eq!(l.last_bin_bytes(), 8);
    }

    #[test]
    fn spec_example_1025_bytes() {
        let l = layout(0x1000, 0x1000 + 1025, 0).unwrap();
        assert_eq!(l.bin_sz, 2);
        assert_eq!(l.nr_bins, 513);
        assert_eq!(l.last_bin_bytes(), 1);
    }

    #[test]
    fn spec_example_0_to_400_interval_64() {
        let text = TextSegment { start: 0, end: 1000 };
        let l = BinLayout::new(text, 0, 400, 64).unwrap();
        assert_eq!(l.nr_bins, 7);
        assert_eq!(l.bin_bounds(0), (0, 63));
        assert_eq!(l.bin_bounds(6), (384, 399));
        assert_eq!(l.last_bin_bytes(), 16);
        assert_eq!(l.bin_of(399), Some(6));
        assert_eq!(l.bin_of(400), None);
    }

    #[test]
    fn spec_sample_run_arithmetic_computed_not_copied() {
        // profil -s 0x50 -e 0x300 -i 128: the spec prints "last 80 bytes"; 688 - 5*128 = 48.
        let l = layout(0x50, 0x300, 128).unwrap();
        assert_eq!((l.size(), l.nr_bins, l.last_bin_bytes()), (688, 6, 48));
        // -i 0x49: the spec prints "last 42 bytes"; 688 - 9*73 = 31.
        let l = layout(0x50, 0x300, 0x49).unwrap();
        assert_eq!((l.nr_bins, l.last_bin_bytes()), (10, 31));
    }

    #[test]
    fn exact_multiple_has_a_full_last_bin() {
        let l = layout(0x100, 0x200, 0x40).unwrap();
        assert_eq!((l.nr_bins, l.last_bin_bytes()), (4, 0x40));
    }

    #[test]
    fn start_greater_than_end_is_efault() {
        assert_eq!(layout(0x300, 0x20, 0), Err(ProfError::AddressRange));
    }

    #[test]
    fn empty_range_is_efault() {
        assert_eq!(layout(0x300, 0x300, 0), Err(ProfError::AddressRange));
    }

    #[test]
    fn end_zero_means_end_of_text() {
        let text = TextSegment { start: 0x1000, end: 0x5000 };
        let l = BinLayout::new(text, 0x2000, 0, 0).unwrap();
        assert_eq!((l.start, l.end), (0x2000, 0x5000));
    }

    #[test]
    fn start_and_end_zero_mean_whole_text() {
        let text = TextSegment { start: 0x1040, end: 0x5000 };
        let l = BinLayout::new(text, 0, 0, 0).unwrap();
        assert_eq!((l.start, l.end, l.bin_sz, l.nr_bins), (0x1040, 0x5000, 16, 1020));
    }

    #[test]
    fn start_zero_means_start_of_text() {
        let text = TextSegment { start: 0x1040, end: 0x9000 };
        let l = BinLayout::new(text, 0, 0x8000, 256).unwrap();
        assert_eq!((l.start, l.end, l.nr_bins), (0x1040, 0x8000, 112));
    }

    #[test]
    fn range_outside_text_is_efault() {
        let text = TextSegment { start: 0x1000, end: 0x5000 };
        assert_eq!(BinLayout::new(text, 0x800, 0x2000, 0), Err(ProfError::AddressRange));
        assert_eq!(BinLayout::new(text, 0x2000, 0x5001, 0), Err(ProfError::AddressRange));
        assert_eq!(BinLayout::new(text, 0x6000, 0, 0), Err(ProfError::AddressRange));
        assert!(BinLayout::new(text, 0x1000, 0x5000, 0).is_ok());
    }

    #[test]
    fn interval_below_minimum_is_efault() {
        // 4096 bytes need 4-byte bins; 3 would need 1366 bins.
        assert_eq!(layout(0x1000, 0x2000, 3), Err(ProfError::AddressRange));
        let l = layout(0x1000, 0x2000, 4).unwrap();
        assert_eq!(l.nr_bins, 1024);
    }

    #[test]
    fn interval_larger_than_range_gives_one_bin() {
        let l = layout(0x1000, 0x1100, 0x10000).unwrap();
        assert_eq!((l.bin_sz, l.nr_bins, l.last_bin_bytes()), (0x10000, 1, 0x100));
        assert_eq!(l.bin_bounds(0), (0x1000, 0x10ff));
    }

    #[test]
    fn bin_bounds_do_not_overflow() {
        // `-i 0xffffffffffffffff` is a valid interval (one bin); its bin ends at `end`.
        let l = layout(0x1000, 0x1100, u64::MAX).unwrap();
        assert_eq!(l.bin_bounds(0), (0x1000, 0x10ff));
        // A range ending at the top of the address space, partial last bin (4097 bytes, 5-byte bins).
        let top = TextSegment { start: u64::MAX - 0x1001, end: u64::MAX };
        let l = BinLayout::new(top, 0, 0, 0).unwrap();
        assert_eq!((l.bin_sz, l.nr_bins), (5, 820));
        assert_eq!(l.bin_bounds(l.nr_bins - 1), (u64::MAX - 2, u64::MAX - 1));
    }

    #[test]
    fn nr_bins_never_exceeds_1024() {
        for size in [1u64, 2, 1023, 1024, 1025, 2047, 2048, 2049, 40008, 1 << 20, (1 << 20) - 1] {
            let l = layout(0, size, 0).unwrap();
            assert!(l.nr_bins <= MAX_BINS, "size {size}");
            assert!(l.nr_bins as u64 * l.bin_sz >= size, "size {size} not covered");
            assert!((l.nr_bins as u64 - 1) * l.bin_sz < size, "size {size}: empty last bin");
        }
    }
}
