//! Which NMIs are the profiler's, decided exactly from the HPET's own state, when the next one
//! comes, and the rules the NMI source follows for its comparator and its I/O APIC input. The
//! kernel glue (`src/scheme/sys/prof_nmi.rs`) gives these the hardware; the host tests give
//! them fakes.
//!
//! The source is an HPET comparator in one-shot, level-triggered mode, routed to an I/O APIC
//! input that delivers it as an (edge) NMI to every CPU. In level mode the HPET sets the
//! comparator's bit of its General Interrupt Status register when it fires and clears it only
//! when software writes 1 to it, so "the bit is set" means "a fire of ours is not yet accounted
//! for", which no other NMI source can fake. But every CPU gets the NMI and only one can see the
//! bit: the first CPU that takes the status lock and finds the bit set clears it and opens a new
//! generation; every CPU (that one included) claims one NMI per generation it has not yet
//! claimed, and an NMI that finds no new generation is not ours and goes to the stock handler,
//! armed or not. Nothing compares times, so a counter's wraparound cannot leave a claim on.
//!
//! The comparator is one-shot, and the next fire is programmed by the CPU that claims the
//! current one last (every CPU that has ever claimed a fire has claimed it), under the status
//! lock: so a fire never comes while the status bit of the one before is set (no second rise of
//! a line already high, which QEMU's I/O APIC delivers again), nor while a CPU has not yet
//! taken its NMI of the one before (no CPU is ever a period behind, where its NMI of the next
//! fire would find no new generation). Each CPU thus has at most one NMI of ours in flight, and
//! every NMI of ours finds its generation. The CPUs counted are those the NMIs reach, learnt
//! from their claims (not the kernel's CPU count: a CPU the broadcast does not reach would stop
//! the source).

use core::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

use super::MAX_CPUS;

/// The NMI source's hardware, as the claim sees it. Called under the status lock, by one CPU
/// at a time.
pub trait NmiStatus {
    /// If our comparator's bit of the HPET's General Interrupt Status register is set, clear
    /// it (write 1 to that bit alone) and return true; else false.
    fn take(&mut self) -> bool;
    /// Our comparator's status bit, read without clearing it.
    fn pending(&mut self) -> bool;
    /// The HPET's main counter.
    fn counter(&mut self) -> u64;
    /// Set our (one-shot) comparator to `value`.
    fn set_comparator(&mut self, value: u64);
}

/// The claim state: a status lock taken only by NMI handlers, the number of fires seen
/// (generations), per CPU the last generation that CPU claimed, which CPUs the NMIs reach, how
/// many have claimed the current fire, and the schedule of the next fire while armed.
pub struct NmiClaim {
    lock: AtomicBool,
    /// Fires seen so far (the host crate reads it in its tests).
    pub(crate) generation: AtomicU64,
    seen: [AtomicU64; MAX_CPUS],
    /// The CPUs that have ever claimed a fire (the NMIs reach them), and how many.
    joined: [AtomicBool; MAX_CPUS],
    cpus: AtomicUsize,
    /// CPUs that have claimed the current generation.
    claimed: AtomicUsize,
    /// The generation after which the next fire was programmed (once per generation).
    programmed: AtomicU64,
    /// The period in HPET ticks while armed; 0: parked (no next fire is programmed).
    period: AtomicU64,
    /// The comparator's last programmed value (the schedule the next fire keeps).
    next: AtomicU64,
    /// A 64-bit comparator.
    wide: AtomicBool,
}

impl Default for NmiClaim {
    fn default() -> Self {
        Self::new()
    }
}

impl NmiClaim {
    pub const fn new() -> Self {
        Self {
            lock: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            seen: [const { AtomicU64::new(0) }; MAX_CPUS],
            joined: [const { AtomicBool::new(false) }; MAX_CPUS],
            cpus: AtomicUsize::new(0),
            claimed: AtomicUsize::new(0),
            programmed: AtomicU64::new(0),
            period: AtomicU64::new(0),
            next: AtomicU64::new(0),
            wide: AtomicBool::new(true),
        }
    }

