//! The NMI source's false alarms (NMIs of its own passed to the stock handler, which prints
//! "Non-maskable interrupt" and a register dump from NMI context), modelled: the two causes
//! measured under QEMU 7.2 TCG (kernel-patch/series/README.md, "The NMI source"), then the claim's
//! guarantee with foreign NMIs, with `kprof::NmiClaim` as the kernel runs it.
//!
//! A discrete-event model in HPET ticks (QEMU's 10 ns): an HPET comparator (level-triggered:
//! its status bit is the line, cleared by the claim), an I/O APIC that sends an NMI to every
//! CPU at each rise of the line (on hardware) or at each raise, also of a line already high
//! (QEMU's), and CPUs with x86's NMI rules: one NMI pending per CPU (an NMI arriving while one
//! is pending is merged with it), none taken while the handler runs. A handler claims (takes
//! the status lock, reads the status) some time after it is entered: a CPU is *late* when that
//! takes long (a vCPU descheduled by the host, an HPET access waiting for QEMU's global lock).
//!
//! The old source is the same claim on a periodic comparator (the hardware fires every period
//! whatever the CPUs do); the new one is armed, one-shot, each fire programmed by the last CPU
//! to claim the one before (`NmiClaim::arm`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use kprof::{hpet_next_comparator, NmiClaim, NmiStatus};

/// 1 kHz at QEMU's 100 MHz HPET.
const PERIOD: u64 = 100_000;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Ours,
    Foreign,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Ev {
    /// The comparator matches (its programming's number: a reprogramming cancels it).
    Fire(u64),
    Arrive(usize, Kind),
    Take(usize),
    Claim(usize),
    End(usize),
    Foreign,
}

#[derive(Clone, Copy)]
struct Setup {
    cpus: usize,
    /// The old source: a periodic comparator, never re-armed by the claim.
    periodic: bool,
    /// QEMU's I/O APIC: an NMI at every raise of the line, also while it is high.
    qemu_ioapic: bool,
    /// Per mille of handlers that claim late, and how late (ticks, from..to).
    late_per_mille: u64,
    late: (u64, u64),
    /// Mean ticks between foreign NMIs (0: none).
    foreign_every: u64,
    /// How long the model runs.
    ticks: u64,
    seed: u64,
}

#[derive(Default, Clone, Debug)]
struct CpuStats {
    claimed: u64,
    reported: u64,
    /// NMIs taken that were (or had merged in) one of ours / a foreign one.
    with_ours: u64,
    with_foreign: u64,
    /// Reports of NMIs that had no foreign NMI in them: false alarms.
    false_alarms: u64,
}

#[derive(Default)]
struct Cpu {
    pending: Vec<Kind>,
    current: Vec<Kind>,
    busy: bool,
    stats: CpuStats,
}

struct Hpet {
    status: bool,
    programming: u64,
    fires: u64,
}

struct Model {
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    hpet: Hpet,
    cpus: Vec<Cpu>,
    rng: u64,
    setup: Setup,
}

/// The claim's view of the model's HPET: the counter is the model's clock; a comparator set
/// behind the counter fires at once (as QEMU's does).
struct Hw<'a> {
    now: u64,
    hpet: &'a mut Hpet,
    fire_at: &'a mut Option<(u64, u64)>,
}

impl NmiStatus for Hw<'_> {
    fn take(&mut self) -> bool {
        std::mem::replace(&mut self.hpet.status, false)
    }
    fn pending(&mut self) -> bool {
        self.hpet.status
    }
    fn counter(&mut self) -> u64 {
        self.now
    }
    fn set_comparator(&mut self, value: u64) {
        self.hpet.programming += 1;
        *self.fire_at = Some((value.max(self.now + 1), self.hpet.programming));
    }
}

impl Model {
    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn range(&mut self, (from, to): (u64, u64)) -> u64 {
        from + self.random() % (to - from + 1)
    }

