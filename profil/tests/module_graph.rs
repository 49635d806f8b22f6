//! profil's modules import one another one way: no module reaches, through its imports, back
//! to itself. A module here is a file of `src/` or a folder of it (`run/`, `exports/`,
//! `backend/`) as one; an import is a `crate::NAME` path in code (comments are not read).
//! docs/internals.md draws the graph, as this test makes it. And the sections and exports only
//! read a run: which modules may build or change a profile is checked here too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, with the top-level module it belongs to.
fn files(dir: &Path, module: Option<&str>, out: &mut Vec<(String, std::path::PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            files(&path, Some(module.unwrap_or(&name)), out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((module.unwrap_or(&name).to_string(), path));
        }
    }
}

/// The top-level modules each module's code names (`crate::NAME`), itself left out.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut list = Vec::new();
    files(src, None, &mut list);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in list {
        let text = std::fs::read_to_string(&path).unwrap();
        let edges = graph.entry(module.clone()).or_default();
        for line in text.lines().map(str::trim_start).filter(|l| !l.starts_with("//")) {
            for (at, _) in line.match_indices("crate::") {
                let name: String = line[at + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != module {
                    edges.insert(name);
                }
            }
        }
    }
    graph
}

/// A circle of `graph`, if it has one: the modules on it, in order.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn profils_modules_import_one_another_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(g.len() > 20 && g["run"].contains("exports"), "{g:?}");
    assert_eq!(circle(&g), None);
}

/// The other crates' modules too (the event layout, the core, the samplers, the symbolizer,
/// the daemon): a circle there is as hard to read as one here.
#[test]
fn every_crate_s_modules_import_one_another_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["prof-events", "prof-core", "prof-samplers", "prof-objects", "profd"] {
        let g = graph(&root.join(krate).join("src"));
        assert!(g.len() > 2, "{krate}: {g:?}");
        assert_eq!(circle(&g), None, "{krate}");
    }
}

#[test]
fn the_check_finds_a_circle() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
    ]
    .into();
    assert_eq!(circle(&g), Some(vec!["a".to_string(), "b".to_string(), "c".to_string()]));
    let line: BTreeMap<String, BTreeSet<String>> = [("a".to_string(), BTreeSet::from(["b".to_string()])), ("b".to_string(), BTreeSet::new())].into();
    assert_eq!(circle(&line), None);
}

/// `graph` without the imports another path implies (its transitive reduction): a module
/// stands above all it reaches, and the picture draws only what no longer path says.
fn reduced(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    fn reach(node: &str, graph: &BTreeMap<String, BTreeSet<String>>, seen: &mut BTreeSet<String>) {
        for next in graph.get(node).into_iter().flatten() {
            if seen.insert(next.clone()) {
                reach(next, graph, seen);
            }
        }
    }
    graph
        .iter()
        .map(|(node, edges)| {
            let implied: BTreeSet<String> = edges
                .iter()
                .flat_map(|e| {
                    let mut seen = BTreeSet::new();
                    reach(e, graph, &mut seen);
                    seen
                })
                .collect();
            (node.clone(), edges.iter().filter(|e| !implied.contains(*e) && graph.contains_key(*e)).cloned().collect())
        })
        .collect()
}

/// The graph as a Mermaid flowchart, an arrow from each module to what it imports (`lib.rs`,
/// which only declares the modules, and `main.rs`, which calls the library, left out).
fn mermaid(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    let mut out = String::from("```mermaid\nflowchart TD\n");
    for (node, edges) in graph.iter().filter(|(n, _)| *n != "lib" && *n != "main") {
        if edges.is_empty() {
            out.push_str(&format!("  {node}\n"));
        }
        for e in edges {
            out.push_str(&format!("  {node} --> {e}\n"));
        }
    }
    out.push_str("```\n");
    out
}

/// docs/internals.md's picture is the code's graph (`UPDATE_EXPECT=1` draws it again).
#[test]
fn the_internals_picture_is_the_code_s_graph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let picture = mermaid(&reduced(&graph(&root.join("src"))));
    let doc = root.join("../docs/internals.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    let marker = "<!-- the module graph: profil/tests/module_graph.rs -->\n";
    let start = text.find(marker).expect("the marker in docs/internals.md") + marker.len();
    let open = "```mermaid\n";
    assert!(text[start..].starts_with(open), "a Mermaid block after the marker in docs/internals.md");
    let len = open.len() + text[start + open.len()..].find("```\n").expect("the block's end") + 4;
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&doc, format!("{}{picture}{}", &text[..start], &text[start + len..])).unwrap();
    } else {
        assert_eq!(&text[start..start + len], picture, "docs/internals.md's module graph is not the code's: UPDATE_EXPECT=1 draws it again");
    }
}

#[test]
fn the_picture_leaves_out_what_a_longer_path_implies() {
    let g: BTreeMap<String, BTreeSet<String>> = [("a", vec!["b", "c"]), ("b", vec!["c"]), ("c", vec![])]
        .into_iter()
        .map(|(n, e)| (n.to_string(), e.into_iter().map(String::from).collect()))
        .collect();
    assert_eq!(mermaid(&reduced(&g)), "```mermaid\nflowchart TD\n  a --> b\n  b --> c\n  c\n```\n");
}

/// Whether `text`, a module's code with its tests left out (from its first `#[cfg(test)]`),
/// builds or changes a profile: `Profile`'s parts are private, so a module can do that only
/// through `parts_mut`, `into_parts` or a `Parts { .. }` of its own.
fn changes_a_profile(text: &str) -> bool {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines().map(str::trim_start).filter(|l| !l.starts_with("//")).any(|l| {
        l.contains(".parts_mut()") || l.contains(".into_parts()") || l.contains("Parts {")
    })
}

/// The sections and exports only read a run: the modules that make or change a profile are
/// the backends, the filters, the model itself, the run's steps and the saved format.
#[test]
fn only_the_run_s_makers_change_a_profile() {
    let mut list = Vec::new();
    files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), None, &mut list);
    let makers: BTreeSet<String> =
        list.iter().filter(|(_, path)| changes_a_profile(&std::fs::read_to_string(path).unwrap())).map(|(m, _)| m.clone()).collect();
    assert_eq!(makers, ["backend", "filter", "profile", "run", "saved"].map(String::from).into(), "{list:?}");
}

#[test]
fn the_check_finds_a_change() {
    assert!(changes_a_profile("fn f(p: &mut Profile) {\n    p.parts_mut().lost = 0;\n}\n"));
    assert!(changes_a_profile("let p = Profile::from(Parts { pid: 1, ..Default::default() });"));
    assert!(!changes_a_profile("fn f(p: &Profile) -> u64 {\n    p.lost()\n}\n#[cfg(test)]\nmod tests {\n    fn g(mut p: Profile) { p.parts_mut().lost = 1; }\n}\n"));
    assert!(!changes_a_profile("// p.parts_mut() would change it\nfn f() {}\n"));
}