    /// Is the NMI arriving now on `cpu` ours? The last CPU to claim a fire programs the next
    /// one (while armed). NMI context: no allocation, no fault; the lock is held by NMI
    /// handlers only (never by the control path, which an NMI could interrupt on its own CPU),
    /// an NMI handler is never interrupted by another NMI, so the holder always finishes: two
    /// register accesses, and on the last CPU of a fire three or four more. A CPU number out
    /// of range claims nothing.
    pub fn claim(&self, cpu: usize, hw: &mut impl NmiStatus) -> bool {
        let (Some(seen), Some(joined)) = (self.seen.get(cpu), self.joined.get(cpu)) else {
            return false;
        };
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_loop();
        }
        let generation = match hw.take() {
            true => {
                self.claimed.store(0, Ordering::Relaxed);
                self.generation.fetch_add(1, Ordering::Relaxed) + 1
            }
            false => self.generation.load(Ordering::Relaxed),
        };
        let ours = seen.load(Ordering::Relaxed) < generation;
        if ours {
            seen.store(generation, Ordering::Relaxed);
            if !joined.swap(true, Ordering::Relaxed) {
                self.cpus.fetch_add(1, Ordering::Relaxed);
            }
            let claimed = self.claimed.fetch_add(1, Ordering::Relaxed) + 1;
            if claimed >= self.cpus.load(Ordering::Relaxed)
                && self.programmed.swap(generation, Ordering::Relaxed) != generation
            {
                self.fire_next(hw);
            }
        }
        self.lock.store(false, Ordering::Release);
        ours
    }

    /// Control path: NMIs every `period` HPET ticks from now, on a comparator that is one-shot
    /// (the glue has set its mode) and `wide` (64-bit) or not. The first fire is programmed
    /// here, each next one by the CPU that claims the fire before it last.
    pub fn arm(&self, period: u64, wide: bool, hw: &mut impl NmiStatus) {
        let period = period.max(1);
        self.wide.store(wide, Ordering::Relaxed);
        let first = fit(hw.counter().wrapping_add(period), wide);
        self.next.store(first, Ordering::Relaxed);
        self.period.store(period, Ordering::Release);
        hw.set_comparator(first);
    }

    /// Control path: program no next fire (the glue then parks the comparator). A fire already
    /// programmed, or programmed by a CPU claiming the last fire at this moment, is claimed as
    /// any other.
    pub fn disarm(&self) {
        self.period.store(0, Ordering::Release);
    }

    /// Under the status lock, on the last CPU to claim a fire: program the next one, on the
    /// schedule if it is still ahead (`hpet_next_comparator`), and make sure it is ahead of the
    /// counter when written (an HPET that compares for equality never fires for a comparator
    /// the counter has passed): if the counter has reached it and it has not fired, again from
    /// the counter.
    fn fire_next(&self, hw: &mut impl NmiStatus) {
        let period = self.period.load(Ordering::Acquire);
        if period == 0 {
            return;
        }
        let wide = self.wide.load(Ordering::Relaxed);
        let mut next = hpet_next_comparator(
            self.next.load(Ordering::Relaxed),
            hw.counter(),
            period,
            wide,
        );
        for _ in 0..4 {
            hw.set_comparator(next);
            let counter = hw.counter();
            if ahead(next, counter, wide) || hw.pending() {
                break;
            }
            next = fit(counter.wrapping_add(period), wide);
        }
        self.next.store(next, Ordering::Relaxed);
    }
}

/// `value` in the comparator's width.
fn fit(value: u64, wide: bool) -> u64 {
    match wide {
        true => value,
        false => u64::from(value as u32),
    }
}

/// Is `comparator` ahead of `counter` as the HPET compares (the signed difference in the
/// comparator's width is positive)?
fn ahead(comparator: u64, counter: u64, wide: bool) -> bool {
    match wide {
        true => (comparator.wrapping_sub(counter) as i64) > 0,
        false => ((comparator as u32).wrapping_sub(counter as u32) as i32) > 0,
    }
}

