//! `kprof::parse_command` of `sys:prof_ctl` writes: never panics; what it accepts is a
//! command the profiler can take, and reads back the same when written canonically.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(c) = kprof::parse_command(data) else { return };
    let canonical = match c {
        kprof::Command::Stop => "stop\n".to_string(),
        kprof::Command::Start { pid, capacity, from, children, rate, stacks } => {
            assert!((1..=kprof::MAX_CAPACITY).contains(&capacity));
            let when = match from {
                kprof::CountFrom::Now => "",
                kprof::CountFrom::Exec => " exec",
            };
            let rate = match rate {
                Some(hz) => {
                    assert!((kprof::MIN_RATE..=kprof::MAX_RATE).contains(&hz));
                    format!(" rate={hz}")
                }
                None => String::new(),
            };
            assert!(stacks <= kprof::MAX_STACKS);
            let tree = if children { " children" } else { "" };
            // Pid 0 is `start all`: every process, counted now, no table of its own to size.
            match pid {
                0 => {
                    assert_eq!((capacity, from, children), (kprof::DEFAULT_CAPACITY, kprof::CountFrom::Now, false));
                    format!("start all{rate} stacks={stacks}\n")
                }
                _ => format!("start {pid:#x} {capacity}{rate}{tree}{when} stacks={stacks}\n"),
            }
        }
    };
    assert_eq!(kprof::parse_command(canonical.as_bytes()), Ok(c));
});
