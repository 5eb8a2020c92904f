//! The JSON Schemas of the file formats: the committed copies are what `ctxbed schema` prints,
//! every file of the suite validates against them, and files with wrong shapes do not.

use std::path::{Path, PathBuf};

use ctxbed::scenario::format::schema;
use serde_json::Value;

fn committed(name: &str) -> Value {
    let path = format!("docs/schema/{name}.schema.json");
    let text = std::fs::read_to_string(&path).expect("the committed schema");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn the_committed_schemas_are_the_generated_ones() {
    for (name, generated) in [
        ("scenario", schema::scenario()),
        ("mock-model", schema::mock_model()),
        ("wire", ctxbed::conform::file::schema()),
        ("bug", ctxbed::bugs::schema()),
    ] {
        assert_eq!(
            committed(name),
            generated,
            "docs/schema/{name}.schema.json is stale: run `ctxbed schema {name} > docs/schema/{name}.schema.json`"
        );
    }
}

fn as_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the file");
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn every_suite_file_validates() {
    let scenarios = jsonschema::validator_for(&schema::scenario()).expect("a valid schema");
    let mocks = jsonschema::validator_for(&schema::mock_model()).expect("a valid schema");
    let files = ctxbed::suite::discover(&[PathBuf::from("scenarios")]).expect("the suite");
    assert!(files.len() > 100, "{} scenario files", files.len());
    for file in &files {
        let found = errors(&scenarios, &as_json(file));
        assert!(found.is_empty(), "{}: {found:?}", file.display());
    }
    let mut count = 0;
    for entry in std::fs::read_dir("mock-models").expect("mock-models") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let found = errors(&mocks, &as_json(&path));
            assert!(found.is_empty(), "{}: {found:?}", path.display());
            count += 1;
        }
    }
    assert!(count > 50, "{count} mock models");
}

#[test]
fn wrong_shapes_do_not_validate() {
    let scenarios = jsonschema::validator_for(&schema::scenario()).expect("a valid schema");
    let mocks = jsonschema::validator_for(&schema::mock_model()).expect("a valid schema");
    let cases: [(&jsonschema::Validator, &str); 4] = [
        (
            &scenarios,
            "seed = 1\n[agent]\nmodel = \"m\"\nmodle = \"typo\"\n",
        ),
        (&scenarios, "seed = \"one\"\n[agent]\nmodel = \"m\"\n"),
        (&scenarios, "seed = 1\n"),
        (
            &mocks,
            "window = 8000\n[[turns]]\nreply = \"x\"\nlatency_ms = \"slow\"\n",
        ),
    ];
    for (validator, text) in cases {
        let instance: Value = toml::from_str(text).expect("TOML");
        assert!(
            !errors(validator, &instance).is_empty(),
            "accepted:\n{text}"
        );
    }
}

#[test]
fn every_wire_scenario_validates_and_wrong_ones_do_not() {
    let wire = jsonschema::validator_for(&ctxbed::conform::file::schema()).expect("a valid schema");
    let mut count = 0;
    for entry in std::fs::read_dir("scenarios/wire").expect("scenarios/wire") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let found = errors(&wire, &as_json(&path));
            assert!(found.is_empty(), "{}: {found:?}", path.display());
            count += 1;
        }
    }
    assert!(count >= 15, "{count} wire scenarios");
    for text in [
        "description = \"d\"\nmodel = \"m\"\n[[steps]]\ninput = \"x\"\nrepaet = 2\n",
        "description = \"d\"\nmodel = \"m\"\nrequest_limit = \"many\"\n[[steps]]\ninput = \"x\"\n",
        "description = \"d\"\n[[steps]]\ninput = \"x\"\n",
    ] {
        let instance: Value = toml::from_str(text).expect("TOML");
        assert!(!errors(&wire, &instance).is_empty(), "accepted:\n{text}");
    }
}

#[test]
fn a_wire_scenario_reports_every_mistake_at_once() {
    let text = "description = \"d\"\nmodel = \"m\"\nbogus = 1\nrequest_limit = \"many\"\n\n[[steps]]\ninput = \"x\"\nrepeat = 300\n\n[[expect]]\nstep = 0\nreply_contans = \"x\"\n";
    let problems = match ctxbed::conform::file::parse("w.toml", text, "wire/w") {
        Ok(_) => panic!("a broken wire scenario loaded"),
        Err(problems) => problems.to_string(),
    };
    for expected in [
        "unknown field `bogus`",
        "`request_limit` must be a whole number",
        "`steps[0].repeat` must be at most 200, found 300",
        "`expect[0].step` must be at least 1, found 0",
        "did you mean `reply_contains`?",
        "w.toml:12:1",
    ] {
        assert!(problems.contains(expected), "{expected} in:\n{problems}");
    }
}