    fn at(&mut self, time: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((time, self.seq, ev)));
    }

    fn run(setup: Setup) -> (Vec<CpuStats>, u64) {
        let mut model = Model {
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            hpet: Hpet {
                status: false,
                programming: 0,
                fires: 0,
            },
            cpus: (0..setup.cpus).map(|_| Cpu::default()).collect(),
            rng: setup.seed | 1,
            setup,
        };
        let claim = NmiClaim::new();
        if setup.periodic {
            model.at(PERIOD, Ev::Fire(0));
        } else {
            let mut fire_at = None;
            let mut hw = Hw {
                now: 0,
                hpet: &mut model.hpet,
                fire_at: &mut fire_at,
            };
            claim.arm(PERIOD, true, &mut hw);
            let (time, programming) = fire_at.unwrap();
            model.at(time, Ev::Fire(programming));
        }
        if setup.foreign_every != 0 {
            let first = model.range((1, 2 * setup.foreign_every));
            model.at(first, Ev::Foreign);
        }
        while let Some(Reverse((time, _, ev))) = model.queue.pop() {
            if time > setup.ticks {
                break;
            }
            model.now = time;
            model.step(ev, &claim);
        }
        let fires = model.hpet.fires;
        (model.cpus.into_iter().map(|cpu| cpu.stats).collect(), fires)
    }

    fn step(&mut self, ev: Ev, claim: &NmiClaim) {
        let now = self.now;
        match ev {
            Ev::Fire(programming) => {
                if programming != self.hpet.programming {
                    return;
                }
                self.hpet.fires += 1;
                if self.setup.periodic {
                    self.at(now + PERIOD, Ev::Fire(programming));
                }
                let was_high = std::mem::replace(&mut self.hpet.status, true);
                if !was_high || self.setup.qemu_ioapic {
                    for cpu in 0..self.setup.cpus {
                        let latency = self.range((100, 2_000));
                        self.at(now + latency, Ev::Arrive(cpu, Kind::Ours));
                    }
                }
            }
            Ev::Foreign => {
                let cpu = self.random() as usize % self.setup.cpus;
                self.at(now, Ev::Arrive(cpu, Kind::Foreign));
                let next = self.range((1, 2 * self.setup.foreign_every));
                self.at(now + next, Ev::Foreign);
            }
            Ev::Arrive(cpu, kind) => {
                // One NMI pending per CPU: a second one is merged into it.
                self.cpus[cpu].pending.push(kind);
                if !self.cpus[cpu].busy {
                    self.at(now, Ev::Take(cpu));
                }
            }
            Ev::Take(cpu) => {
                if self.cpus[cpu].busy || self.cpus[cpu].pending.is_empty() {
                    return;
                }
                let c = &mut self.cpus[cpu];
                c.busy = true;
                c.current = std::mem::take(&mut c.pending);
                let delay = match self.random() % 1000 < self.setup.late_per_mille {
                    true => self.range(self.setup.late),
                    false => self.range((200, 1_000)),
                };
                self.at(now + delay, Ev::Claim(cpu));
            }
            Ev::Claim(cpu) => {
                let mut fire_at = None;
                let mut hw = Hw {
                    now,
                    hpet: &mut self.hpet,
                    fire_at: &mut fire_at,
                };
                let ours = claim.claim(cpu, &mut hw);
                if let Some((time, programming)) = fire_at {
                    self.at(time, Ev::Fire(programming));
                }
                let Cpu { current, stats, .. } = &mut self.cpus[cpu];
                let (with_ours, with_foreign) = (
                    current.contains(&Kind::Ours),
                    current.contains(&Kind::Foreign),
                );
                stats.with_ours += u64::from(with_ours);
                stats.with_foreign += u64::from(with_foreign);
                match ours {
                    true => stats.claimed += 1,
                    false => {
                        stats.reported += 1;
                        stats.false_alarms += u64::from(!with_foreign);
                    }
                }
                let rest = self.range((500, 2_000));
                self.at(now + rest, Ev::End(cpu));
            }
            Ev::End(cpu) => {
                self.cpus[cpu].busy = false;
                self.at(now, Ev::Take(cpu));
            }
        }
    }
}

