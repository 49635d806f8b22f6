//! The Redox packaging is consistent with this repository: the init unit says what init needs
//! to start profd as `prof:`, and each cookbook recipe builds a package of this workspace and
//! copies files that exist. (The cookbook itself is not run here; docs/redox.md.)

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn toml_file(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_init_unit_starts_profd_as_the_prof_scheme_on_x86_64() {
    let unit = toml_file(&root().join("profd/init.d/20_profd.service"));
    assert_eq!(unit["service"]["cmd"].as_str(), Some("profd"));
    assert_eq!(unit["service"]["type"]["scheme"].as_str(), Some("prof"));
    assert_eq!(unit["unit"]["condition_architecture"].as_array().unwrap(), &vec![toml::Value::from("x86_64")]);
    // Only the keys init's UnitInfo / service know (init rejects unknown ones).
    for key in unit["unit"].as_table().unwrap().keys() {
        assert!(["description", "condition_architecture", "requires_weak"].contains(&key.as_str()), "{key}");
    }
}

/// A recipe's text and its parsed TOML.
fn recipe(path: &str) -> (String, toml::Table) {
    let path = root().join("recipes").join(path).join("recipe.toml");
    (std::fs::read_to_string(&path).unwrap(), toml_file(&path))
}

/// Upstream's form for recipes nobody has cooked yet: `#TODO not compiled or tested`, then
/// what they need.
fn assert_upstream_header(name: &str, text: &str) {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("#TODO not compiled or tested"), "{name}");
    assert!(lines.next().unwrap().starts_with("#TODO require "), "{name}: the reason on the second line");
}

#[test]
fn one_recipe_builds_profd_and_profil_and_installs_their_files() {
    let (text, r) = recipe("wip/dev/perf/profil");
    assert_upstream_header("profil", &text);
    // custom: it installs files too; cookbook_cargo_packages builds statically, in one target dir.
    assert_eq!(r["build"]["template"].as_str(), Some("custom"));
    let script = r["build"]["script"].as_str().unwrap();
    assert!(script.contains("cookbook_cargo_packages profd profil\n"), "{script}");
    for copied in ["profd/init.d/", "profd/examples/prof-session.sh"] {
        assert!(script.contains(&format!("${{COOKBOOK_SOURCE}}/{copied}")), "{copied}");
        assert!(root().join(copied).exists(), "{copied}");
    }
    // The source: a branch beside the pinned rev, and a placeholder nobody can miss.
    let source = r["source"].as_table().unwrap();
    assert_eq!(source["branch"].as_str(), Some("main"));
    assert_eq!(source["rev"].as_str().unwrap().len(), 40);
    assert!(source["git"].as_str().unwrap().contains("OWNER"));
    assert!(text.contains("# PLACEHOLDER until this repository is published"), "{text}");
}

#[test]
fn the_test_program_recipe_shares_the_source_and_keeps_its_symbols() {
    let (text, r) = recipe("wip/dev/perf/profil-fib");
    assert_upstream_header("profil-fib", &text);
    assert_eq!(r["source"]["same_as"].as_str(), Some("../profil"));
    assert_eq!(r["build"]["template"].as_str(), Some("custom"));
    let script = r["build"]["script"].as_str().unwrap();
    assert!(script.contains("cookbook_cargo_packages fib iowork\n") && script.contains("COOKBOOK_NOSTRIP=true"), "{script}");
    for (binary, installed) in [("fib", "profil-fib"), ("iowork", "profil-iowork"), ("iowork-relay", "profil-iowork-relay")] {
        assert!(script.contains(&format!("/usr/bin/{binary}\" \"${{COOKBOOK_STAGE}}/usr/bin/{installed}\"")), "{script}");
    }
    // The relay daemon docs/redox.md uses, with the init unit that starts it as relay:.
    let unit_path = "iowork/init.d/30_profil-relay.service";
    assert!(script.contains(&format!("cp -v \"${{COOKBOOK_SOURCE}}/{unit_path}\" \"${{COOKBOOK_STAGE}}/usr/lib/init.d/\"")), "{script}");
    let unit = toml_file(&root().join(unit_path));
    assert_eq!(unit["service"]["cmd"].as_str(), Some("profil-iowork-relay"));
    assert_eq!(unit["service"]["type"]["scheme"].as_str(), Some("relay"));
    assert_eq!(unit["service"]["args"].as_array().unwrap(), &vec![toml::Value::from("/tmp")]);
    for key in unit["service"].as_table().unwrap().keys() {
        assert!(["cmd", "args", "envs", "inherit_envs", "type"].contains(&key.as_str()), "{key}");
    }
    let iowork = toml_file(&root().join("iowork/Cargo.toml"));
    let bins: Vec<&str> = iowork["bin"].as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert!(bins.contains(&"iowork-relay"), "{bins:?}");
    // The cookbook's environment already builds with frame pointers on 64-bit targets.
    assert!(!script.contains("RUSTFLAGS"), "{script}");
    assert_eq!(r["package"]["dependencies"].as_array().unwrap(), &vec![toml::Value::from("profil")]);
    // fib and iowork are packages of this workspace.
    for package in ["fib", "iowork"] {
        let manifest = toml_file(&root().join(package).join("Cargo.toml"));
        assert_eq!(manifest["package"]["name"].as_str(), Some(package));
    }
}

