//! What the rules need to know about the profiled program: its text segment and its
//! executable load segments, all in link-time virtual addresses.
//!
//! Position-independent executables are placed by the loader at a runtime load base; every
//! address profd stores for the user is link-time (`runtime - load_base`), so bins and
//! symbols line up with `nm` whatever the load base was.

/// The text segment, as link-time addresses `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextSegment {
    pub start: u64,
    pub end: u64,
}

impl TextSegment {
    pub fn size(&self) -> u64 {
        self.end - self.start
    }

    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }
}

/// One executable `PT_LOAD` segment: where it sits in the file and in link-time memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
}

/// The executable image being profiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageLayout {
    pub text: TextSegment,
    /// The executable `PT_LOAD` segments, used to turn a runtime mapping into a load base.
    pub exec_segments: Vec<LoadSegment>,
}

/// Page size used by the ELF loaders of both systems.
pub const PAGE_SIZE: u64 = 4096;

/// End of the x86_64 lower-half user address space.
pub const USER_SPACE_END: u64 = 0x0000_8000_0000_0000;

impl ImageLayout {
    /// A program whose file layout is unknown (a `prof:` client that gave no text bounds):
    /// addresses are runtime addresses, the "text" is the whole user address space.
    pub fn unknown() -> ImageLayout {
        ImageLayout { text: TextSegment { start: 0, end: USER_SPACE_END }, exec_segments: Vec::new() }
    }

    /// A program known only by its text bounds: one executable segment covering them.
    pub fn from_text(text: TextSegment) -> ImageLayout {
        ImageLayout { text, exec_segments: vec![LoadSegment { vaddr: text.start, memsz: text.size(), offset: text.start % PAGE_SIZE }] }
    }

    /// True for [`ImageLayout::unknown`]: binning uses runtime addresses (load base 0).
    pub fn is_unknown(&self) -> bool {
        self.exec_segments.is_empty()
    }

    /// The load base implied by a runtime mapping of this image at `addr` whose file offset is
    /// `pgoff` (both page aligned, as mmap records them).  `None` if no executable segment of the
    /// image starts in that file page, i.e. the mapping is not one of ours.
    pub fn load_base_for_mapping(&self, addr: u64, pgoff: u64) -> Option<u64> {
        load_base(&self.exec_segments, addr, pgoff)
    }
}

/// The load base (where link-time address 0 is at run time) implied by a mapping at `addr` of
/// file offset `pgoff` of an object with these executable segments: mmap rounds a segment's
/// file offset and address down to the page. `None` if no segment starts in that file page.
pub fn load_base(exec_segments: &[LoadSegment], addr: u64, pgoff: u64) -> Option<u64> {
    exec_segments.iter().find(|s| page_down(s.offset) == pgoff).and_then(|s| addr.checked_sub(page_down(s.vaddr)))
}

fn page_down(x: u64) -> u64 {
    x & !(PAGE_SIZE - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pie() -> ImageLayout {
        // The text PT_LOAD of a typical PIE built by GNU ld: vaddr 0x1000, offset 0x1000.
        ImageLayout {
            text: TextSegment { start: 0x1000, end: 0x3f000 },
            exec_segments: vec![LoadSegment { vaddr: 0x1000, memsz: 0x3e000, offset: 0x1000 }],
        }
    }

    #[test]
    fn pie_load_base_is_mapping_minus_segment_page() {
        assert_eq!(pie().load_base_for_mapping(0x5555_5555_5000, 0x1000), Some(0x5555_5555_4000));
    }

    #[test]
    fn non_pie_load_base_is_zero() {
        let img = ImageLayout {
            text: TextSegment { start: 0x401000, end: 0x480000 },
            exec_segments: vec![LoadSegment { vaddr: 0x401000, memsz: 0x7f000, offset: 0x1000 }],
        };
        assert_eq!(img.load_base_for_mapping(0x401000, 0x1000), Some(0));
    }

    #[test]
    fn unaligned_segment_start_rounds_to_pages() {
        // lld often starts text mid-page: vaddr 0x12a40, offset 0x11a40.
        let img = ImageLayout {
            text: TextSegment { start: 0x12a40, end: 0x50000 },
            exec_segments: vec![LoadSegment { vaddr: 0x12a40, memsz: 0x3d5c0, offset: 0x11a40 }],
        };
        assert_eq!(img.load_base_for_mapping(0x7f00_0001_2000, 0x11000), Some(0x7f00_0000_0000));
    }

    #[test]
    fn other_files_pages_are_not_ours() {
        assert_eq!(pie().load_base_for_mapping(0x7f00_0000_0000, 0x28000), None);
    }

    #[test]
    fn text_segment_bounds_are_half_open() {
        let t = TextSegment { start: 0x10, end: 0x20 };
        assert!(t.contains(0x10) && t.contains(0x1f) && !t.contains(0x20));
        assert_eq!(t.size(), 0x10);
    }
}