fn false_alarms(stats: &[CpuStats]) -> u64 {
    stats.iter().map(|s| s.false_alarms).sum()
}

/// 2 s at 1 kHz.
const TWO_SECONDS: u64 = 200_000_000;

fn late_cpus(cpus: usize, periodic: bool, seed: u64) -> Setup {
    Setup {
        cpus,
        periodic,
        qemu_ioapic: false,
        // 1 % of handlers claim 0.6 to 1.6 periods late (a vCPU descheduled in its handler).
        late_per_mille: 10,
        late: (60_000, 160_000),
        foreign_every: 0,
        ticks: TWO_SECONDS,
        seed,
    }
}

fn qemu_redelivery(cpus: usize, periodic: bool, seed: u64) -> Setup {
    Setup {
        cpus,
        periodic,
        qemu_ioapic: true,
        // 2 % of handlers wait for QEMU's global lock up to 1.5 periods before their status read.
        late_per_mille: 20,
        late: (50_000, 150_000),
        foreign_every: 0,
        ticks: TWO_SECONDS,
        seed,
    }
}

/// A CPU whose handler claims a fire after the next one has been seen (the old source) claims
/// once for both, and its NMI of the second goes to the stock handler: the "CPU a whole period
/// behind". On hardware's I/O APIC (one NMI per rise), 2 and 4 CPUs. The new source programs a
/// fire only once every CPU has claimed the one before: none.
#[test]
fn a_late_cpu_gives_false_alarms_before_and_none_now() {
    // The rate: a late claim moves the schedule, rarely.
    old_and_new("late", &[2, 4], late_cpus, 95);
}

/// QEMU's I/O APIC sends the NMI again at a fire that comes while the status bit of the one
/// before is still set (no CPU has read it yet): each CPU gets a second NMI that finds no new
/// generation. With one CPU and with two. The new source programs no fire while the bit is
/// set: none.
#[test]
fn a_redelivered_edge_gives_false_alarms_before_and_none_now() {
    old_and_new("QEMU I/O APIC", &[1, 2], qemu_redelivery, 90);
}

/// The old source (`setup(cpus, true, seed)`) and the new one (`false`) in the same scenario,
/// on each of `cpu_counts` and four seeds: the old gives false alarms, the new none, every NMI
/// of ours is claimed on every CPU (the last fire's may still be on its way at the end), and
/// the new source fires at least `rate_percent` % as often as the old.
fn old_and_new(what: &str, cpu_counts: &[usize], setup: fn(usize, bool, u64) -> Setup, rate_percent: u64) {
    for &cpus in cpu_counts {
        for seed in 1..=4 {
            let (old, old_fires) = Model::run(setup(cpus, true, seed));
            let (new, new_fires) = Model::run(setup(cpus, false, seed));
            eprintln!(
                "{what}, {cpus} CPUs, seed {seed}: old {} false alarms in {old_fires} fires, new {} in {new_fires}",
                false_alarms(&old),
                false_alarms(&new)
            );
            assert!(false_alarms(&old) > 0, "the model shows the old failure");
            assert_eq!(false_alarms(&new), 0, "{new:?}");
            for (cpu, stats) in new.iter().enumerate() {
                assert!(stats.claimed + 1 >= new_fires, "cpu {cpu}: {stats:?} of {new_fires}");
                assert_eq!(stats.reported, 0, "cpu {cpu}");
            }
            assert!(new_fires * 100 >= old_fires * rate_percent, "{new_fires} of {old_fires}");
        }
    }
}

