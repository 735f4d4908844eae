//! The validator harness (`common::validators`) works and cannot pass
//! vacuously: Kubernetes' own v3 documents pass (openapi-spec-validator
//! needing exactly the zero-default tolerance), broken documents fail both
//! validators, and a small valid document passes both.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::common::validators::{self, FileReport};

/// The `pkg` folder of the kube-openapi test data.
///
/// # Panics
/// When it is missing, naming `scripts/testdata.sh`.
fn kube_openapi_pkg() -> PathBuf {
    crate::common::shared::shared_testdata("kube-openapi/pkg")
}

/// Kubernetes 1.24's own OpenAPI v3 documents: the three `v3_*.json` beside
/// the conversion test data, and every `*.json` under
/// `util/proto/testdata/openapi_v3_0_0`.
fn kubernetes_v3_documents() -> Vec<PathBuf> {
    let pkg = kube_openapi_pkg();
    let mut documents: Vec<PathBuf> =
        fs::read_dir(pkg.join("openapiconv/testdata_generated_from_k8s"))
            .expect("the conversion test data directory is readable")
            .map(|entry| entry.expect("directory entries are readable").path())
            .filter(|path| {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                name.starts_with("v3_") && name.ends_with(".json")
            })
            .collect();
    documents.sort();
    assert_eq!(documents.len(), 3, "expected the three v3_*.json documents: {documents:?}");
    let mut served = Vec::new();
    collect_json(&pkg.join("util/proto/testdata/openapi_v3_0_0"), &mut served);
    served.sort();
    assert!(served.len() >= 5, "expected the served group-version documents: {served:?}");
    documents.extend(served);
    documents
}

fn collect_json(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("test data directory is readable") {
        let path = entry.expect("directory entries are readable").path();
        if path.is_dir() {
            collect_json(&path, found);
        } else if path.extension().is_some_and(|e| e == "json") {
            found.push(path);
        }
    }
}

/// openapi-spec-validator with the tolerance on Kubernetes' documents,
/// shared by two tests (a run takes seconds).
fn kubernetes_tolerant_reports(documents: &[PathBuf]) -> &'static [FileReport] {
    static REPORTS: OnceLock<Vec<FileReport>> = OnceLock::new();
    REPORTS.get_or_init(|| validators::openapi_spec_validator(documents, true))
}

fn assert_one_report_per_document(reports: &[FileReport], documents: &[PathBuf]) {
    let files: Vec<&PathBuf> = reports.iter().map(|r| &r.file).collect();
    let expected: Vec<&PathBuf> = documents.iter().collect();
    assert_eq!(files, expected);
}

#[test]
fn kubernetes_v3_documents_pass_openapi_spec_validator_with_zero_default_tolerance() {
    let documents = kubernetes_v3_documents();
    let reports = kubernetes_tolerant_reports(&documents);
    assert_one_report_per_document(reports, &documents);
    for report in reports {
        assert!(report.errors.is_empty(), "{}: {:#?}", report.file.display(), report.errors);
    }
    let tolerated: usize = reports.iter().map(|r| r.tolerated).sum();
    assert!(tolerated > 0, "the tolerance was not needed: is it still needed at all?");
}

#[test]
fn openapi_spec_validator_reports_only_zero_defaults_on_kubernetes_v3_documents() {
    let documents = kubernetes_v3_documents();
    let strict = validators::openapi_spec_validator(&documents, false);
    let tolerant = kubernetes_tolerant_reports(&documents);
    assert_one_report_per_document(&strict, &documents);
    // Without the tolerance the findings are exactly those the tolerance
    // drops (same count per file, none left with it), and each one points
    // at a `default`.
    for (strict, tolerant) in strict.iter().zip(tolerant) {
        assert_eq!(strict.tolerated, 0);
        assert_eq!(
            strict.errors.len(),
            tolerant.tolerated + tolerant.errors.len(),
            "{}: strict findings {:#?}",
            strict.file.display(),
            strict.errors
        );
        for error in &strict.errors {
            assert!(error.contains("/default: "), "{}: {error}", strict.file.display());
            assert!(error.ends_with(')') && error.contains("(default "), "{error}");
        }
    }
    let findings: usize = strict.iter().map(|r| r.errors.len()).sum();
    assert!(findings > 0, "openapi-spec-validator found nothing: the tolerance would be unused");
}

