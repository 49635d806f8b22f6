//! The stack tables: distinct call stacks and their counts, kept by the samplers without locks
//! or allocation, sized for the session at `start`.

use alloc::{boxed::Box, vec::Vec};
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use super::{CtlError, StackBuf, StackRef, MAX_STACK_DEPTH};

/// Distinct call stacks a session's stack table holds when `start` names no `stacks=`.
pub const DEFAULT_STACKS: usize = 8192;

/// Most distinct call stacks a session may ask for (`stacks=`): 64 s of samples at 4 kHz even
/// if every one is a stack of its own, as a deep recursion's are; about 25 MiB of kernel heap
/// ([`StackStore`]).
pub const MAX_STACKS: usize = 1 << 18;

/// Bytes of packed stacks a stack table keeps per stack it is sized for. A stack packs into
/// 2–3 bytes a frame, a recursion's repeated return addresses into one ([`PackedStack`]): fib's
/// 32-frame stacks take 45.
pub const STACK_BYTES: usize = 64;

/// Distinct stacks of the server table: each server sample is its daemon's pid and stack (or
/// PC).
pub const SERVER_STACK_CAPACITY: usize = 1024;

/// How long a sampler waits for another CPU to finish writing the stack it claimed (that CPU
/// is inside its own timer interrupt, so it is a few stores away).
const STACK_READY_SPINS: u32 = 10_000;

/// Bytes of a packed stack at most: the owner, the flag, then a varint per frame.
const MAX_PACKED: usize = 10 + 1 + 10 * MAX_STACK_DEPTH;

/// A call stack packed as a stack table keeps it: the owner (LEB128), the truncated flag (one
/// byte), the first frame (LEB128), then each further frame as the zigzag LEB128 of its
/// difference from the frame before. Return addresses in one program are near each other, so
/// a frame takes 2–3 bytes, and a recursion's repeated return address one. Built on the
/// sampler's stack (in interrupt context: no allocation).
pub struct PackedStack {
    bytes: [u8; MAX_PACKED],
    len: usize,
}

impl PackedStack {
    pub fn new(owner: u64, stack: &StackBuf) -> PackedStack {
        let mut packed = PackedStack {
            bytes: [0; MAX_PACKED],
            len: 0,
        };
        packed.push_varint(owner);
        packed.push_byte(u8::from(stack.truncated));
        let mut previous = 0u64;
        for (i, &frame) in stack.frames().iter().enumerate() {
            if i == 0 {
                packed.push_varint(frame);
            } else {
                let delta = frame.wrapping_sub(previous) as i64;
                packed.push_varint(((delta << 1) ^ (delta >> 63)) as u64);
            }
            previous = frame;
        }
        packed
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn push_byte(&mut self, byte: u8) {
        if let Some(to) = self.bytes.get_mut(self.len) {
            *to = byte;
            self.len += 1;
        }
    }

    fn push_varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.push_byte(value as u8 | 0x80);
            value >>= 7;
        }
        self.push_byte(value as u8);
    }

    /// 64-bit FNV-1a of the bytes, never 0 (0 marks an empty slot).
    fn hash(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &byte in self.as_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        hash | 1
    }

    /// Unpack `bytes` (a packed stack, as [`PackedStack::as_bytes`]): its owner, its
    /// truncated flag, its frames pushed onto `frames`, innermost first. `None`,
    /// with nothing pushed, if they would not fit in `frames`' capacity: never allocates
    /// (control path, a snapshot's one frames array).
    pub fn unpack_into(
        bytes: impl Iterator<Item = u8> + Clone,
        frames: &mut Vec<u64>,
    ) -> Option<(u64, bool)> {
        let mut bytes = bytes;
        let owner = read_varint(&mut bytes).unwrap_or(0);
        let truncated = bytes.next() == Some(1);
        // One frame per byte without the continuation bit.
        let depth = bytes.clone().filter(|byte| byte & 0x80 == 0).count();
        if depth > frames.capacity().saturating_sub(frames.len()) {
            return None;
        }
        let mut previous = 0u64;
        for i in 0..depth {
            let Some(value) = read_varint(&mut bytes) else {
                break;
            };
            let frame = if i == 0 {
                value
            } else {
                let delta = ((value >> 1) as i64) ^ -((value & 1) as i64);
                previous.wrapping_add(delta as u64)
            };
            frames.push(frame);
            previous = frame;
        }
        Some((owner, truncated))
    }

    /// Frames of a packed stack (`bytes` as [`PackedStack::as_bytes`]).
    fn depth_of(bytes: impl Iterator<Item = u8>) -> usize {
        let mut bytes = bytes;
        let _owner = read_varint(&mut bytes);
        let _truncated = bytes.next();
        bytes.filter(|byte| byte & 0x80 == 0).count()
    }
}

