//! The process tree a `children` session follows: the session's process and every process it
//! starts, to any depth, each with the images it has run.
//!
//! On Redox the process manager makes a context for a fork, but the parent gives the child its
//! address space (relibc's fork copies its own and hands it over): the address-space hook sees
//! a context of one pid give a context of another its first space, and so who started whom,
//! with no help from the process manager. A followed process's exec is its own context taking
//! a new space; its samples are kept apart by image ([`owner_key`]), so the forked copy's run
//! of its parent's code (up to and within relibc's exec) is never read as the new program's.

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::FollowedProcess;

/// Processes a session can follow besides its own; a further one is counted as missed and its
/// ticks as another process's.
pub const MAX_FOLLOWED: usize = 256;

/// Bytes of a followed process's name (the kernel's context names are as long).
pub const FOLLOWED_NAME_LEN: usize = 32;

/// The key a followed process's samples are kept under in the server-stack table: its pid in
/// the low 32 bits, the number of execs it has made since it was followed (its image) above.
/// Image 0 is the copy of its parent's image it was started as. A daemon's (and, in a session
/// on every process, a process's) key is its pid alone.
pub const fn owner_key(pid: usize, image: u32) -> u64 {
    (pid as u64 & 0xffff_ffff) | (image as u64) << 32
}

/// One followed process.
pub(super) struct Followed {
    /// 0: a free slot.
    pub(super) pid: AtomicUsize,
    /// The [`owner_key`] its parent ran when it started this one: the image of its image 0.
    pub(super) parent: AtomicU64,
    /// Execs since it was followed.
    pub(super) execs: AtomicU32,
    /// Bit 0: its last context has exited.
    pub(super) flags: AtomicU32,
    /// Its name as the process manager last set it (at an exec, the program's path), NUL
    /// padded, 8 bytes a word.
    name: [AtomicU64; FOLLOWED_NAME_LEN / 8],
}

/// A slot's pid while it is being filled in: matches no process.
const RESERVED: usize = usize::MAX;

/// [`Followed::flags`]: the process has exited.
pub const FOLLOWED_EXITED: u32 = 1;

impl Followed {
    const fn free() -> Followed {
        Followed {
            pid: AtomicUsize::new(0),
            parent: AtomicU64::new(0),
            execs: AtomicU32::new(0),
            flags: AtomicU32::new(0),
            name: [const { AtomicU64::new(0) }; FOLLOWED_NAME_LEN / 8],
        }
    }

    /// Its name is now `name` (the first [`FOLLOWED_NAME_LEN`] bytes). Word by word: a reader
    /// racing a rename may see part of each, which only a snapshot taken at that instant shows.
    pub(super) fn set_name(&self, name: &[u8]) {
        for (i, word) in self.name.iter().enumerate() {
            let mut bytes = [0u8; 8];
            for (j, byte) in bytes.iter_mut().enumerate() {
                *byte = name.get(i * 8 + j).copied().unwrap_or(0);
            }
            word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
        }
    }

    /// Its name, NUL padded.
    fn name(&self) -> [u8; FOLLOWED_NAME_LEN] {
        let mut out = [0u8; FOLLOWED_NAME_LEN];
        for (i, word) in self.name.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        out
    }

    /// As `sys:prof_data` gives it.
    pub(super) fn record(&self) -> FollowedProcess {
        FollowedProcess {
            pid: self.pid.load(Ordering::Acquire) as u64,
            parent: self.parent.load(Ordering::Relaxed),
            execs: self.execs.load(Ordering::Relaxed),
            flags: self.flags.load(Ordering::Relaxed),
            name: self.name(),
        }
    }

    /// The key its samples go under now.
    pub(super) fn owner(&self) -> u64 {
        owner_key(
            self.pid.load(Ordering::Relaxed),
            self.execs.load(Ordering::Relaxed),
        )
    }
}

/// The followed processes. Slots are taken in order and none is freed while a session runs,
/// so the taken ones are a prefix and a lookup stops at the first free slot: a sample of a
/// session that follows N processes reads at most N + 1 slots, without a lock.
pub(super) struct Tree {
    slots: [Followed; MAX_FOLLOWED],
    /// Processes started by a followed one that found every slot taken.
    pub(super) missed: AtomicU64,
}

impl Tree {
    pub(super) const fn new() -> Tree {
        Tree {
            slots: [const { Followed::free() }; MAX_FOLLOWED],
            missed: AtomicU64::new(0),
        }
    }

    /// Forget every process (`start`, with no sampler in flight).
    pub(super) fn clear(&self) {
        for slot in &self.slots {
            slot.pid.store(0, Ordering::Relaxed);
            slot.parent.store(0, Ordering::Relaxed);
            slot.execs.store(0, Ordering::Relaxed);
            slot.flags.store(0, Ordering::Relaxed);
            slot.set_name(&[]);
        }
        self.missed.store(0, Ordering::Relaxed);
    }

    /// The followed process `pid` (never pid 0).
    #[inline]
    pub(super) fn find(&self, pid: usize) -> Option<&Followed> {
        if pid == 0 {
            return None;
        }
        for slot in &self.slots {
            match slot.pid.load(Ordering::Acquire) {
                0 => return None,
                p if p == pid => return Some(slot),
                _ => {}
            }
        }
        None
    }

    /// Follow `pid`, started by the process whose image was `parent` (an [`owner_key`]). A
    /// free slot is reserved with a CAS on its pid, its other fields written, then its pid
    /// published, so a sampler that finds the pid finds them; with every slot taken, the
    /// process is missed.
    pub(super) fn follow(&self, pid: usize, parent: u64) {
        if pid == 0 || pid == RESERVED || self.find(pid).is_some() {
            return;
        }
        for slot in &self.slots {
            if slot
                .pid
                .compare_exchange(0, RESERVED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                slot.parent.store(parent, Ordering::Relaxed);
                slot.execs.store(0, Ordering::Relaxed);
                slot.flags.store(0, Ordering::Relaxed);
                slot.set_name(&[]);
                slot.pid.store(pid, Ordering::Release);
                return;
            }
        }
        self.missed.fetch_add(1, Ordering::Relaxed);
    }

    /// The followed processes, in the order they were first seen.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Followed> {
        self.slots
            .iter()
            .take_while(|slot| slot.pid.load(Ordering::Acquire) != 0)
            .filter(|slot| slot.pid.load(Ordering::Acquire) != RESERVED)
    }
}
