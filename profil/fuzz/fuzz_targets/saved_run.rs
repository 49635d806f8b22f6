//! `profil::saved::parse` on any bytes (`--load FILE`): an error or a run, never a panic; a
//! run it accepts is saved again to the same run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profil::saved;

fuzz_target!(|data: &[u8]| {
    if let Ok(run) = saved::parse(data) {
        let again = saved::render(&run.run, &run.file, run.call_graph, run.children);
        let back = saved::parse(&again).expect("a saved run reads back");
        assert_eq!(saved::render(&back.run, &back.file, back.call_graph, back.children), again);
    }
});
