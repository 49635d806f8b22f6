//! Which NMIs the NMI source claims (`kprof::NmiClaim`, issue 26 item 2): exactly its own, from
//! its comparator's level-triggered interrupt status, on every CPU, armed or parked; a foreign
//! NMI always reaches the stock handler. And its rules for the comparator (period, parking
//! across a counter's wraparound) and for the I/O APIC input (`kprof::nmi_input`).
//!
//! The fake HPET is the status bit alone: `fire` sets it (a level-triggered comparator's
//! match), `take` reads and clears it (the kernel reads the General Interrupt Status register
//! and writes 1 to the bit). An NMI is delivered to a CPU by calling `claim` on it; a broadcast
//! is one NMI per CPU.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kprof::{hpet_park_comparator, hpet_period, nmi_input, NmiClaim, NmiStatus};

#[derive(Default)]
struct FakeHpet {
    status: AtomicBool,
    reads: AtomicUsize,
}

impl FakeHpet {
    fn fire(&self) {
        self.status.store(true, Ordering::SeqCst);
    }
}

struct Status<'a>(&'a FakeHpet);

impl NmiStatus for Status<'_> {
    fn take(&mut self) -> bool {
        self.0.reads.fetch_add(1, Ordering::Relaxed);
        self.0.status.swap(false, Ordering::SeqCst)
    }
    fn pending(&mut self) -> bool {
        self.0.status.load(Ordering::SeqCst)
    }
    // Never armed here: the fires are the test's (`nmi_alarms.rs` tests the schedule).
    fn counter(&mut self) -> u64 {
        unreachable!("the claim is not armed")
    }
    fn set_comparator(&mut self, _: u64) {
        unreachable!("the claim is not armed")
    }
}

fn nmi(claim: &NmiClaim, hpet: &FakeHpet, cpu: usize) -> bool {
    claim.claim(cpu, &mut Status(hpet))
}

#[test]
fn before_any_fire_every_nmi_goes_to_the_stock_handler() {
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    for cpu in 0..4 {
        assert!(!nmi(&claim, &hpet, cpu), "cpu {cpu}");
    }
    assert_eq!(claim.generation(), 0);
}

#[test]
fn our_nmi_is_claimed_and_a_foreign_one_passed_on_one_cpu() {
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    for period in 1..=1000 {
        hpet.fire();
        assert!(nmi(&claim, &hpet, 0), "period {period}: ours");
        assert!(!nmi(&claim, &hpet, 0), "period {period}: a foreign NMI after ours");
    }
    assert_eq!(claim.generation(), 1000);
}

#[test]
fn a_broadcast_is_claimed_once_on_every_cpu_in_any_order() {
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    let orders: [[usize; 4]; 4] = [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]];
    for (period, order) in orders.iter().cycle().take(400).enumerate() {
        hpet.fire();
        for (i, &cpu) in order.iter().enumerate() {
            assert!(nmi(&claim, &hpet, cpu), "period {period}: cpu {cpu} (taking #{i})");
            // A foreign NMI on a CPU that has taken this period's, while others have not yet.
            assert!(!nmi(&claim, &hpet, cpu), "period {period}: foreign on cpu {cpu}");
        }
    }
    assert_eq!(claim.generation(), 400, "one generation per fire");
}

#[test]
fn a_foreign_nmi_between_a_fire_and_a_cpus_own_nmi_costs_no_report() {
    // The one case the hardware cannot tell apart: CPU 1 gets a foreign NMI after CPU 0 has
    // claimed the fire but before CPU 1's own NMI of that fire arrives. CPU 1 claims the first
    // and passes the second: the stock handler runs once on CPU 1, as it would have; no NMI is
    // left unreported.
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    hpet.fire();
    assert!(nmi(&claim, &hpet, 0));
    let foreign_first = nmi(&claim, &hpet, 1);
    let ours_second = nmi(&claim, &hpet, 1);
    assert_eq!((foreign_first, ours_second), (true, false));
}