/// The next LEB128 value of `bytes` (`None` at the end).
fn read_varint(bytes: &mut impl Iterator<Item = u8>) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = bytes.next()?;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
}

/// One slot of a stack table: `key` the packed stack's hash (0: empty), `loc` where its bytes
/// are in the arena once written (offset << 16 | length; 0: not yet; [`LOC_NONE`]: the arena
/// was full, the slot holds no stack), `count` its samples (the clock's wait sites: blocks),
/// `weight` the nanoseconds a wait site's blocks lasted (0 in the sample tables).
pub struct StackSlot {
    key: AtomicU64,
    loc: AtomicU64,
    pub(super) count: AtomicU64,
    pub(super) weight: AtomicU64,
}

/// A claimed slot that holds no stack (the arena was full).
const LOC_NONE: u64 = u64::MAX;

impl StackSlot {
    const fn empty() -> StackSlot {
        StackSlot {
            key: AtomicU64::new(0),
            loc: AtomicU64::new(0),
            count: AtomicU64::new(0),
            weight: AtomicU64::new(0),
        }
    }
}

/// The memory of a stack table, allocated by `start` (control path, fallibly) and owned by
/// the [`StackStore`] while its session may sample.
pub struct StackTables {
    slots: Box<[StackSlot]>,
    arena: Box<[AtomicU8]>,
    stacks: usize,
}

impl StackTables {
    /// Tables for `stacks` distinct stacks: `stacks + stacks / 4` slots (a hash table never
    /// more than 80 % full) and [`STACK_BYTES`] of arena a stack. Out of memory: `NoMemory`.
    pub(super) fn try_new(stacks: usize) -> Result<StackTables, CtlError> {
        let mut slots = Vec::new();
        let slot_count = stacks + stacks / 4;
        slots
            .try_reserve_exact(slot_count)
            .map_err(|_| CtlError::NoMemory)?;
        slots.resize_with(slot_count, StackSlot::empty);
        let mut arena = Vec::new();
        let arena_len = stacks.saturating_mul(STACK_BYTES);
        arena
            .try_reserve_exact(arena_len)
            .map_err(|_| CtlError::NoMemory)?;
        arena.resize_with(arena_len, || AtomicU8::new(0));
        Ok(StackTables {
            slots: slots.into_boxed_slice(),
            arena: arena.into_boxed_slice(),
            stacks,
        })
    }

    /// Bytes [`StackTables::try_new`] allocates for `stacks`.
    pub(super) fn bytes_for(stacks: usize) -> usize {
        (stacks + stacks / 4)
            .saturating_mul(size_of::<StackSlot>())
            .saturating_add(stacks.saturating_mul(STACK_BYTES))
    }

    pub(super) fn none() -> StackTables {
        StackTables {
            slots: Box::new([]),
            arena: Box::new([]),
            stacks: 0,
        }
    }
}

/// A table of distinct call stacks and their counts, lock-free for the samplers: slots in
/// open addressing keyed by the hash of the packed stack, its bytes in an arena filled from the
/// front. At most `stacks` distinct stacks (the session's `stacks=`), as long as the arena
/// holds them; a stack that finds no room is dropped, and counted so by the caller.
pub struct StackStore {
    slots: AtomicPtr<StackSlot>,
    slot_count: AtomicUsize,
    arena: AtomicPtr<AtomicU8>,
    arena_len: AtomicUsize,
    /// Arena bytes handed out (may pass `arena_len`: the overflowing claim got nothing).
    arena_used: AtomicUsize,
    /// Most distinct stacks, and how many slots hold one (or are being filled).
    stacks: AtomicUsize,
    stored: AtomicUsize,
}

impl StackStore {
    pub(super) const fn new() -> StackStore {
        StackStore {
            slots: AtomicPtr::new(core::ptr::null_mut()),
            slot_count: AtomicUsize::new(0),
            arena: AtomicPtr::new(core::ptr::null_mut()),
            arena_len: AtomicUsize::new(0),
            arena_used: AtomicUsize::new(0),
            stacks: AtomicUsize::new(0),
            stored: AtomicUsize::new(0),
        }
    }

    /// The most distinct stacks it holds.
    pub(super) fn capacity(&self) -> usize {
        self.stacks.load(Ordering::Acquire)
    }

