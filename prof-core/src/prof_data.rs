//! `struct prof_data`, what `getprofile()` returns, and its binary form
//! (`/scheme/prof/data`).
//!
//! Binary layout, little endian, 8224 bytes, no padding:
//!
//! | offset | type        | field                                   |
//! |--------|-------------|-----------------------------------------|
//! | 0      | u64         | `start_addr` (link-time, inclusive)     |
//! | 8      | u64         | `end_addr` (link-time, exclusive)       |
//! | 16     | u64         | `nr_bins` (0 ..= 1024)                  |
//! | 24     | u64         | `bin_sz` (bytes)                        |
//! | 32     | u64 × 1024  | `bin[i]`: ticks in bin i; unused bins 0 |
//!
//! The spec's fields are `int` and `unsigned long`; we widen them all to 64 bits so 64-bit
//! addresses fit.

use crate::layout::{BinLayout, MAX_BINS};

/// Size in bytes of the encoded [`ProfData`].
pub const PROF_DATA_SIZE: usize = 32 + 8 * MAX_BINS;

/// The profile of the last (or current) session.
#[derive(Clone, PartialEq, Eq)]
pub struct ProfData {
    pub start_addr: u64,
    pub end_addr: u64,
    pub nr_bins: u64,
    pub bin_sz: u64,
    pub bin: [u64; MAX_BINS],
}

impl std::fmt::Debug for ProfData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfData")
            .field("start_addr", &format_args!("{:#x}", self.start_addr))
            .field("end_addr", &format_args!("{:#x}", self.end_addr))
            .field("nr_bins", &self.nr_bins)
            .field("bin_sz", &self.bin_sz)
            .field("bin", &&self.bin[..(self.nr_bins as usize).min(MAX_BINS)])
            .finish()
    }
}

/// Saved as its header and its used bins (`nr_bins` of them); read back with the same checks
/// as [`ProfData::from_bytes`].
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedProfData {
    start_addr: u64,
    end_addr: u64,
    nr_bins: u64,
    bin_sz: u64,
    bins: Vec<u64>,
}

impl serde::Serialize for ProfData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let used = (self.nr_bins as usize).min(MAX_BINS);
        SavedProfData {
            start_addr: self.start_addr,
            end_addr: self.end_addr,
            nr_bins: self.nr_bins,
            bin_sz: self.bin_sz,
            bins: self.bin[..used].to_vec(),
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for ProfData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ProfData, D::Error> {
        let saved = SavedProfData::deserialize(d)?;
        if saved.bins.len() as u64 != saved.nr_bins || saved.bins.len() > MAX_BINS {
            return Err(serde::de::Error::custom("the bins do not match nr_bins"));
        }
        let mut bytes = Vec::with_capacity(PROF_DATA_SIZE);
        for v in [saved.start_addr, saved.end_addr, saved.nr_bins, saved.bin_sz] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        for i in 0..MAX_BINS {
            bytes.extend_from_slice(&saved.bins.get(i).copied().unwrap_or(0).to_le_bytes());
        }
        ProfData::from_bytes(&bytes).map_err(|e| serde::de::Error::custom(format!("inconsistent bins: {e:?}")))
    }
}

impl Default for ProfData {
    fn default() -> Self {
        ProfData { start_addr: 0, end_addr: 0, nr_bins: 0, bin_sz: 0, bin: [0; MAX_BINS] }
    }
}

/// Why bytes are not a `prof_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Not exactly [`PROF_DATA_SIZE`] bytes.
    Length(usize),
    /// Header fields that no valid session produces.
    Inconsistent,
}

impl ProfData {
    /// Empty bins laid out as `layout` says.
    pub fn new(layout: &BinLayout) -> ProfData {
        ProfData {
            start_addr: layout.start,
            end_addr: layout.end,
            nr_bins: layout.nr_bins as u64,
            bin_sz: layout.bin_sz,
            bin: [0; MAX_BINS],
        }
    }

    /// The layout these bins were made with (`None` for an empty, never-started profile).
    pub fn layout(&self) -> Option<BinLayout> {
        (self.nr_bins > 0).then_some(BinLayout {
            start: self.start_addr,
            end: self.end_addr,
            bin_sz: self.bin_sz,
            nr_bins: self.nr_bins as usize,
        })
    }