/// Foreign NMIs at random moments on random CPUs, with late CPUs and QEMU's I/O APIC: on every
/// CPU the claim takes no more NMIs than carried one of ours (a foreign NMI is eaten only when
/// x86 merged it with one of ours before any handler ran), and passes on no more than carried
/// a foreign one (no false alarm: the stock handler runs once per foreign NMI, sometimes on the
/// frame of an NMI of ours, when the foreign one came between a fire and this CPU's NMI of it
/// and was claimed for it, as `nmi_claim.rs` shows). Late claims here stay under an eighth of a period: a CPU
/// that claims a fire on a foreign NMI before its own NMI of that fire arrives, and then does
/// not take that NMI for longer than the next fire takes to come, has two of ours merged
/// (`an_early_claim_and_a_merged_pair`, below).
#[test]
fn with_foreign_nmis_nothing_is_eaten_and_nothing_is_a_false_alarm() {
    for cpus in [1, 2, 4] {
        for seed in 1..=3 {
            let setup = Setup {
                cpus,
                periodic: false,
                qemu_ioapic: true,
                late_per_mille: 50,
                late: (2_000, PERIOD / 8),
                foreign_every: 3 * PERIOD / 2,
                ticks: TWO_SECONDS,
                seed,
            };
            let (stats, fires) = Model::run(setup);
            let foreign: u64 = stats.iter().map(|s| s.with_foreign).sum();
            eprintln!("foreign, {cpus} CPUs, seed {seed}: {fires} fires, {foreign} foreign taken");
            assert!(foreign > 500);
            for (cpu, s) in stats.iter().enumerate() {
                assert!(s.claimed <= s.with_ours, "cpu {cpu}: {s:?}");
                assert!(s.reported <= s.with_foreign, "cpu {cpu}: {s:?}");
            }
        }
    }
}

/// The schedule: the next fire one period after the last while that is ahead of the counter
/// by at least an eighth of a period, else an eighth of a period from the counter; in the
/// comparator's width, across a wraparound.
#[test]
fn the_next_fire_keeps_the_rate_and_is_always_ahead() {
    assert_eq!(hpet_next_comparator(1_000, 1_500, 1_000, true), 2_000);
    assert_eq!(hpet_next_comparator(1_000, 1_875, 1_000, true), 2_000);
    assert_eq!(hpet_next_comparator(1_000, 1_876, 1_000, true), 2_001);
    assert_eq!(hpet_next_comparator(1_000, 5_000, 1_000, true), 5_125);
    assert_eq!(hpet_next_comparator(u64::MAX - 100, 10, 1_000, true), 899);
    assert_eq!(hpet_next_comparator(0xFFFF_FF00, 0xFFFF_FF80, 0x1000, false), 0xF00);
    assert_eq!(hpet_next_comparator(0xFFFF_FF00, 0xF80, 0x1000, false), 0x1180);
    for counter in [0, 1 << 20, u64::MAX - 5, u64::from(u32::MAX) - 5] {
        for last in [counter.wrapping_sub(PERIOD * 3), counter.wrapping_sub(1), counter] {
            for wide in [true, false] {
                let next = hpet_next_comparator(last, counter, PERIOD, wide);
                let lead = match wide {
                    true => next.wrapping_sub(counter) as i64,
                    false => i64::from((next as u32).wrapping_sub(counter as u32) as i32),
                };
                assert!(lead >= (PERIOD / 8) as i64 && lead <= PERIOD as i64, "{last} {counter} {wide}");
                assert!(wide || next <= u64::from(u32::MAX));
            }
        }
    }
}