    /// Put `new` in place and hand back the tables it had.
    ///
    /// # Safety
    /// No sampler is in the store (the session is off and quiesced) and no reader holds it
    /// (the caller has the control lock).
    pub(super) unsafe fn replace(&self, new: StackTables) -> StackTables {
        let slot_count = new.slots.len();
        let arena_len = new.arena.len();
        let slots = Box::into_raw(new.slots).cast::<StackSlot>();
        let arena = Box::into_raw(new.arena).cast::<AtomicU8>();
        let old_slots = self.slots.swap(slots, Ordering::AcqRel);
        let old_slot_count = self.slot_count.swap(slot_count, Ordering::AcqRel);
        let old_arena = self.arena.swap(arena, Ordering::AcqRel);
        let old_arena_len = self.arena_len.swap(arena_len, Ordering::AcqRel);
        let old_stacks = self.stacks.swap(new.stacks, Ordering::AcqRel);
        self.arena_used.store(0, Ordering::Relaxed);
        self.stored.store(0, Ordering::Relaxed);
        if old_slots.is_null() {
            return StackTables::none();
        }
        // SAFETY: these came from `Box::into_raw` of slices of these lengths (above, by the
        // previous `replace`), and by the caller nobody uses them any more.
        unsafe {
            StackTables {
                slots: Box::from_raw(core::ptr::slice_from_raw_parts_mut(
                    old_slots,
                    old_slot_count,
                )),
                arena: Box::from_raw(core::ptr::slice_from_raw_parts_mut(
                    old_arena,
                    old_arena_len,
                )),
                stacks: old_stacks,
            }
        }
    }

    /// The slots and the arena.
    ///
    /// # Safety
    /// The tables are not replaced meanwhile: the caller is a sampler in flight with the
    /// session on (see `quiesce`), or holds the control lock.
    unsafe fn tables(&self) -> (&[StackSlot], &[AtomicU8]) {
        let slots = self.slots.load(Ordering::Acquire);
        let arena = self.arena.load(Ordering::Acquire);
        if slots.is_null() || arena.is_null() {
            return (&[], &[]);
        }
        // SAFETY: by the caller, they hold these lengths (set with the pointers by `replace`).
        unsafe {
            (
                core::slice::from_raw_parts(slots, self.slot_count.load(Ordering::Acquire)),
                core::slice::from_raw_parts(arena, self.arena_len.load(Ordering::Acquire)),
            )
        }
    }

    /// The slot of `packed`: found, or claimed and written. `None` if the table or the arena
    /// is full, or another CPU is still writing the same stack's slot. Interrupt context:
    /// lock-free and allocation-free; a claimer writes the bytes, then publishes them with
    /// `loc` (Release); a CPU finding the same key waits for `loc` (the claimer is inside its
    /// own interrupt, a few stores away; bounded spin) and takes the slot only if the bytes
    /// match (another stack with that hash probes on).
    ///
    /// # Safety
    /// As for [`StackStore::tables`].
    pub(super) unsafe fn slot_of(&self, packed: &PackedStack) -> Option<&StackSlot> {
        // SAFETY: by the caller.
        unsafe {
            let index = self.index_of(packed)?;
            self.slot_at(index)
        }
    }

    /// The slot at `index` (as [`StackStore::index_of`] gave it), if the tables have one.
    ///
    /// # Safety
    /// As for [`StackStore::tables`].
    pub(super) unsafe fn slot_at(&self, index: usize) -> Option<&StackSlot> {
        // SAFETY: by the caller.
        unsafe { self.tables() }.0.get(index)
    }

    /// The index of [`StackStore::slot_of`]'s slot: a stack found, or claimed and written.
    ///
    /// # Safety
    /// As for [`StackStore::tables`].
    pub(super) unsafe fn index_of(&self, packed: &PackedStack) -> Option<usize> {
        // SAFETY: by the caller.
        let (slots, arena) = unsafe { self.tables() };
        if slots.is_empty() {
            return None;
        }
        let bytes = packed.as_bytes();
        let key = packed.hash();
        let mut index = probe_start(key, slots.len());
        for _ in 0..slots.len() {
            let slot = slots.get(index)?;
            let mut found = slot.key.load(Ordering::Acquire);
            if found == 0 {
                // A new stack: only while the table has room for one more.
                if self.stored.fetch_add(1, Ordering::AcqRel) >= self.capacity() {
                    self.stored.fetch_sub(1, Ordering::AcqRel);
                    return None;
                }
                match slot
                    .key
                    .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => {
                        let at = self.arena_used.fetch_add(bytes.len(), Ordering::Relaxed);
                        let Some(to) = at
                            .checked_add(bytes.len())
                            .and_then(|end| arena.get(at..end))
                        else {
                            slot.loc.store(LOC_NONE, Ordering::Release);
                            return None;
                        };
                        for (to, &byte) in to.iter().zip(bytes) {
                            to.store(byte, Ordering::Relaxed);
                        }
                        slot.loc
                            .store(((at as u64) << 16) | bytes.len() as u64, Ordering::Release);
                        return Some(index);
                    }
                    Err(actual) => {
                        self.stored.fetch_sub(1, Ordering::AcqRel);
                        found = actual;
                    }
                }
            }
            if found == key {
                let mut loc = slot.loc.load(Ordering::Acquire);
                let mut spins = 0;
                while loc == 0 && spins < STACK_READY_SPINS {
                    core::hint::spin_loop();
                    spins += 1;
                    loc = slot.loc.load(Ordering::Acquire);
                }
                if loc == 0 {
                    return None;
                }
                if loc != LOC_NONE && stored_bytes(arena, loc).eq(bytes.iter().copied()) {
                    return Some(index);
                }
            }
            index += 1;
            if index == slots.len() {
                index = 0;
            }
        }
        None
    }
}

