//! `--speedscope FILE`: the file opens in speedscope's own page (the `speedscope` npm package's
//! build, `dist/release`, as `npx speedscope FILE` serves it), in a real browser (Chromium,
//! headless), served from this test over HTTP on the loopback: the page shows the profile's
//! name, and its sandwich view the program's functions; its time-order view of a thread over
//! time, hovered along a row as a user would (playwright-core driving Chromium,
//! `tests/browser/time_order_row.js`), shows fib's phases left to right where fib's own clock
//! puts them.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Where `.ci/run` installs speedscope's page (or `SPEEDSCOPE_DIST`).
fn speedscope_dist() -> Option<PathBuf> {
    let dir = match std::env::var_os("SPEEDSCOPE_DIST") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/profil-ci/speedscope/node_modules/speedscope/dist/release"),
    };
    dir.join("index.html").is_file().then_some(dir)
}

/// Serve the files of `dir` and the profile at `/profile.json` until the test ends; the
/// address.
fn serve(dir: PathBuf, profile: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = String::new();
            let _ = BufReader::new(&stream).read_line(&mut request);
            let path = request.split_whitespace().nth(1).unwrap_or("/").split(['?', '#']).next().unwrap_or("/").to_string();
            let body = match path.as_str() {
                "/profile.json" => Some(profile.clone()),
                p => {
                    let name = Path::new(p.trim_start_matches('/'));
                    let safe = name.components().all(|c| matches!(c, std::path::Component::Normal(_)));
                    safe.then(|| std::fs::read(dir.join(name)).ok()).flatten()
                }
            };
            let kind = match Path::new(&path).extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html",
                Some("js") => "text/javascript",
                Some("css") => "text/css",
                Some("json") => "application/json",
                Some("wasm") => "application/wasm",
                Some("png") => "image/png",
                _ => "application/octet-stream",
            };
            let _ = match body {
                Some(b) => stream
                    .write_all(format!("HTTP/1.0 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n", b.len()).as_bytes())
                    .and_then(|_| stream.write_all(&b)),
                None => stream.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
            };
        }
    });
    address
}

