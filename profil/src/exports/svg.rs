//! `--svg FILE`: an interactive flame graph (search, zoom, a title per frame with its samples),
//! rendered by `inferno` from the same folded stacks `--collapsed` writes.

use crate::words::count;
use crate::exports::{collapsed, Analysis};
use crate::flat::FlatProfile;
use crate::stacks::StackProfile;

/// The SVG of a run: the program's profile; with `--children`, every process's, each under
/// its own root frame.
pub fn render_all(a: &Analysis) -> std::io::Result<Vec<u8>> {
    if a.run.profile.clock().off_cpu.is_some() {
        return by_the_clock(a);
    }
    if a.processes.is_empty() {
        return render(&a.run.program, a.flat, a.stacks);
    }
    let (mut total, mut truncated) = (0u64, 0u64);
    let every = std::iter::once((a.flat, a.stacks)).chain(a.processes.iter().map(|c| (&c.flat, c.stacks.as_ref())));
    for (flat, stacks) in every {
        let (n, cut) = stacks.map_or((flat.total, 0), |sp| (sp.total, sp.truncated));
        (total, truncated) = (total.saturating_add(n), truncated.saturating_add(cut));
    }
    let processes = a.processes.len() + 1;
    let subtitle = Some(subtitle(total, truncated, a.stacks.is_some()) + &format!(", {processes} processes"));
    from_folded(&a.run.program, &collapsed::render_all(a), subtitle)
}

/// The SVG of the profile of `program`.
pub fn render(program: &str, flat: &FlatProfile, stacks: Option<&StackProfile>) -> std::io::Result<Vec<u8>> {
    let (total, truncated) = stacks.map_or((flat.total, 0), |sp| (sp.total, sp.truncated));
    from_folded(program, &collapsed::render(program, flat, stacks), Some(subtitle(total, truncated, stacks.is_some())))
}

/// What the graph holds: its samples, with call stacks or not, how many cut short.
fn subtitle(total: u64, truncated: u64, with_stacks: bool) -> String {
    match (with_stacks, truncated) {
        (true, 0) => format!("{} with call stacks", count(total, "sample")),
        (true, t) => format!("{} with call stacks, {t} of them truncated", count(total, "sample")),
        (false, _) => format!("{}, one frame each (profil -g records call stacks)", count(total, "sample")),
    }
}

/// `--off-cpu`: the run by the clock, in microseconds (the folded file's lines), the waits'
/// `[off-CPU: …]` frames drawn blue among the CPU's warm colours.
fn by_the_clock(a: &Analysis) -> std::io::Result<Vec<u8>> {
    let folded = collapsed::render_all(a);
    let waited: u64 = a.waits.iter().map(|w| w.ns).sum();
    let subtitle = format!(
        "by the clock, in microseconds: on a CPU ({}), and off it in blue frames [off-CPU: call] ({:.3} s of waits)",
        count(a.stacks.map_or(a.flat.total, |sp| sp.total), "sample"),
        waited as f64 / 1e9
    );
    let mut palette = inferno::flamegraph::color::PaletteMap::default();
    for w in a.waits {
        palette.insert(collapsed::off_cpu_frame(&w.call), inferno::flamegraph::color::Color { r: 80, g: 130, b: 230 });
    }
    draw(&a.run.program, &folded, Some(subtitle), "us", Some(&mut palette))
}

/// `--diff`: a differential flame graph of this run against the base (inferno's differential
/// mode): frames as wide as this run's samples, red where this run has more than the base
/// (scaled to this run's total), blue where fewer.
pub fn render_diff(a: &Analysis, base: &crate::compare::Base) -> std::io::Result<Vec<u8>> {
    let folded = collapsed::render_diff(a, base)?;
    let subtitle = format!(
        "compared with {}: red where this run has more samples, blue where fewer ({} here, {} there scaled to this run's)",
        base.file,
        a.flat.total,
        base.flat.total
    );
    draw(&a.run.program, &folded, Some(subtitle), "samples", None)
}

/// The SVG of folded stacks.
fn from_folded(program: &str, folded: &str, subtitle: Option<String>) -> std::io::Result<Vec<u8>> {
    draw(program, folded, subtitle, "samples", None)
}

fn draw(
    program: &str,
    folded: &str,
    subtitle: Option<String>,
    unit: &str,
    palette: Option<&mut inferno::flamegraph::color::PaletteMap>,
) -> std::io::Result<Vec<u8>> {
    let mut options = inferno::flamegraph::Options::default();
    options.palette_map = palette;
    let name = program.rsplit('/').next().unwrap_or(program);
    options.title = format!("profil: {name}");
    options.subtitle = subtitle;
    options.count_name = unit.into();
    // Colours from the names, not random: the same profile gives the same file.
    options.hash = true;
    if folded.is_empty() {
        // inferno refuses an empty profile; an empty run still gets a valid picture.
        return Ok(format!(
            "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"600\" height=\"60\" \
             xmlns=\"http://www.w3.org/2000/svg\"><text x=\"300\" y=\"30\" text-anchor=\"middle\">{}: no samples</text></svg>\n",
            options.title.replace('&', "&amp;").replace('<', "&lt;")
        )
        .into_bytes());
    }
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_their_samples() {
        let sp = crate::stacks::tests::built(crate::stacks::tests::symbolizer(), &crate::stacks::tests::profile()).0.unwrap();
        let flat = FlatProfile { entries: Vec::new(), total: 9, kernel: 0, with_totals: true, whole: None };
        // (tests/call_stacks.rs reads real runs' flame graphs with an XML parser.)
        let svg = String::from_utf8(render("/bin/abc", &flat, Some(&sp)).unwrap()).unwrap();
        for want in ["main (8 samples, 88.89%)", "a (6 samples, 66.67%)", "b (2 samples, 22.22%)", "[truncated] (1 samples, 11.11%)"] {
            assert!(svg.contains(&format!("<title>{want}</title>")), "{want} not in {svg}");
        }
        let empty = render("/bin/abc", &FlatProfile { entries: Vec::new(), total: 0, kernel: 0, with_totals: false, whole: None }, None).unwrap();
        let empty = String::from_utf8(empty).unwrap();
        assert!(empty.contains("profil: abc: no samples") && !empty.contains("<title>"), "{empty}");
    }
}