#[test]
fn armed_then_parked_then_a_parked_fire() {
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    // A session: 50 periods on 4 CPUs, foreign NMIs in between on CPU 2.
    for _ in 0..50 {
        hpet.fire();
        for cpu in 0..4 {
            assert!(nmi(&claim, &hpet, cpu));
        }
        assert!(!nmi(&claim, &hpet, 2));
    }
    // Disarmed (parked): no fires; every NMI is foreign, on every CPU, however many.
    for _ in 0..100 {
        for cpu in 0..4 {
            assert!(!nmi(&claim, &hpet, cpu));
        }
    }
    // The parked comparator fires once (a 32-bit counter came round): ours, on every CPU.
    hpet.fire();
    for cpu in [3, 1, 0, 2] {
        assert!(nmi(&claim, &hpet, cpu), "parked fire on cpu {cpu}");
        assert!(!nmi(&claim, &hpet, cpu));
    }
    // The next session goes on with the same generations.
    hpet.fire();
    assert!((0..4).all(|cpu| nmi(&claim, &hpet, cpu)));
    assert_eq!(claim.generation(), 52);
}

#[test]
fn an_nmi_on_a_cpu_out_of_range_is_not_claimed() {
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    hpet.fire();
    assert!(!nmi(&claim, &hpet, kprof::MAX_CPUS));
    assert_eq!(hpet.reads.load(Ordering::Relaxed), 0, "no register read for it");
    assert!(nmi(&claim, &hpet, 0));
}

/// A CPU that falls a whole period behind (its NMI of one fire arrives after the next fire was
/// seen) claims once for both; its second NMI goes to the stock handler: reported (a false
/// alarm), never a foreign NMI taken for ours.
#[test]
fn a_cpu_a_period_behind_reports_rather_than_eats() {
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    hpet.fire();
    assert!(nmi(&claim, &hpet, 0));
    hpet.fire();
    assert!(nmi(&claim, &hpet, 0));
    assert!(nmi(&claim, &hpet, 1), "cpu 1's NMI of fire 1");
    assert!(!nmi(&claim, &hpet, 1), "cpu 1's NMI of fire 2: passed on");
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Ours,
    Foreign,
}

#[derive(Default)]
struct Cpu {
    queue: Mutex<VecDeque<Kind>>,
    ours: AtomicUsize,
    foreign: AtomicUsize,
    claimed: AtomicUsize,
    passed: AtomicUsize,
}

/// CPUs as threads, each taking the NMIs delivered to it in order; a comparator firing and
/// broadcasting, and foreign NMIs sent to single CPUs, at any time (`paced`: a fire only once
/// every CPU has taken the last one, and foreign NMIs only then, as at a real rate).
fn run(cpus: usize, fires: usize, foreign_every: usize, paced: bool) -> Vec<Arc<Cpu>> {
    let claim = Arc::new(NmiClaim::new());
    let hpet = Arc::new(FakeHpet::default());
    let state: Vec<Arc<Cpu>> = (0..cpus).map(|_| Arc::new(Cpu::default())).collect();
    let done = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..cpus)
        .map(|id| {
            let (claim, hpet, cpu, done) = (claim.clone(), hpet.clone(), state[id].clone(), done.clone());
            std::thread::spawn(move || loop {
                let next = cpu.queue.lock().unwrap().pop_front();
                match next {
                    Some(kind) => {
                        let counter = match claim.claim(id, &mut Status(&hpet)) {
                            true => &cpu.claimed,
                            false => &cpu.passed,
                        };
                        counter.fetch_add(1, Ordering::SeqCst);
                        let _ = kind;
                    }
                    None if done.load(Ordering::SeqCst) => break,
                    None => std::thread::yield_now(),
                }
            })
        })
        .collect();
    let deliver = |cpu: &Cpu, kind: Kind| {
        match kind {
            Kind::Ours => cpu.ours.fetch_add(1, Ordering::SeqCst),
            Kind::Foreign => cpu.foreign.fetch_add(1, Ordering::SeqCst),
        };
        cpu.queue.lock().unwrap().push_back(kind);
    };
    let idle = |state: &[Arc<Cpu>]| {
        while state.iter().any(|cpu| {
            cpu.claimed.load(Ordering::SeqCst) + cpu.passed.load(Ordering::SeqCst)
                < cpu.ours.load(Ordering::SeqCst) + cpu.foreign.load(Ordering::SeqCst)
        }) {
            std::thread::yield_now();
        }
    };
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for fire in 0..fires {
        if paced {
            idle(&state);
        }
        // The comparator fires: its status bit is set and its NMI goes to every CPU.
        hpet.fire();
        for cpu in &state {
            deliver(cpu, Kind::Ours);
        }
        if fire % foreign_every == 0 {
            if paced {
                idle(&state);
            }
            let cpu = &state[random() as usize % cpus];
            deliver(cpu, Kind::Foreign);
        }
        if random() % 64 == 0 {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    idle(&state);
    done.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.join().unwrap();
    }
    assert!(claim.generation() as usize <= fires);
    state
}