/// The bytes a published `loc` names in `arena` (none if it names bytes outside it).
fn stored_bytes(arena: &[AtomicU8], loc: u64) -> impl Iterator<Item = u8> + Clone + '_ {
    let at = (loc >> 16) as usize;
    let len = (loc & 0xffff) as usize;
    arena
        .get(at..at.saturating_add(len))
        .unwrap_or(&[])
        .iter()
        .map(|byte| byte.load(Ordering::Relaxed))
}

/// The published slot's `loc` (none if the slot holds no stack yet).
fn published(slot: &StackSlot) -> Option<u64> {
    let loc = slot.loc.load(Ordering::Acquire);
    (loc != 0 && loc != LOC_NONE).then_some(loc)
}

/// How many stacks a stack table holds, and how many frames they have together: what
/// [`read_stack_table`] needs room for.
///
/// # Safety
/// The tables are not replaced meanwhile (the caller holds the control lock).
pub(super) unsafe fn stack_table_size(store: &StackStore) -> (usize, usize) {
    // SAFETY: by the caller.
    let (slots, arena) = unsafe { store.tables() };
    slots
        .iter()
        .filter_map(published)
        .fold((0, 0), |(stacks, frames), loc| {
            let depth = PackedStack::depth_of(stored_bytes(arena, loc));
            (stacks + 1, frames + depth)
        })
}

/// Append the stacks of a stack table to `stacks` (at most `limit` of them) and their frames to
/// `frames`, in table order, within the capacity the caller reserved: no allocation, however
/// many stacks (one allocation a stack made a read of 230,000 stacks, and its drop, take
/// minutes in the kernel's list allocator).
///
/// # Safety
/// The tables are not replaced meanwhile (the caller holds the control lock).
pub(super) unsafe fn read_stack_table(
    store: &StackStore,
    limit: usize,
    stacks: &mut Vec<StackRef>,
    frames: &mut Vec<u64>,
) {
    let room = stacks.capacity().saturating_sub(stacks.len()).min(limit);
    // SAFETY: by the caller.
    unsafe {
        visit_stack_table(store, room, frames, |_, slot, stack| {
            stacks.push(StackRef {
                count: slot.count.load(Ordering::Relaxed),
                ..stack
            })
        })
    };
}

/// Unpack at most `limit` published stacks of a stack table onto `frames` (within its
/// capacity: no allocation), in table order, showing `visit` each one's slot index, slot and
/// [`StackRef`] (its count left 0 for the visitor to read).
///
/// # Safety
/// The tables are not replaced meanwhile (the caller holds the control lock).
pub(super) unsafe fn visit_stack_table(
    store: &StackStore,
    limit: usize,
    frames: &mut Vec<u64>,
    mut visit: impl FnMut(usize, &StackSlot, StackRef),
) {
    // SAFETY: by the caller.
    let (slots, arena) = unsafe { store.tables() };
    let mut read = 0;
    for (index, slot) in slots.iter().enumerate() {
        // A slot written after the caller's count, or still being written by a sampler, waits
        // for the next snapshot.
        if read == limit {
            break;
        }
        let Some(loc) = published(slot) else {
            continue;
        };
        let start = frames.len();
        let Some((owner, truncated)) = PackedStack::unpack_into(stored_bytes(arena, loc), frames)
        else {
            break;
        };
        visit(
            index,
            slot,
            StackRef {
                owner,
                count: 0,
                truncated,
                start,
                depth: frames.len() - start,
            },
        );
        read += 1;
    }
}

/// Fibonacci hashing of the PC, mapped onto `0..capacity` by a multiply (no division).
pub(super) fn probe_start(pc: u64, capacity: usize) -> usize {
    let hash = pc.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((hash as u128 * capacity as u128) >> 64) as usize
}