/// docs/redox.md's kernel recipe applies kernel-patch's two series, the fixes then the
/// profiling series (`events`), every patch of each in the order of its number (as `git am`
/// takes them).
#[test]
fn the_documented_kernel_recipe_applies_both_series_in_order() {
    let series = |dir: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(root().join("kernel-patch").join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".patch"))
            .collect();
        names.sort();
        // Numbered from 0001 without a gap, as `git format-patch` numbers a series.
        let numbers: Vec<String> = names.iter().map(|name| name[..4].to_string()).collect();
        let expected: Vec<String> = (1..=names.len()).map(|n| format!("{n:04}")).collect();
        assert!(!names.is_empty() && numbers == expected, "{dir}: {names:?}");
        names.into_iter().map(|name| format!("\"{dir}/{name}\"")).collect()
    };
    let (fixes, events) = (series("fixes"), series("events"));
    assert!(events.len() >= 7, "{events:?}");
    let doc = std::fs::read_to_string(root().join("docs/redox.md")).unwrap();
    let line = doc.lines().find(|l| l.trim_start().starts_with("patches = [")).expect("a patches line");
    let listed: String = doc[doc.find(line).unwrap()..].split(']').next().unwrap().split_whitespace().collect();
    assert_eq!(listed.trim_end_matches(','), format!("patches=[{}", [fixes, events].concat().join(",")));
    assert!(doc.contains("`kernel = \"ignore\"`, `profiling-kernel = \"source\"`"), "upstream's profiling kernel, built from that source");
}