    /// Sum of all bins.
    pub fn total(&self) -> u64 {
        self.bin.iter().sum()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PROF_DATA_SIZE);
        for v in [self.start_addr, self.end_addr, self.nr_bins, self.bin_sz].iter().chain(self.bin.iter()) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Parse the binary form, checking that the header describes a possible layout.
    pub fn from_bytes(bytes: &[u8]) -> Result<ProfData, DecodeError> {
        if bytes.len() != PROF_DATA_SIZE {
            return Err(DecodeError::Length(bytes.len()));
        }
        let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        let mut d = ProfData {
            start_addr: word(0),
            end_addr: word(1),
            nr_bins: word(2),
            bin_sz: word(3),
            bin: [0; MAX_BINS],
        };
        for (i, b) in d.bin.iter_mut().enumerate() {
            *b = word(4 + i);
        }
        let consistent = if d.nr_bins == 0 {
            d.bin.iter().all(|&b| b == 0)
        } else {
            let size = d.end_addr.saturating_sub(d.start_addr);
            d.nr_bins as usize <= MAX_BINS
                && size > 0
                && d.bin_sz > 0
                && size.div_ceil(d.bin_sz) == d.nr_bins
                && d.bin[d.nr_bins as usize..].iter().all(|&b| b == 0)
        };
        // No session counts more than u64::MAX ticks in all: `total()` must not overflow.
        let consistent = consistent && d.bin.iter().try_fold(0u64, |sum, &b| sum.checked_add(b)).is_some();
        if consistent {
            Ok(d)
        } else {
            Err(DecodeError::Inconsistent)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::TextSegment;

    fn sample() -> ProfData {
        let layout = BinLayout::new(TextSegment { start: 0, end: 0x1000 }, 0x50, 0x300, 128).unwrap();
        let mut d = ProfData::new(&layout);
        d.bin[0] = 83;
        d.bin[3] = 205;
        d
    }

    #[test]
    fn layout_is_8224_bytes_little_endian() {
        let bytes = sample().to_bytes();
        assert_eq!(bytes.len(), 8224);
        assert_eq!(&bytes[0..8], &0x50u64.to_le_bytes());
        assert_eq!(&bytes[8..16], &0x300u64.to_le_bytes());
        assert_eq!(&bytes[16..24], &6u64.to_le_bytes());
        assert_eq!(&bytes[24..32], &128u64.to_le_bytes());
        assert_eq!(&bytes[32..40], &83u64.to_le_bytes());
        assert_eq!(&bytes[56..64], &205u64.to_le_bytes());
    }

    #[test]
    fn round_trip() {
        let d = sample();
        assert_eq!(ProfData::from_bytes(&d.to_bytes()), Ok(d.clone()));
        assert_eq!(d.total(), 288);
        assert_eq!(ProfData::from_bytes(&ProfData::default().to_bytes()), Ok(ProfData::default()));
    }

    #[test]
    fn rejects_wrong_length_and_nonsense() {
        let bytes = sample().to_bytes();
        assert_eq!(ProfData::from_bytes(&bytes[..100]), Err(DecodeError::Length(100)));
        let mut bad = bytes.clone();
        bad[16] = 7; // nr_bins 7 does not match ceil(688/128) = 6
        assert_eq!(ProfData::from_bytes(&bad), Err(DecodeError::Inconsistent));
        let mut bad = bytes.clone();
        bad[32 + 8 * 10] = 1; // a count in an unused bin
        assert_eq!(ProfData::from_bytes(&bad), Err(DecodeError::Inconsistent));
        let mut bad = bytes;
        bad[24..32].copy_from_slice(&0u64.to_le_bytes()); // bin_sz 0
        assert_eq!(ProfData::from_bytes(&bad), Err(DecodeError::Inconsistent));
    }

    #[test]
    fn rejects_bins_whose_total_overflows() {
        // Found by fuzzing: profil's report took `total()` of such bins, which overflowed.
        let mut d = sample();
        d.bin[0] = u64::MAX;
        assert_eq!(ProfData::from_bytes(&d.to_bytes()), Err(DecodeError::Inconsistent));
        d.bin[3] = 0;
        assert_eq!(ProfData::from_bytes(&d.to_bytes()).map(|d| d.total()), Ok(u64::MAX));
    }
}
