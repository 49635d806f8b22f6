//! The Redox packaging is consistent with this repository: the init unit says what init needs
//! to start profd as `prof:`, and each cookbook recipe builds a package of this workspace and
//! copies files that exist. (The cookbook itself is not run here; README "Using on Redox".)

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

#[test]
fn each_recipe_builds_a_workspace_package_and_copies_existing_files() {
    let dir = root().join("recipes/wip/dev/perf");
    let workspace = toml_file(&root().join("Cargo.toml"));
    let members: Vec<&str> = workspace["workspace"]["members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    let package_of = |member: &str| toml_file(&root().join(member).join("Cargo.toml"))["package"]["name"].as_str().unwrap().to_string();
    let packages: Vec<String> = members.iter().map(|m| package_of(m)).collect();
    for (recipe, package, depends) in [("profd", "profd", None), ("profil", "profil", Some("profd")), ("profil-fib", "fib", Some("profil"))] {
        let r = toml_file(&dir.join(recipe).join("recipe.toml"));
        let text = std::fs::read_to_string(dir.join(recipe).join("recipe.toml")).unwrap();
        assert!(text.starts_with("#TODO "), "{recipe}: wip recipes start with a #TODO line");
        assert_eq!(r["build"]["template"].as_str(), Some("custom"), "{recipe}: static build");
        let script = r["build"]["script"].as_str().unwrap();
        assert!(script.contains(&format!("cookbook_cargo_packages {package}\n")), "{recipe}");
        assert!(packages.contains(&package.to_string()), "{package} is not a workspace package");
        match recipe {
            "profd" => {
                assert!(r["source"]["git"].as_str().is_some() && r["source"]["rev"].as_str().unwrap().len() == 40);
                for copied in ["profd/init.d/", "profd/examples/prof-session.sh"] {
                    assert!(script.contains(&format!("${{COOKBOOK_SOURCE}}/{copied}")), "{copied}");
                    assert!(root().join(copied).exists(), "{copied}");
                }
            }
            _ => assert_eq!(r["source"]["same_as"].as_str(), Some("../profd")),
        }
        let deps = r.get("package").and_then(|p| p["dependencies"].as_array()).cloned().unwrap_or_default();
        assert_eq!(deps.first().and_then(|d| d.as_str()), depends, "{recipe}");
    }
    // fib keeps its symbols (the cookbook strips /usr/bin otherwise).
    let fib = std::fs::read_to_string(dir.join("profil-fib/recipe.toml")).unwrap();
    assert!(fib.contains("COOKBOOK_NOSTRIP=true"));
}

#[test]
fn the_example_config_adds_prof_for_users_and_builds_the_kernel_from_source() {
    let config = toml_file(&root().join("recipes/config/my_prof.toml"));
    assert_eq!(config["packages"]["kernel"].as_str(), Some("source"));
    for p in ["profd", "profil", "profil-fib", "bash"] {
        assert!(config["packages"].get(p).is_some(), "{p}");
    }
    let files = config["files"].as_array().unwrap();
    let schemes = files.iter().find(|f| f["path"].as_str() == Some("/etc/login_schemes.toml")).unwrap();
    let schemes: toml::Table = schemes["data"].as_str().unwrap().parse().unwrap();
    let user = schemes["user_schemes"]["user"]["schemes"].as_array().unwrap();
    assert!(user.iter().any(|s| s.as_str() == Some("prof")));
    assert!(user.iter().any(|s| s.as_str() == Some("file")), "the rest of base.toml's list is kept");
}
