//! The converter and the splitter on real Kubernetes documents from
//! the test data (`scripts/testdata.sh`; never copied into this repository).

use std::path::PathBuf;

use crate::common::refs::dangling_refs;
use openapi_proxy::convert;
use openapi_proxy::{split, split_rendered};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::json_diff::{diff, matches, parse_allow_list};
use crate::common::shared::{shared_json, shared_testdata};
use crate::common::validators;

const K8S_1_24: &str = "kube-openapi/pkg/openapiconv/testdata_generated_from_k8s";
const K8S_1_27: &str = "kube-openapi/pkg/schemaconv/testdata/swagger.json";
const K8S_1_35: &str = "kubernetes-1.35/swagger.json";
const GROUP_VERSIONS_1_24: [&str; 3] = ["api.v1", "batch.v1", "apiextensions.k8s.io.v1"];
const ALLOW_1_24: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/golden/kube-1.24-conversion.allow"
));
const SPLIT_1_27_SHA256: &str = "testdata/golden/kube-1.27-split.sha256";

/// Kubernetes publishes IntOrString and Quantity with `oneOf` in newer
/// releases; we emit `anyOf` on purpose (docs/wire.md#a-5). The
/// comparison treats the two as the same for those schemas only.
fn one_of_as_any_of(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let int_or_string = m.get("format").and_then(Value::as_str) == Some("int-or-string")
                || m.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
            if int_or_string && let Some(one_of) = m.remove("oneOf") {
                m.insert("anyOf".into(), one_of);
            }
            if let Some(Value::Object(q)) =
                m.get_mut("io.k8s.apimachinery.pkg.api.resource.Quantity")
                && let Some(one_of) = q.remove("oneOf")
            {
                q.insert("anyOf".into(), one_of);
            }
            m.values_mut().for_each(one_of_as_any_of);
        }
        Value::Array(a) => a.iter_mut().for_each(one_of_as_any_of),
        _ => {}
    }
}