#[test]
fn kubernetes_v3_documents_pass_swagger_parser() {
    let documents = kubernetes_v3_documents();
    let reports = validators::swagger_parser(&documents);
    assert_one_report_per_document(&reports, &documents);
    for report in &reports {
        assert!(report.errors.is_empty(), "{}: {:#?}", report.file.display(), report.errors);
    }
}

/// A small, valid group-version document in the shape Kubernetes publishes.
fn small_valid_document() -> Value {
    json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": "v1.30.0" },
        "paths": {
            "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}": {
                "parameters": [
                    { "name": "namespace", "in": "path", "required": true,
                      "schema": { "type": "string", "uniqueItems": true } },
                    { "name": "name", "in": "path", "required": true,
                      "schema": { "type": "string", "uniqueItems": true } }
                ],
                "get": {
                    "operationId": "readExampleComV1NamespacedWidget",
                    "responses": {
                        "200": {
                            "description": "OK",
                            "content": { "application/json": { "schema": {
                                "$ref": "#/components/schemas/com.example.v1.Widget"
                            } } }
                        },
                        "401": { "description": "Unauthorized" }
                    }
                }
            }
        },
        "components": { "schemas": {
            "com.example.v1.Widget": {
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "apiVersion": { "type": "string" },
                    "kind": { "type": "string" },
                    "spec": {
                        "description": "the $ref-with-description wrapper the converter emits",
                        "allOf": [{ "$ref": "#/components/schemas/com.example.v1.WidgetSpec" }]
                    }
                }
            },
            "com.example.v1.WidgetSpec": {
                "type": "object",
                "properties": {
                    "replicas": { "type": "integer", "format": "int32", "default": 1 },
                    "size": { "anyOf": [{ "type": "integer" }, { "type": "string" }],
                              "x-kubernetes-int-or-string": true }
                }
            }
        } }
    })
}

fn write_documents(dir: &Path, documents: &[(&str, Value)]) -> Vec<PathBuf> {
    documents
        .iter()
        .map(|(name, document)| {
            let path = dir.join(name);
            fs::write(&path, serde_json::to_vec_pretty(document).expect("JSON serializes"))
                .expect("scratch directory is writable");
            path
        })
        .collect()
}

/// Sets `value` at the JSON pointer `pointer` (its parent must exist).
fn with(mut document: Value, pointer: &str, value: Value) -> Value {
    *document.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer} exists")) = value;
    document
}

fn parameter_lacking_in() -> Value {
    with(
        small_valid_document(),
        "/paths/~1apis~1example.com~1v1~1namespaces~1{namespace}~1widgets~1{name}/parameters/1",
        json!({ "name": "name", "required": true, "schema": { "type": "string" } }),
    )
}

fn dangling_ref() -> Value {
    with(
        small_valid_document(),
        "/components/schemas/com.example.v1.Widget/properties/spec/allOf/0/$ref",
        json!("#/components/schemas/com.example.v1.Missing"),
    )
}

#[test]
fn validators_are_installed_under_target_from_the_pins() {
    validators::ensure_installed();
    let root = validators::validators_dir();
    let pins = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/validators");
    let read =
        |path: PathBuf| fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(root.join("venv/bin/python").exists());
    assert_eq!(read(root.join("venv/.installed-from")), read(pins.join("requirements.txt")));
    let mut npm_pins = read(pins.join("package.json"));
    npm_pins.extend(read(pins.join("package-lock.json")));
    assert_eq!(read(root.join("node/.installed-from")), npm_pins);
    assert!(root.join("node/node_modules/@apidevtools/swagger-parser/package.json").exists());
}

#[test]
fn small_valid_document_passes_both_validators() {
    let dir = validators::scratch_dir("small-valid");
    let files = write_documents(&dir, &[("valid.json", small_valid_document())]);
    for report in validators::openapi_spec_validator(&files, false)
        .into_iter()
        .chain(validators::swagger_parser(&files))
    {
        assert_eq!(report.errors, Vec::<String>::new(), "{}", report.file.display());
        assert_eq!(report.tolerated, 0);
    }
}