/// A comparator the counter has already passed when written (the claiming CPU slowed between
/// its counter read and its write) is written again from the counter, unless it fired: on
/// hardware that compares for equality it would never fire, and the source would stop.
#[test]
fn a_next_fire_written_too_late_is_written_again() {
    struct Slow {
        now: u64,
        status: bool,
        writes: Vec<u64>,
        fired_when_late: bool,
    }
    impl NmiStatus for Slow {
        fn take(&mut self) -> bool {
            std::mem::replace(&mut self.status, false)
        }
        fn pending(&mut self) -> bool {
            self.status
        }
        fn counter(&mut self) -> u64 {
            // Each read finds the counter a period and a half further.
            let now = self.now;
            self.now += 3 * PERIOD / 2;
            now
        }
        fn set_comparator(&mut self, value: u64) {
            self.writes.push(value);
            if (value.wrapping_sub(self.now) as i64) <= 0 && self.fired_when_late {
                self.status = true;
            }
        }
    }
    for fired_when_late in [false, true] {
        let claim = NmiClaim::new();
        let mut hw = Slow {
            now: 0,
            status: false,
            writes: Vec::new(),
            fired_when_late,
        };
        claim.arm(PERIOD, true, &mut hw);
        hw.status = true;
        hw.now = PERIOD;
        assert!(claim.claim(0, &mut hw));
        match fired_when_late {
            // Equality compare: each write finds the counter past it, four tries.
            false => assert_eq!(hw.writes.len(), 1 + 4, "{:?}", hw.writes),
            // A fire at the write (an emulated HPET): it is claimed as ours, no rewrite.
            true => {
                assert_eq!(hw.writes.len(), 2, "{:?}", hw.writes);
                assert!(claim.claim(0, &mut hw));
            }
        }
    }
}

/// Parked (disarmed), a fire is claimed on every CPU and no next one is programmed.
#[test]
fn disarmed_no_next_fire_is_programmed() {
    let claim = NmiClaim::new();
    let mut fire_at = None;
    let mut hpet = Hpet {
        status: false,
        programming: 0,
        fires: 0,
    };
    claim.arm(PERIOD, true, &mut Hw { now: 0, hpet: &mut hpet, fire_at: &mut fire_at });
    assert_eq!(fire_at, Some((PERIOD, 1)));
    claim.disarm();
    fire_at = None;
    hpet.status = true;
    for cpu in 0..4 {
        assert!(claim.claim(cpu, &mut Hw { now: PERIOD + 10, hpet: &mut hpet, fire_at: &mut fire_at }));
        assert!(!claim.claim(cpu, &mut Hw { now: PERIOD + 20, hpet: &mut hpet, fire_at: &mut fire_at }));
    }
    assert_eq!(fire_at, None, "parked: no next fire");
}

/// The one order the claim cannot tell from its own NMI (as `nmi_claim.rs`'s "foreign NMI
/// between a fire and a CPU's own NMI"), followed by x86's merging: CPU 0 takes a foreign NMI
/// after the fire and before its own NMI of it, and claims the fire on it (it is the last CPU,
/// so the next fire is programmed); if its own NMI of the fire is then still pending when the
/// next fire's comes, x86 merges the two, and the foreign NMI has been taken for one of ours.
/// Needs an NMI pending for most of a period (under TCG, a vCPU descheduled); on hardware, an
/// NMI is pending for about a microsecond.
#[test]
fn an_early_claim_and_a_merged_pair() {
    let claim = NmiClaim::new();
    let mut fire_at = None;
    let mut hpet = Hpet {
        status: false,
        programming: 0,
        fires: 0,
    };
    claim.arm(PERIOD, true, &mut Hw { now: 0, hpet: &mut hpet, fire_at: &mut fire_at });
    hpet.status = true; // fire 1
    // The foreign NMI, claimed as fire 1's; the next fire programmed.
    assert!(claim.claim(0, &mut Hw { now: PERIOD + 5, hpet: &mut hpet, fire_at: &mut fire_at }));
    assert_eq!(fire_at.map(|(t, _)| t), Some(2 * PERIOD));
    // Fire 1's own NMI, taken at once: reported (the foreign one's report, on this frame).
    assert!(!claim.claim(0, &mut Hw { now: PERIOD + 9, hpet: &mut hpet, fire_at: &mut fire_at }));
    // Had it stayed pending until fire 2's NMI, the two would be one NMI, claimed as fire 2's.
}