#[test]
fn kubernetes_1_24_conversion_equals_what_kubernetes_publishes_but_for_the_allow_list() {
    let allow = parse_allow_list(ALLOW_1_24);
    let mut used = vec![false; allow.len()];
    let mut unexplained = Vec::new();
    for gv in GROUP_VERSIONS_1_24 {
        let v2 = shared_json(&format!("{K8S_1_24}/v2_{gv}.json"));
        let mut theirs = shared_json(&format!("{K8S_1_24}/v3_{gv}.json"));
        let before = v2.clone();
        let ours = convert(&v2).unwrap_or_else(|e| panic!("{gv}: {e}")).document;
        assert_eq!(v2, before, "{gv}: the input must not change");
        one_of_as_any_of(&mut theirs);
        for (pointer, kind) in diff(&ours, &theirs) {
            match allow.iter().position(|a| a.kind == kind.word() && matches(&a.pattern, &pointer))
            {
                Some(i) => used[i] = true,
                None => unexplained.push(format!("{gv}: {pointer} ({})", kind.word())),
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "{} differences not in the allow-list; the first ones:\n{}",
        unexplained.len(),
        unexplained.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    let unused: Vec<_> = allow
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(a, _)| format!("{} ({})", a.pattern, a.reason))
        .collect();
    assert!(unused.is_empty(), "allow-list entries no difference needed (remove them): {unused:?}");
}

/// The 1.27 document's split: its keys, and each document's bytes.
fn split_1_27() -> Vec<(String, Vec<u8>, Value)> {
    let v2 = shared_json(K8S_1_27);
    let v3 = convert(&v2).expect("1.27 converts").document;
    let parts = split(&v3).expect("1.27 splits");
    assert!(parts.unplaced.is_empty(), "paths with no key: {:?}", parts.unplaced);
    // What a server publishes comes from split_rendered; it must be the
    // very bytes of the split documents.
    let rendered = split_rendered(&v3).expect("1.27 renders");
    assert_eq!(rendered.documents.len(), parts.documents.len());
    parts
        .documents
        .into_iter()
        .map(|(k, doc)| {
            let bytes = serde_json::to_vec(&doc).expect("serializes");
            assert!(
                rendered.documents.get(&k) == Some(&bytes),
                "{k}: split_rendered differs from split"
            );
            (k.to_string(), bytes, doc)
        })
        .collect()
}

#[test]
fn kubernetes_1_27_splits_into_48_self_contained_documents() {
    let parts = split_1_27();
    let keys: Vec<&str> = parts.iter().map(|(k, ..)| k.as_str()).collect();
    let gv: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| openapi_proxy::DocumentKey::parse(k).is_some_and(|k| k.is_group_version()))
        .collect();
    assert_eq!(keys.len(), 48, "{keys:?}");
    assert_eq!(gv.len(), 23, "{gv:?}");
    for k in ["api/v1", "apis/apps/v1", "apis/storage.k8s.io/v1beta1", "apis/autoscaling/v2"] {
        assert!(gv.contains(&k), "{k} missing from {gv:?}");
    }
    for k in [
        "api",
        "apis",
        "apis/apps",
        "version",
        "logs",
        ".well-known/openid-configuration",
        "openid/v1/jwks",
    ] {
        assert!(keys.contains(&k), "{k} missing from {keys:?}");
    }
    for (key, _, doc) in &parts {
        assert_eq!(dangling_refs(doc), Vec::<String>::new(), "{key}");
        assert_eq!(doc["openapi"], "3.0.0", "{key}");
        let paths = doc["paths"].as_object().expect("paths");
        assert!(!paths.is_empty(), "{key} has no paths");
        for p in paths.keys() {
            let own = openapi_proxy::DocumentKey::from_path(p).map(|k| k.to_string());
            assert_eq!(own.as_deref(), Some(key.as_str()), "{p} is in the wrong document");
        }
    }
    // api/v1 must not drag in other groups' schemas.
    let core = &parts.iter().find(|(k, ..)| k == "api/v1").expect("api/v1").2;
    let schemas = core["components"]["schemas"].as_object().expect("schemas");
    assert!(schemas.contains_key("io.k8s.api.core.v1.Pod"));
    assert!(
        !schemas.keys().any(|s| s.starts_with("io.k8s.api.apps.")),
        "api/v1 holds apps schemas"
    );
}

/// The whole 1.27 output is pinned by one committed SHA-256 (the 4 MB of
/// output are not committed). When it changes on purpose, run with
/// `EXPECTORATE=overwrite`, read the documents written under
/// `target/golden/kube-1.27/`, and commit the new hash.
#[test]
fn kubernetes_1_27_split_output_is_pinned_by_hash() {
    let parts = split_1_27();
    let mut h = Sha256::new();
    for (key, bytes, _) in &parts {
        h.update(key.as_bytes());
        h.update(b"\n");
        h.update(bytes);
        h.update(b"\n");
    }
    let got = format!("{:x}", h.finalize());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let pinned_path = root.join(SPLIT_1_27_SHA256);
    let pinned = std::fs::read_to_string(&pinned_path).unwrap_or_default();
    if pinned.trim() == got {
        return;
    }
    let out = root.join("target/golden/kube-1.27");
    for (key, bytes, _) in &parts {
        let path = out.join(format!("{key}.json"));
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(&path, bytes).expect("write");
    }
    if std::env::var("EXPECTORATE").as_deref() == Ok("overwrite") {
        std::fs::write(&pinned_path, format!("{got}\n")).expect("write hash");
        return;
    }
    panic!(
        "the 1.27 split output changed (sha256 {got}, pinned {}); documents written to {}; \
         if the change is intended, rerun with EXPECTORATE=overwrite and commit {SPLIT_1_27_SHA256}",
        pinned.trim(),
        out.display()
    );
}

#[test]
fn conversion_is_deterministic_on_the_whole_1_27_document() {
    let v2 = shared_json(K8S_1_27);
    let a = serde_json::to_vec(&convert(&v2).expect("converts").document).expect("serializes");
    let b = serde_json::to_vec(&convert(&v2).expect("converts").document).expect("serializes");
    assert!(a == b, "two conversions of the same input differ");
}

/// Issue 14, cause 8: Kubernetes 1.35 shares its DeleteOptions and Patch
/// bodies as `#/parameters/body-…` among operations that consume `*/*`
/// (DELETE) and the patch media types (PATCH); their request bodies said
/// `application/json`, the document-wide default a shared component was
/// made with. No 1.35 OpenAPI v3 reference is in the test data, so each
/// request body's media types are checked against its operation's
/// `consumes` in the 1.35 Swagger, which is what Kubernetes' own v3
/// writes (its 1.24 group-versions and kube-openapi's apps/v1 spec3
/// fixture inline every request body under the operation's `consumes`).
#[test]
fn kubernetes_1_35_request_bodies_take_their_operations_consumes() {
    let v2 = shared_json(K8S_1_35);
    let v3 = convert(&v2).expect("converts").document;
    let mut checked = 0;
    for (path, item) in v2["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let Some(consumes) = op.get("consumes").and_then(Value::as_array) else { continue };
            let shared_body =
                op["parameters"].as_array().into_iter().flatten().any(|p| {
                    p["$ref"].as_str().is_some_and(|r| r.starts_with("#/parameters/body-"))
                });
            if !shared_body {
                continue;
            }
            let body = &v3["paths"][path][method]["requestBody"];
            let media: Vec<&str> = body["content"]
                .as_object()
                .unwrap_or_else(|| panic!("{method} {path}: request body {body} has no content"))
                .keys()
                .map(String::as_str)
                .collect();
            let consumes: Vec<&str> = consumes.iter().filter_map(Value::as_str).collect();
            assert_eq!(media, consumes, "{method} {path}");
            checked += 1;
        }
    }
    // 163 DELETE operations share DeleteOptions, 123 PATCH operations Patch.
    assert_eq!(checked, 163 + 123);
}