#[test]
fn broken_documents_fail_openapi_spec_validator() {
    let dir = validators::scratch_dir("broken-osv");
    let files = write_documents(
        &dir,
        &[
            ("parameter-lacking-in.json", parameter_lacking_in()),
            ("dangling-ref.json", dangling_ref()),
        ],
    );
    // The tolerance must not hide them either.
    for tolerate in [false, true] {
        let reports = validators::openapi_spec_validator(&files, tolerate);
        assert_eq!(reports.len(), 2);
        let (lacking_in, dangling) = (&reports[0], &reports[1]);
        assert!(
            lacking_in.errors.iter().any(|e| e.contains("/parameters/1: ")),
            "{:#?}",
            lacking_in.errors
        );
        assert!(
            dangling.errors.iter().any(|e| e.contains("com.example.v1.Missing")),
            "{:#?}",
            dangling.errors
        );
        assert_eq!(lacking_in.tolerated + dangling.tolerated, 0);
    }
}

#[test]
fn broken_documents_fail_swagger_parser() {
    let dir = validators::scratch_dir("broken-swagger-parser");
    let files = write_documents(
        &dir,
        &[
            ("parameter-lacking-in.json", parameter_lacking_in()),
            ("dangling-ref.json", dangling_ref()),
        ],
    );
    let reports = validators::swagger_parser(&files);
    assert_eq!(reports.len(), 2);
    let (lacking_in, dangling) = (&reports[0], &reports[1]);
    assert!(
        lacking_in.errors.iter().any(|e| e.contains("must have required property 'in'")),
        "{:#?}",
        lacking_in.errors
    );
    assert!(
        dangling.errors.iter().any(|e| e.contains("com.example.v1.Missing")),
        "{:#?}",
        dangling.errors
    );
}

#[test]
fn only_zero_value_defaults_that_do_not_fit_are_tolerated() {
    let dir = validators::scratch_dir("zero-defaults");
    let replicas = "/components/schemas/com.example.v1.WidgetSpec/properties/replicas/default";
    let files = write_documents(
        &dir,
        &[
            // `{}` where an integer is expected: a zero-value default.
            ("zero-default.json", with(small_valid_document(), replicas, json!({}))),
            // A wrong default that is not a zero value: always reported.
            ("non-zero-default.json", with(small_valid_document(), replicas, json!("three"))),
        ],
    );
    let strict = validators::openapi_spec_validator(&files, false);
    let tolerant = validators::openapi_spec_validator(&files, true);
    let expected = format!("#{replicas}: {{}} is not of type 'integer' (default /type)");
    assert_eq!(strict[0].errors, [expected]);
    assert_eq!((tolerant[0].errors.len(), tolerant[0].tolerated), (0, 1));
    assert_eq!(strict[1].errors.len(), 1, "{:#?}", strict[1].errors);
    assert_eq!(tolerant[1].errors, strict[1].errors);
    assert_eq!(tolerant[1].tolerated, 0);
}

/// The minimal documents of `testdata/references/` (references inside
/// vendor extensions, percent-encoded reference fragments, component names outside the
/// OpenAPI 3.0 pattern, references to schemas inside `paths` and inside
/// shared parameters and responses), converted by the real converter.
fn references_outputs() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/references");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .expect("testdata/references is readable")
        .map(|entry| entry.expect("directory entries are readable").file_name())
        .filter_map(|name| name.to_str()?.strip_suffix(".v2.json").map(str::to_owned))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "component-names",
            "extension-refs",
            "inner-refs",
            "path-schema-refs",
            "percent-encoded-refs"
        ]
    );
    names
        .into_iter()
        .map(|name| {
            let path = dir.join(format!("{name}.v2.json"));
            let v2: Value = serde_json::from_slice(&fs::read(&path).expect("input is readable"))
                .expect("input is JSON");
            let converted =
                openapi_proxy::convert(&v2).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (format!("{name}.v3.json"), converted.document)
        })
        .collect()
}