#[test]
fn paced_on_many_cpus_every_nmi_is_told_exactly() {
    let state = run(8, 2000, 3, true);
    for (id, cpu) in state.iter().enumerate() {
        let (ours, foreign) = (cpu.ours.load(Ordering::SeqCst), cpu.foreign.load(Ordering::SeqCst));
        assert_eq!(cpu.claimed.load(Ordering::SeqCst), ours, "cpu {id}: ours claimed");
        assert_eq!(cpu.passed.load(Ordering::SeqCst), foreign, "cpu {id}: foreign passed");
    }
    assert!(state.iter().map(|c| c.foreign.load(Ordering::SeqCst)).sum::<usize>() > 600);
}

/// At any interleaving (CPUs lagging several fires behind, foreign NMIs at any moment), no CPU
/// claims more NMIs than the source sent it, so the stock handler runs at least once per
/// foreign NMI on every CPU: none is ever eaten.
#[test]
fn unpaced_on_many_cpus_no_foreign_nmi_is_eaten() {
    for round in 0..4 {
        let state = run(6, 5000, 2, false);
        let mut behind = 0;
        for (id, cpu) in state.iter().enumerate() {
            let (ours, foreign) = (cpu.ours.load(Ordering::SeqCst), cpu.foreign.load(Ordering::SeqCst));
            let (claimed, passed) = (cpu.claimed.load(Ordering::SeqCst), cpu.passed.load(Ordering::SeqCst));
            assert_eq!(claimed + passed, ours + foreign, "round {round} cpu {id}");
            assert!(claimed <= ours, "round {round} cpu {id}: {claimed} claimed of {ours} ours");
            assert!(passed >= foreign, "round {round} cpu {id}: {passed} passed, {foreign} foreign");
            behind += passed - foreign;
        }
        eprintln!("round {round}: {behind} false alarms from CPUs a period behind");
    }
}

#[test]
fn the_period_and_the_rate_it_gives() {
    // QEMU's HPET: 10 ns (10^7 fs); a PC's: 14.31818 MHz (69,841,279 fs).
    assert_eq!(hpet_period(10_000_000, 1000), Some((100_000, 1000)));
    assert_eq!(hpet_period(10_000_000, 4000), Some((25_000, 4000)));
    assert_eq!(hpet_period(69_841_279, 1000), Some((14_318, 1000)));
    assert_eq!(hpet_period(69_841_279, 3000), Some((4_772, 3000)));
    assert_eq!(hpet_period(0, 1000), None);
    assert_eq!(hpet_period(10_000_000, 0), None);
    for rate in [100, 997, 1000, 4000, 10_000] {
        let (_, actual) = hpet_period(69_841_279, rate).unwrap();
        assert!(actual >= rate && actual - rate <= rate / 1000 + 1, "{rate}: {actual}");
    }
}