/// Every recipe.toml under `dir`, found as the Redox cookbook finds them
/// (`src/staged_pkg.rs`: `ignore::Walk::new("recipes")`, the directory name is the recipe's).
fn cookbook_recipe_dirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for entry in ignore::Walk::new(dir).flatten() {
        if entry.file_name() == "recipe.toml" {
            let recipe_dir = entry.path().parent().unwrap();
            found.push((recipe_dir.file_name().unwrap().to_string_lossy().into_owned(), recipe_dir.to_path_buf()));
        }
    }
    found.sort();
    found
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A Redox tree that is not a git checkout, with our recipes copied in and this repository
/// fetched as their source: the cookbook sees each recipe once. Without the repository's
/// `.ignore` (at its root, so that it lands in `source/` and nowhere else) the copies inside
/// `source/recipes/` would shadow them ("recipe … has two or more entries").
#[test]
fn recipes_inside_the_fetched_source_do_not_shadow_the_real_ones() {
    let tree = std::env::temp_dir().join(format!("profd-cookbook-walk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tree);
    let recipes = tree.join("recipes");
    let ours = root().join("recipes");
    copy_tree(&ours.join("wip/dev/perf"), &recipes.join("wip/dev/perf"));
    // The fetched source: this repository as the cookbook checks it out (its root's .ignore
    // and its recipes folder are what matter here).
    let source = recipes.join("wip/dev/perf/profil/source");
    copy_tree(&ours, &source.join("recipes"));
    std::fs::copy(root().join(".ignore"), source.join(".ignore")).unwrap();
    let names = |found: &[(String, PathBuf)]| found.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    let found = cookbook_recipe_dirs(&recipes);
    assert_eq!(names(&found), ["profil", "profil-fib"], "{found:?}");
    assert!(found.iter().all(|f| !f.1.starts_with(&source)), "{found:?}");
    // The negative control: the same tree without our .ignore has the duplicates.
    std::fs::remove_file(source.join(".ignore")).unwrap();
    let found = cookbook_recipe_dirs(&recipes);
    assert_eq!(names(&found), ["profil", "profil", "profil-fib", "profil-fib"]);
    std::fs::remove_dir_all(&tree).unwrap();
}

/// Copying this repository's whole `recipes/` folder over a Redox tree's (the quickest way to
/// add ours) hides none of the tree's own recipes: no ignore file travels with the folder.
#[test]
fn copying_the_whole_recipes_folder_into_a_redox_tree_hides_no_recipe() {
    let tree = std::env::temp_dir().join(format!("profd-cookbook-copy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tree);
    let recipes = tree.join("recipes");
    for upstream in ["core/kernel", "core/relibc", "wip/dev/perf/redox-kprofiling"] {
        std::fs::create_dir_all(recipes.join(upstream)).unwrap();
        std::fs::write(recipes.join(upstream).join("recipe.toml"), "[build]\ntemplate = \"cargo\"\n").unwrap();
    }
    copy_tree(&root().join("recipes"), &recipes);
    let found: Vec<String> = cookbook_recipe_dirs(&recipes).into_iter().map(|f| f.0).collect();
    assert_eq!(found, ["kernel", "profil", "profil-fib", "redox-kprofiling", "relibc"]);
    assert!(std::fs::read_dir(root().join("recipes")).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().contains("ignore")));
    std::fs::remove_dir_all(&tree).unwrap();
}

#[test]
fn the_example_config_adds_prof_for_users_and_builds_the_kernel_from_source() {
    let config = toml_file(&root().join("recipes/config/my_prof.toml"));
    for p in ["profil", "profil-fib", "bash"] {
        assert!(config["packages"].get(p).is_some(), "{p}");
    }
    let files = config["files"].as_array().unwrap();
    let schemes = files.iter().find(|f| f["path"].as_str() == Some("/etc/login_schemes.toml")).unwrap();
    let schemes: toml::Table = schemes["data"].as_str().unwrap().parse().unwrap();
    let user = schemes["user_schemes"]["user"]["schemes"].as_array().unwrap();
    assert!(user.iter().any(|s| s.as_str() == Some("prof")));
    assert!(user.iter().any(|s| s.as_str() == Some("file")), "the rest of base.toml's list is kept");
}

/// Read by the build system's own config reader (redox_installer's, which the cookbook and the
/// installer use), beside a stand-in for the `desktop.toml` it includes (which, through
/// base.toml, has `kernel = {}`): the plain kernel is left out and upstream's
/// `profiling-kernel` is built from source in its place, with our packages.
#[test]
fn the_build_system_reads_the_example_config_as_a_profiling_kernel() {
    use redox_installer::PackageConfig;
    let dir = std::env::temp_dir().join(format!("profd-config-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("x86_64")).unwrap();
    std::fs::write(dir.join("desktop.toml"), "[packages]\nkernel = {}\nbash = {}\n").unwrap();
    std::fs::copy(root().join("recipes/config/my_prof.toml"), dir.join("x86_64/my_prof.toml")).unwrap();
    let config = redox_installer::Config::from_file(&dir.join("x86_64/my_prof.toml")).unwrap();
    let rule = |name: &str| match config.packages.get(name) {
        Some(PackageConfig::Build(rule)) => rule.clone(),
        other => format!("{other:?}"),
    };
    assert_eq!(rule("kernel"), "ignore", "the included kernel = {{}} is overridden");
    assert_eq!(rule("profiling-kernel"), "source");
    for p in ["profil", "profil-fib", "bash"] {
        // `{}`: the default rule (built from its recipe, or the prebuilt package with REPO_BINARY).
        let default = matches!(
            config.packages.get(p),
            Some(PackageConfig::Empty | PackageConfig::Spec { version: None, git: None, path: None })
        );
        assert!(default, "{p}: {:?}", config.packages.get(p));
    }
    assert!(config.files.iter().any(|f| f.path == "/etc/login_schemes.toml"));
    std::fs::remove_dir_all(&dir).ok();
}