// Issue 14, causes 1, 3, 6 and 7: these inputs used to be refused (cause 3)
// or to give output swagger-parser refuses (causes 1 and 6). The pinned validators
// do not check the component-name pattern OpenAPI 3.0 requires (cause 7),
// so it is checked here.
#[test]
fn converted_references_cases_pass_swagger_parser() {
    let dir = validators::scratch_dir("references");
    let outputs = references_outputs();
    for (name, document) in &outputs {
        let components = document["components"].as_object().expect("components is an object");
        for (section, members) in components {
            for key in members.as_object().expect("a component section is an object").keys() {
                let valid = !key.is_empty()
                    && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
                assert!(valid, "{name}: components/{section} has the invalid name {key:?}");
            }
        }
    }
    let named: Vec<(&str, Value)> =
        outputs.iter().map(|(name, doc)| (name.as_str(), doc.clone())).collect();
    let files = write_documents(&dir, &named);
    let reports = validators::swagger_parser(&files);
    assert_one_report_per_document(&reports, &files);
    for report in &reports {
        assert_eq!(report.errors, Vec::<String>::new(), "{}", report.file.display());
    }
}

// The check above is not vacuous: swagger-parser resolves references inside
// vendor extensions, so the v2 reference the converter used to leave there
// fails it.
#[test]
fn a_v2_ref_left_in_an_extension_fails_swagger_parser() {
    let dir = validators::scratch_dir("references-control");
    let (_, converted) = references_outputs()
        .into_iter()
        .find(|(name, _)| name == "extension-refs.v3.json")
        .expect("the extension-refs case exists");
    let unconverted = with(
        converted,
        "/x-ms-parameterized-host/parameters/0/$ref",
        json!("#/parameters/AccountName"),
    );
    let files = write_documents(&dir, &[("v2-ref-in-extension.json", unconverted)]);
    let reports = validators::swagger_parser(&files);
    assert_eq!(reports.len(), 1);
    assert!(
        reports[0].errors.iter().any(|e| e.contains("#/parameters/AccountName")),
        "{:#?}",
        reports[0].errors
    );
}

// Cause 6's case is not vacuous either: with the v2 reference into `paths`
// put back where the converter now points at the hoisted copy, swagger-parser
// refuses the document (the response schema moved under `content`).
#[test]
fn a_v2_ref_into_paths_fails_swagger_parser() {
    let dir = validators::scratch_dir("references-path-control");
    let (_, converted) = references_outputs()
        .into_iter()
        .find(|(name, _)| name == "path-schema-refs.v3.json")
        .expect("the path-schema-refs case exists");
    let unconverted = with(
        converted,
        "/paths/~1test/get/responses/200/content/*~1*/schema/properties/database/$ref",
        json!("#/paths/~1test/get/responses/200/schema/properties/default"),
    );
    let files = write_documents(&dir, &[("v2-ref-into-paths.json", unconverted)]);
    let reports = validators::swagger_parser(&files);
    assert_eq!(reports.len(), 1);
    assert!(
        reports[0].errors.iter().any(|e| e.contains("Missing $ref pointer")),
        "{:#?}",
        reports[0].errors
    );
}

// And the inner references: the v2 inner path the converter used to keep
// (`#/components/responses/Things/schema`) fails swagger-parser.
#[test]
fn a_v2_inner_path_in_a_component_ref_fails_swagger_parser() {
    let dir = validators::scratch_dir("references-inner-control");
    let (_, converted) = references_outputs()
        .into_iter()
        .find(|(name, _)| name == "inner-refs.v3.json")
        .expect("the inner-refs case exists");
    let schema = "/paths/~1things/get/responses/200/content/application~1json/schema";
    assert_eq!(
        converted.pointer(&format!("{schema}/$ref")),
        Some(&json!("#/components/responses/Things/content/application~1json/schema"))
    );
    let unconverted =
        with(converted, &format!("{schema}/$ref"), json!("#/components/responses/Things/schema"));
    let files = write_documents(&dir, &[("v2-inner-path.json", unconverted)]);
    let reports = validators::swagger_parser(&files);
    assert_eq!(reports.len(), 1);
    assert!(
        reports[0].errors.iter().any(|e| e.contains("#/components/responses/Things/schema")),
        "{:#?}",
        reports[0].errors
    );
}