#[test]
fn a_parked_comparator_is_ahead_of_the_counter_across_a_wraparound() {
    for counter in [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFF0, 0xFFFF_FFFF, 0x1_0000_0005] {
        // 32-bit: as far ahead as a signed 32-bit difference goes, past the wrap if need be.
        let park = hpet_park_comparator(counter, false);
        assert!(park <= u64::from(u32::MAX));
        let ahead = (park as u32).wrapping_sub(counter as u32);
        assert_eq!(ahead, (1 << 31) - 1, "{counter:#x}");
        assert!(ahead as i32 > 0, "{counter:#x}: behind as the HPET compares");
    }
    for counter in [0, u64::MAX, u64::MAX / 2, 0xFFFF_FFFF_0000_0000] {
        let park = hpet_park_comparator(counter, true);
        let ahead = park.wrapping_sub(counter);
        assert_eq!(ahead, 1 << 56, "{counter:#x}");
        // QEMU schedules it ahead * 10 ns from now, in an i64 of nanoseconds.
        assert!(ahead.checked_mul(10).is_some_and(|ns| ns < i64::MAX as u64 / 2));
    }
    // A 32-bit counter running through its wraparound while parked: the comparator matches
    // once, after 2^31 ticks; its fire is then ours like any other, and nothing before it is.
    let (claim, hpet) = (NmiClaim::new(), FakeHpet::default());
    let start = 0xFFFF_0000_u32;
    let park = hpet_park_comparator(u64::from(start), false) as u32;
    let mut counter = start;
    let mut fires = 0;
    for step in 0..(1u64 << 32) / 0x1000 {
        counter = counter.wrapping_add(0x1000);
        let crossed = counter.wrapping_sub(park) < 0x1000;
        if crossed {
            fires += 1;
            hpet.fire();
            assert!((0..4).all(|cpu| nmi(&claim, &hpet, cpu)), "step {step}");
        }
        if step % 4096 == 0 {
            assert!(!nmi(&claim, &hpet, (step / 4096) as usize % 4), "foreign at {counter:#x}");
        }
    }
    assert_eq!(fires, 1);
}

#[test]
fn the_input_is_a_pci_line_nobody_uses() {
    // q35: the HPET's comparators 2.. route to inputs 16-23; 24 inputs at GSI 0; the MADT moves
    // ISA IRQ 0 to GSI 2 and gives 5, 9, 10, 11 their own.
    let q35_overrides = [2, 0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 11, 0, 0, 0, 0];
    let all_masked = |_| true;
    assert_eq!(nmi_input(0x00FF_0000, 24, 0, &q35_overrides, all_masked, None), Some(23));
    // 23 programmed by someone (not masked): the next one down.
    assert_eq!(nmi_input(0x00FF_0000, 24, 0, &q35_overrides, |pin| pin != 23, None), Some(22));
    // Our own input from before stays ours, though it is not masked (it is live: ours).
    assert_eq!(nmi_input(0x00FF_0000, 24, 0, &q35_overrides, |_| false, Some(20)), Some(20));
    // Never an ISA line, masked or not, nor one an override moved an ISA IRQ to.
    assert_eq!(nmi_input(0x0000_FFFF, 24, 0, &[0; 16], all_masked, None), None);
    let sci_moved = [0, 0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0];
    assert_eq!(nmi_input(0x0010_0000, 24, 0, &sci_moved, all_masked, None), None);
    assert_eq!(nmi_input(0x0030_0000, 24, 0, &sci_moved, all_masked, None), Some(21));
    assert_eq!(nmi_input(0x0010_0000, 24, 0, &sci_moved, all_masked, Some(20)), None);
    // Only inputs the I/O APIC has; on a second I/O APIC (GSI 24 up) its low inputs are PCI's.
    assert_eq!(nmi_input(0x8000_0000, 24, 0, &[0; 16], all_masked, None), None);
    assert_eq!(nmi_input(0x0000_0004, 24, 24, &[0; 16], all_masked, None), Some(2));
    // Nothing free: no source (the session samples on the timer).
    assert_eq!(nmi_input(0x00FF_0000, 24, 0, &q35_overrides, |_| false, None), None);
}