/// The comparator value of the next fire after one at `last`, with the counter at `counter`:
/// `last + period` (the session's rate) if that is ahead of the counter by at least an eighth
/// of a period, else an eighth of a period from the counter (after a late claim, the next fire
/// comes soon, as one NMI that was kept pending would have; then the rate again from it).
pub fn hpet_next_comparator(last: u64, counter: u64, period: u64, wide: bool) -> u64 {
    let scheduled = fit(last.wrapping_add(period), wide);
    let lead = match wide {
        true => scheduled.wrapping_sub(counter) as i64,
        false => i64::from((scheduled as u32).wrapping_sub(counter as u32) as i32),
    };
    let least = (period / 8).max(1);
    match lead >= least as i64 {
        true => scheduled,
        false => fit(counter.wrapping_add(least), wide),
    }
}

/// The HPET comparator's period in its ticks for `rate` NMIs a second, and the rate that
/// period gives (`None` for a rate of 0 or a period of 0 femtoseconds).
pub fn hpet_period(period_fs: u64, rate: u64) -> Option<(u64, u64)> {
    let per_tick = period_fs.checked_mul(rate).filter(|&p| p != 0)?;
    let ticks = (1_000_000_000_000_000 / per_tick).max(1);
    Some((ticks, 1_000_000_000_000_000 / period_fs.checked_mul(ticks)?))
}

/// Where a parked comparator (one-shot, its interrupt still enabled and routed) is set: ahead
/// of `counter` as HPETs compare (the signed difference is positive; an emulated HPET fires at
/// once for a comparator behind the counter), by 2^56 ticks for a 64-bit comparator (22 years
/// at QEMU's 100 MHz, 160 at a PC's 14.3 MHz; QEMU turns ticks into nanoseconds in 64 bits, so
/// 2^63 would overflow there and fire at once) or 2^31 - 1 for a 32-bit one (21 s at 100 MHz,
/// 150 s at 14.3 MHz). A fire of the parked comparator is ours and is claimed like any other.
pub fn hpet_park_comparator(counter: u64, wide: bool) -> u64 {
    match wide {
        true => counter.wrapping_add(1 << 56),
        false => u64::from((counter as u32).wrapping_add((1 << 31) - 1)),
    }
}

/// The I/O APIC input the NMI source takes, or `None`. `routes`: the comparator's
/// `Tn_INT_ROUTE_CAP` (bit n: input n); `inputs`: the I/O APIC's number of inputs, its first
/// at global system interrupt `gsi_base`; `isa_gsis`: the GSIs of the ISA IRQs as the MADT's
/// interrupt source overrides give them; `masked(pin)`: the input's redirection entry is
/// masked; `ours`: the input the source took before (it keeps it). The rule, from what the
/// kernel knows:
/// - GSIs 0-15 are the ISA IRQs' own lines (the timer, the HPET's legacy replacement on 2 and
///   8, keyboard, serial, RTC, the irq scheme's `irq:0`..`irq:15` that drivers open), and an
///   override can move an ISA IRQ elsewhere: none of those is ever taken;
/// - an input whose entry is not masked was programmed by someone (the kernel's
///   `ioapic::init` maps the ISA IRQs, firmware may leave others live): never taken, unless it
///   is the source's own;
/// - of the rest (PCI interrupt lines, which no kernel code or driver receives through the I/O
///   APIC at 663e6641: the irq scheme's other IRQs are MSI vectors), the highest.
pub fn nmi_input(
    routes: u32,
    inputs: u8,
    gsi_base: u32,
    isa_gsis: &[u32],
    masked: impl Fn(u8) -> bool,
    ours: Option<u8>,
) -> Option<u8> {
    let allowed = |pin: u8| {
        let gsi = gsi_base + u32::from(pin);
        pin < inputs.min(32) && routes & (1 << pin) != 0 && gsi >= 16 && !isa_gsis.contains(&gsi)
    };
    if let Some(pin) = ours.filter(|&pin| allowed(pin)) {
        return Some(pin);
    }
    (0..inputs.min(32))
        .rev()
        .find(|&pin| allowed(pin) && masked(pin))
}
