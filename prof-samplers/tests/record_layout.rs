//! The kernel's record layout's version as the Redox sampler meets it (fake `debug:` files): a
//! ring of a newer major version ends the session's reading with an error that says so; a
//! session's start record of this version is read as any record.

use prof_core::sampler::Sampler;
use prof_events::{Event, Start, Version};
use prof_samplers::fake_debug_files::FakeDebugFiles;
use prof_samplers::upstream_kernel::UpstreamSampler;

/// `start all` on a kernel of typed records with two CPUs.
fn sampler() -> UpstreamSampler<FakeDebugFiles> {
    let files = FakeDebugFiles { typed_records: true, rings: vec![Vec::new(); 2], tick: (1000, 1000), ..FakeDebugFiles::default() };
    let mut s = UpstreamSampler::new(files);
    s.start_all(None).expect("a session of typed records");
    s
}

fn start(cpu: u32, version: Version) -> Event {
    Event::Start(Start { cpu, time: 1, version, clock_hz: Some(1_000_000_000), session: 6 })
}

#[test]
fn a_ring_of_a_newer_major_version_is_an_error_that_says_so() {
    let mut s = sampler();
    s.files().record(1, start(1, Version { major: Version::OURS.major + 1, minor: 0 }));
    let e = s.collect().expect_err("a newer layout is refused");
    assert!(e.to_string().contains("newer layout"), "{e}");
}

#[test]
fn a_start_of_this_version_is_read_as_any_record() {
    let mut s = sampler();
    s.files().record(0, start(0, Version::OURS));
    s.files().record(1, start(1, Version { minor: Version::OURS.minor + 1, ..Version::OURS }));
    s.files().sample(0, 21, 0x40_1000, &[]);
    let batch = s.collect().expect("read");
    assert_eq!(batch.lost, 0);
}
