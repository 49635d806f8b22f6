//! `--lines`: each sampled address's innermost source line and function (inlined code
//! included) are exactly what `addr2line -i -f -C` says, and the report sums them by line.

mod common;

use std::process::Command;

use common::*;

/// `addr2line -i -f -C -e FILE ADDR`'s first frame: (function, file, line); `None` for `??`.
fn addr2line(file: &std::path::Path, address: u64) -> Option<(String, String, u32)> {
    let o = Command::new("addr2line")
        .args(["-i", "-f", "-C", "-e"])
        .arg(file)
        .arg(format!("{address:#x}"))
        .output()
        .expect("addr2line (binutils)");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut lines = text.lines();
    let function = lines.next()?.to_string();
    // `file:line`, maybe followed by ` (discriminator N)`.
    let place = lines.next()?.split(" (").next()?.to_string();
    let (file, line) = place.rsplit_once(':')?;
    let line: u32 = line.parse().ok()?;
    (function != "??" && file != "??").then(|| (function, file.to_string(), line))
}

#[test]
fn every_sampled_line_and_inline_frame_is_addr2lines() {
    let _s = session();
    let dir = scratch("lines");
    let exe = compile("cc", "inline.c", &["-O2", "-g"], &dir);
    let json = dir.join("p.json");
    let o = profil(&["-f", "--lines=all", "--json", json.to_str().unwrap(), exe.to_str().unwrap(), "300000000"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let reader = profil::lines::LineReader::open(&exe);
    let mut checked = 0;
    for s in doc["samples"].as_array().unwrap().iter().filter(|s| s["object"].is_null()) {
        let address = s["object_address"].as_u64().unwrap();
        let ours = reader.locate(address).map(|l| (l.function, l.file, l.line));
        assert_eq!(ours, addr2line(&exe, address), "{address:#x}");
        checked += 1;
    }
    assert!(checked >= 3, "{checked} addresses checked:\n{out}");
    // The report: the inlined helpers' lines carry the time, named by their functions.
    let section = &out[out.find("Source lines (top ").expect("the lines section")..];
    assert!(section.lines().any(|l| l.contains("inline.c:") && (l.ends_with("  square") || l.ends_with("  mix"))), "{section}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_debug_info_samples_have_no_line() {
    let _s = session();
    let dir = scratch("lines-nodebug");
    let exe = compile("cc", "inline.c", &["-O2", "-g0"], &dir);
    let o = profil(&["-f", "--lines", exe.to_str().unwrap(), "50000000"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("Source lines (top 0 of 0; ") && out.contains("(no line information)"), "{out}");
    assert_eq!(profil(&["--lines=some", exe.to_str().unwrap()]).status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}