/// Kubernetes 1.35's Swagger shares 47 parameters as `#/parameters/…`;
/// its own v3 (like 1.24's, the reference here) writes every parameter in
/// place and has only `schemas` and `securitySchemes` components. The
/// conversion does the same: no parameter is a `$ref`, no other component
/// section is written.
#[test]
fn kubernetes_1_35_parameters_are_written_in_place_as_kubernetes_does() {
    let v2 = shared_json(K8S_1_35);
    let v3 = convert(&v2).expect("converts").document;
    let sections: Vec<&str> =
        v3["components"].as_object().expect("components").keys().map(String::as_str).collect();
    assert_eq!(sections, ["schemas", "securitySchemes"]);
    let mut in_place = 0;
    for (path, item) in v3["paths"].as_object().expect("paths") {
        let lists = std::iter::once(&item["parameters"])
            .chain(item.as_object().expect("path item").values().map(|op| &op["parameters"]));
        for p in lists.filter_map(Value::as_array).flatten() {
            assert!(p.get("$ref").is_none(), "{path}: {p}");
            assert!(p["name"].is_string() && p["in"].is_string(), "{path}: {p}");
            in_place += 1;
        }
    }
    assert!(in_place > 2_000, "only {in_place} parameters");
}

/// Converts every real Swagger 2.0 document we have (1.24 group-versions,
/// the 1.27 split, the 1.14 aggregator documents, Config Connector CRDs,
/// the 1.8 definitions) and writes each output as a file for the
/// validators. Each output also has to deserialize as `openapiv3::OpenAPI`.
fn converted_real_documents(scratch: &str) -> Vec<PathBuf> {
    let dir = validators::scratch_dir(scratch);
    let mut inputs: Vec<String> =
        GROUP_VERSIONS_1_24.iter().map(|gv| format!("{K8S_1_24}/v2_{gv}.json")).collect();
    for n in ["openapi.json", "openapi-0.json", "openapi-1.json", "openapi-2.json"] {
        inputs.push(format!("kube-openapi/test/integration/testdata/aggregator/{n}"));
    }
    inputs.push("kube-openapi/pkg/util/proto/testdata/swagger.json".into());
    let crds = shared_testdata("kube-openapi/pkg/schemaconv/testdata/crds/openapiv2");
    let mut crd_files: Vec<_> =
        std::fs::read_dir(&crds).expect("crd dir").map(|e| e.expect("entry").path()).collect();
    crd_files.sort();
    for f in crd_files {
        let name = f.file_name().expect("name").to_string_lossy().into_owned();
        inputs.push(format!("kube-openapi/pkg/schemaconv/testdata/crds/openapiv2/{name}"));
    }
    let mut written = Vec::new();
    let mut write = |name: String, doc: &Value| {
        serde_json::from_value::<openapiv3::OpenAPI>(doc.clone())
            .unwrap_or_else(|e| panic!("{name} does not deserialize as openapiv3::OpenAPI: {e}"));
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec(doc).expect("serializes")).expect("write");
        written.push(path);
    };
    for rel in &inputs {
        let v2 = shared_json(rel);
        let doc = convert(&v2).unwrap_or_else(|e| panic!("{rel}: {e}")).document;
        let flat = rel.replace('/', "__");
        for (key, part) in split(&doc).unwrap_or_else(|e| panic!("{rel}: {e}")).documents {
            write(format!("{flat}--{}.json", key.as_str().replace('/', "__")), &part);
        }
        write(flat, &doc);
    }
    // The committed fixtures' golden outputs are held to the same bar.
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    for golden in ["convert/petstore.v3.json", "sample/widgets.v3.json"] {
        let doc: Value =
            serde_json::from_slice(&std::fs::read(fixtures.join(golden)).expect("golden file"))
                .expect("golden file is JSON");
        write(golden.replace('/', "__"), &doc);
    }
    for (key, _, doc) in split_1_27() {
        write(format!("k8s-1.27--{}.json", key.replace('/', "__")), &doc);
    }
    written
}

/// openapi-spec-validator flags Kubernetes' zero-value defaults that do not
/// fit their schema (`default: {}` beside an object reference, `default:
/// ""`, …); those come from the input, Kubernetes' own v3 documents carry
/// them too, and the harness tolerates exactly that finding and nothing
/// else (see `tests/validators/validate.py`).
#[test]
fn every_converted_real_document_passes_openapi_spec_validator() {
    let files = converted_real_documents("real-for-spec-validator");
    let reports = validators::openapi_spec_validator(&files, true);
    assert_all_pass(&files, &reports);
}

#[test]
fn every_converted_real_document_passes_swagger_parser() {
    let files = converted_real_documents("real-for-swagger-parser");
    let reports = validators::swagger_parser(&files);
    assert_all_pass(&files, &reports);
}

/// Fails naming every document a validator rejected (its first three
/// findings each).
fn assert_all_pass(files: &[PathBuf], reports: &[validators::FileReport]) {
    assert_eq!(reports.len(), files.len(), "one report per document");
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| !r.errors.is_empty())
        .map(|r| {
            format!(
                "{}: {}",
                r.file.display(),
                r.errors.iter().take(3).cloned().collect::<Vec<_>>().join(" | ")
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} documents fail:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}