/// The page speedscope shows for the profile served at `address` in `view`, as headless
/// Chromium leaves its document.
fn page_dom(address: &str, view: &str) -> String {
    let url = format!("{address}/index.html#profileURL={address}/profile.json&view={view}");
    let o = Command::new("chromium")
        .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000", "--dump-dom", &url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One browser at a time: a second would take the CPU of the program the other profiles.
static BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn speedscope_renders_the_file_in_a_browser() {
    let _b = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("speedscope");
    let file = dir.join("fib.speedscope.json");
    let fib = fib_bin();
    let o = {
        let _s = session();
        profil(&["-f", "-g", "--speedscope", file.to_str().unwrap(), fib.to_str().unwrap(), "30", "2000"])
    };
    assert!(o.status.success(), "{}", text(&o).1);
    let profile = std::fs::read(&file).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&profile).unwrap();
    assert_eq!(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
    let name = doc["profiles"][0]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("fib (pid ") && name.ends_with("): CPU samples merged by stack, not in time order"), "{name}");
    let weights: u64 = doc["profiles"][0]["weights"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap()).sum();
    assert_eq!(doc["profiles"][0]["endValue"].as_u64(), Some(weights));

    let Some(dist) = speedscope_dist() else {
        skip("speedscope's page is not installed (.ci/run: npm install speedscope into ~/.cache/profil-ci/speedscope, or SPEEDSCOPE_DIST)");
        return;
    };
    if !installed("chromium", "chromium") {
        return;
    }
    // The by-stack profile, opened as a user picks it from the menu.
    let profiles = doc["profiles"].as_array().unwrap();
    let over_time = profiles.iter().position(|p| p["type"] == "evented").expect("an evented profile");
    let mut by_stack = doc.clone();
    by_stack["activeProfileIndex"] = 0.into();
    let address = serve(dist.clone(), serde_json::to_vec(&by_stack).unwrap());
    let page = |view: &str| page_dom(&address, view);
    // The page took the file: its title, and the profile's name in the toolbar.
    let dom = page("time-ordered");
    assert!(dom.contains("<title>profil: fib - speedscope</title>"), "{dom}");
    assert!(dom.contains(&name), "{dom}");
    // The sandwich view lists the functions (the flame graphs are drawn on canvases).
    let dom = page("sandwich");
    for function in ["loop", "overflow", "main"] {
        assert!(dom.contains(&format!(">{function}<")), "{function} not in the sandwich table: {dom}");
    }

    // The thread over time (an evented profile), which the file opens on: speedscope reads
    // it, and its sandwich view has the program's functions.
    let name = profiles[over_time]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("fib thread ") && name.ends_with(": over time"), "{name}");
    assert_eq!(doc["activeProfileIndex"], over_time, "the file opens on the thread over time");
    let address = serve(dist, profile);
    let page = |view: &str| page_dom(&address, view);
    let dom = page("time-ordered");
    assert!(dom.contains(&name), "{name} not in the page: {dom}");
    let dom = page("sandwich");
    for function in ["fib", "loop", "overflow"] {
        assert!(dom.contains(&format!(">{function}<")), "{function} not in the sandwich table of {name}: {dom}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where `.ci/run` installs playwright-core (beside speedscope), for NODE_PATH.
fn node_modules() -> Option<PathBuf> {
    let dir = speedscope_dist()?.join("../../..").canonicalize().ok()?;
    dir.join("playwright-core").is_dir().then_some(dir)
}

#[test]
fn the_time_order_view_shows_fib_s_phases_left_to_right_at_their_times() {
    let _b = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("speedscope-time-order");
    let file = dir.join("fib.speedscope.json");
    let o = {
        let _s = session();
        Command::new(profil_bin())
            .args(["-f", "-g", "--report", "/dev/null", "--speedscope", file.to_str().unwrap()])
            .arg(fib_bin())
            .args(["36", "3000"])
            .env("FIB_TIMINGS", "1")
            .output()
            .unwrap()
    };
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let phase = |name: &str| -> f64 { field(&err, &format!("fib.time.{name}:")).parse().unwrap() };
    let (fib, lp) = (phase("fib"), phase("loop"));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let over_time = doc["profiles"].as_array().unwrap().iter().position(|p| p["type"] == "evented").expect("an evented profile");
    assert_eq!(doc["activeProfileIndex"], over_time, "the file opens on the thread over time");
    // The view spans the thread's profile, 0 to its end (ns).
    let span = doc["profiles"][over_time]["endValue"].as_f64().unwrap() / 1e9;

    let (Some(dist), Some(modules)) = (speedscope_dist(), node_modules()) else {
        skip("speedscope's page or playwright-core is not installed (.ci/run: npm install speedscope playwright-core into ~/.cache/profil-ci/speedscope)");
        return;
    };
    if !installed("chromium", "chromium") || !installed("node", "nodejs") {
        return;
    }
    let address = serve(dist, serde_json::to_vec(&doc).unwrap());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/time_order_row.js");
    let url = format!("{address}/index.html#profileURL={address}/profile.json&view=time-ordered");
    let o = Command::new("node").arg(&script).args([url.as_str(), "main", "200"]).env("NODE_PATH", &modules).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let row: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let width = row["width"].as_f64().unwrap();
    // main's callees under the pointer, left to right, each phase from the first point it is
    // under to the last (s); between two, points where the thread was not sampled (a busy
    // machine took its CPU), or fib's own printing.
    let mut phases: Vec<(&str, f64, f64)> = Vec::new();
    for point in row["names"].as_array().unwrap() {
        let Some(name) = point[1].as_str().filter(|n| ["fib", "loop", "overflow"].contains(n)) else { continue };
        let at = point[0].as_f64().unwrap() / width * span;
        match phases.last_mut() {
            Some(p) if p.0 == name => p.2 = at,
            _ => phases.push((name, at, at)),
        }
    }
    let names: Vec<&str> = phases.iter().map(|p| p.0).collect();
    assert_eq!(names, ["fib", "loop", "overflow"], "{row}");
    // Each phase begins where fib's clock puts it: after the last point of the phase before and
    // by the first of its own, within 2 % of the run and a step of the hover (0.5 %).
    for (pair, begins) in phases.windows(2).zip([fib, fib + lp]) {
        let (before, first) = (pair[0].2, pair[1].1);
        let slack = 0.025 * span;
        assert!(
            before - slack <= begins && begins <= first + slack,
            "{} begins at {begins:.3} s by fib's clock, in the view between {before:.3} and {first:.3} s (span {span:.3} s): {row}",
            pair[1].0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
