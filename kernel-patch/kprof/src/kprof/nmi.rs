//! Which NMIs are the profiler's, decided exactly from the HPET's own state, and the rules the
//! NMI source follows for its comparator and its I/O APIC input. The kernel glue
//! (`src/scheme/sys/prof_nmi.rs`) gives these the hardware; the host tests give them fakes.
//!
//! The source is an HPET comparator in level-triggered mode, routed to an I/O APIC input that
//! delivers it as an (edge) NMI to every CPU. In level mode the HPET sets the comparator's bit
//! of its General Interrupt Status register when it fires and clears it only when software
//! writes 1 to it, so "the bit is set" means "a fire of ours is not yet accounted for", which
//! no other NMI source can fake. But every CPU gets the NMI and only one can see the bit: the
//! first CPU that takes the status lock and finds the bit set clears it and opens a new
//! generation; every CPU (that one included) claims one NMI per generation it has not yet
//! claimed, and an NMI that finds no new generation is not ours and goes to the stock handler,
//! armed or not. Nothing compares times, so a counter's wraparound cannot leave a claim on.

use core::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use super::MAX_CPUS;

/// The NMI source's hardware, as the claim sees it.
pub trait NmiStatus {
    /// If our comparator's bit of the HPET's General Interrupt Status register is set, clear
    /// it (write 1 to that bit alone) and return true; else false. Called under the status
    /// lock, by one CPU at a time.
    fn take(&mut self) -> bool;
}

/// The claim state: a status lock taken only by NMI handlers, the number of fires seen
/// (generations) and, per CPU, the last generation that CPU claimed.
pub struct NmiClaim {
    lock: AtomicBool,
    /// Fires seen so far (the host crate reads it in its tests).
    pub(crate) generation: AtomicU64,
    seen: [AtomicU64; MAX_CPUS],
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
        }
    }

    /// Is the NMI arriving now on `cpu` ours? NMI context: no allocation, no fault; the lock
    /// is held by NMI handlers only (never by the control path, which an NMI could interrupt
    /// on its own CPU), an NMI handler is never interrupted by another NMI, so the holder
    /// always finishes: two register accesses. A CPU number out of range claims nothing.
    pub fn claim(&self, cpu: usize, status: &mut impl NmiStatus) -> bool {
        let Some(seen) = self.seen.get(cpu) else {
            return false;
        };
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_loop();
        }
        let generation = match status.take() {
            true => self.generation.fetch_add(1, Ordering::Relaxed) + 1,
            false => self.generation.load(Ordering::Relaxed),
        };
        self.lock.store(false, Ordering::Release);
        // Only this CPU's NMI handler touches its `seen`, one at a time.
        if seen.load(Ordering::Relaxed) < generation {
            seen.store(generation, Ordering::Relaxed);
            true
        } else {
            false
        }
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
