//! The `openapi-proxy export` command as a user runs it: the layouts from
//! each kind of source, judged by an independent JSON Schema validator
//! (Python's `jsonschema`), by the proxy's own answers, and by re-runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde::Deserialize;

use super::files_below as tree;
use crate::common::shared::shared_testdata;
use crate::common::validators::{python, scratch_dir};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn export(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .arg("export")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("binary runs")
}

/// `export URL --layout kubectl-validate --out OUT [MORE…]`, run off this
/// thread: the command is another process, and this thread's actix system
/// stays free to serve it.
async fn export_server(url: &str, out: &Path, more: &[&str]) -> Output {
    let args = [url.to_owned(), "--layout".into(), "kubectl-validate".into(), "--out".into()];
    let more = more.iter().map(|m| (*m).to_owned());
    let args: Vec<String> = args.into_iter().chain([s(out).to_owned()]).chain(more).collect();
    actix_web::rt::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        export(&args)
    })
    .await
    .expect("export ran")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The test CRD ([`WIDGET_CRD`]) written into `dir`.
fn widget_crd(dir: &Path) -> PathBuf {
    let crd = dir.join("widget-crd.yaml");
    std::fs::write(&crd, WIDGET_CRD).expect("write CRD");
    crd
}

fn kube_1_35() -> PathBuf {
    shared_testdata("kubernetes-1.35/swagger.json")
}

/// kube-openapi's CRD documents, as kube-apiserver publishes them.
fn kube_openapi_crds() -> PathBuf {
    shared_testdata("kube-openapi/pkg/schemaconv/testdata/crds/openapiv3")
}

/// A CRD with each schema feature the JSON Schema layouts translate, in a
/// YAML stream beside a kind that is not a CRD.
const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              port:
                x-kubernetes-int-or-string: true
                anyOf: [{type: integer}, {type: string}]
              note: {type: string, nullable: true}
              properties:
                description: a field named like the keyword
                type: object
                properties:
                  default: {type: string}
                  $ref: {type: integer}
              config:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              template:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
"#;

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        resources: {limits: {cpu: 1, memory: 128Mi}, requests: {cpu: 500m}}
        readinessProbe: {httpGet: {path: /, port: http}}
        livenessProbe: {httpGet: {path: /, port: 80}}
"#;

const SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
  - {name: metrics, port: 9090, targetPort: 9090}
"#;

const CONFIG_MAP: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {mode: fast}
"#;

const WIDGET: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  size: 3
  port: 80
  note: null
  properties: {default: x, $ref: 1}
  config: {anything: [1, {goes: here}], at: {any: {depth: true}}}
  template:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: inner}
    spec: {whatever: 1}
"#;

const CONNECTOR: &str = r#"
apiVersion: vpcaccess.cnrm.cloud.google.com/v1beta1
kind: VPCAccessConnector
metadata: {name: c}
spec:
  location: us-central1
  projectRef: {external: my-project}
  ipCidrRange: 10.132.0.0/28
  networkRef: {name: default}
"#;

/// What `validate_jsonschema.py` said of one manifest.
#[derive(Debug, Deserialize)]
struct Verdict {
    manifest: String,
    draft: String,
    errors: Vec<Finding>,
}

#[derive(Debug, Deserialize)]
struct Finding {
    path: String,
    message: String,
}

/// Validates each `(schema file, manifest text)` with Python's `jsonschema`;
/// the verdicts in the same order.
fn validate(dir: &Path, pairs: &[(&str, &str)]) -> Vec<Verdict> {
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).expect("manifest dir");
    let mut command = Command::new(python());
    command.arg(root().join("tests/validators/validate_jsonschema.py"));
    for (i, (schema, manifest)) in pairs.iter().enumerate() {
        let file = manifests.join(format!("{i}.yaml"));
        std::fs::write(&file, manifest).expect("write manifest");
        command.arg(dir.join(schema)).arg(&file);
    }
    let o = command.output().expect("python runs");
    assert!(o.status.success(), "validator failed: {}", String::from_utf8_lossy(&o.stderr));
    let verdicts: Vec<Verdict> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a verdict line"))
        .collect();
    assert_eq!(verdicts.len(), pairs.len(), "one verdict per manifest");
    for v in &verdicts {
        assert_eq!(v.draft, "Draft7Validator", "{}", v.manifest);
    }
    verdicts
}

fn assert_valid(verdicts: &[Verdict], what: &[&str]) {
    for (v, what) in verdicts.iter().zip(what) {
        assert!(v.errors.is_empty(), "{what} was refused: {:?}", v.errors);
    }
}

/// The one error of `v`, checked to point at `path` and to say `says`.
fn assert_refused_at(v: &Verdict, path: &str, says: &str) {
    assert!(
        v.errors.iter().any(|e| e.path == path && e.message.contains(says)),
        "expected an error at {path} saying {says:?}, got {:?}",
        v.errors
    );
}

/// Exports Kubernetes 1.35, kube-openapi's CRD documents and the widget CRD
/// into `out` as kubeconform's layout.
fn export_kubeconform(dir: &Path, out: &str, strict: bool) -> PathBuf {
    let crd = widget_crd(dir);
    let out = dir.join(out);
    let (kube, crds) = (kube_1_35(), kube_openapi_crds());
    let mut args = vec![s(&kube), s(&crds), s(&crd), "--layout", "kubeconform", "--out", s(&out)];
    if strict {
        args.push("--strict");
    }
    let o = export(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("JSON Schema draft-07"), "{err}");
    assert!(
        err.contains("skipped document 2: a v1 ConfigMap, not a CustomResourceDefinition"),
        "{err}"
    );
    out
}

#[test]
fn kubeconform_schemas_accept_valid_manifests_of_kubernetes_and_crds() {
    let dir = scratch_dir("export-valid");
    let out = export_kubeconform(&dir, "schemas", false);
    for file in [
        "deployment-apps-v1.json",
        "service-v1.json",
        "configmap-v1.json",
        "widget-example-v1.json",
        "vpcaccessconnector-vpcaccess-v1beta1.json",
        "ingress-networking-v1.json",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    let verdicts = validate(
        &out,
        &[
            ("deployment-apps-v1.json", DEPLOYMENT),
            ("service-v1.json", SERVICE),
            ("configmap-v1.json", CONFIG_MAP),
            ("widget-example-v1.json", WIDGET),
            ("widget-example-v1.json", &WIDGET.replace("port: 80", "port: http")),
            ("vpcaccessconnector-vpcaccess-v1beta1.json", CONNECTOR),
        ],
    );
    assert_valid(
        &verdicts,
        &[
            "Deployment",
            "Service",
            "ConfigMap",
            "Widget",
            "Widget (port: http)",
            "VPCAccessConnector",
        ],
    );
}

#[test]
fn kubeconform_schemas_refuse_wrong_types_missing_fields_and_other_kinds_at_the_field() {
    let dir = scratch_dir("export-invalid");
    let out = export_kubeconform(&dir, "schemas", false);
    let verdicts = validate(
        &out,
        &[
            ("deployment-apps-v1.json", &DEPLOYMENT.replace("replicas: 2", "replicas: two")),
            (
                "service-v1.json",
                &SERVICE.replace(
                    "{name: http, port: 80, targetPort: http}",
                    "{name: http, targetPort: http}",
                ),
            ),
            ("widget-example-v1.json", &WIDGET.replace("size: 3", "size: big")),
            ("widget-example-v1.json", &WIDGET.replace("  size: 3\n", "")),
            ("widget-example-v1.json", &WIDGET.replace("port: 80", "port: 8.5")),
            ("widget-example-v1.json", &WIDGET.replace("$ref: 1", "$ref: one")),
            ("configmap-v1.json", &CONFIG_MAP.replace("kind: ConfigMap", "kind: Secret")),
            // Without --strict an unknown field passes, as kubeconform's
            // default schemas let it.
            (
                "deployment-apps-v1.json",
                &DEPLOYMENT
                    .replace("image: nginx", "imagePullPolicyy: Always\n        image: nginx"),
            ),
        ],
    );
    assert_refused_at(&verdicts[0], "/spec/replicas", "is not of type 'integer'");
    assert_refused_at(&verdicts[1], "/spec/ports/0", "'port' is a required property");
    assert_refused_at(&verdicts[2], "/spec/size", "is not of type 'integer'");
    assert_refused_at(&verdicts[3], "/spec", "'size' is a required property");
    assert_refused_at(&verdicts[4], "/spec/port", "is not valid under any of the given schemas");
    assert_refused_at(&verdicts[5], "/spec/properties/$ref", "is not of type 'integer'");
    assert_refused_at(&verdicts[6], "/kind", "is not one of ['ConfigMap']");
    assert!(verdicts[7].errors.is_empty(), "{:?}", verdicts[7].errors);
}

#[test]
fn strict_kubeconform_schemas_refuse_unknown_nested_fields_but_not_preserved_ones() {
    let dir = scratch_dir("export-strict");
    let out = export_kubeconform(&dir, "strict", true);
    let verdicts = validate(
        &out,
        &[
            ("deployment-apps-v1.json", DEPLOYMENT),
            ("service-v1.json", SERVICE),
            ("configmap-v1.json", CONFIG_MAP),
            ("widget-example-v1.json", WIDGET),
            (
                "deployment-apps-v1.json",
                &DEPLOYMENT
                    .replace("image: nginx", "imagePullPolicyy: Always\n        image: nginx"),
            ),
            ("widget-example-v1.json", &WIDGET.replace("size: 3", "size: 3\n  colour: red")),
            ("widget-example-v1.json", &WIDGET.replace("$ref: 1", "$ref: 1, extra: 2")),
        ],
    );
    assert_valid(&verdicts[..4], &["Deployment", "Service", "ConfigMap", "Widget"]);
    assert_refused_at(
        &verdicts[4],
        "/spec/template/spec/containers/0",
        "Additional properties are not allowed ('imagePullPolicyy' was unexpected)",
    );
    assert_refused_at(&verdicts[5], "/spec", "('colour' was unexpected)");
    assert_refused_at(&verdicts[6], "/spec/properties", "('extra' was unexpected)");
}

#[test]
fn every_layout_gives_the_same_bytes_on_a_rerun() {
    let dir = scratch_dir("export-rerun");
    let crd = widget_crd(&dir);
    for layout in ["kubectl-validate", "kubeconform", "catalog", "openapi-v2"] {
        let mut runs = Vec::new();
        for run in ["a", "b"] {
            let out = dir.join(format!("{layout}-{run}"));
            let o = export(&[
                s(&kube_1_35()),
                s(&kube_openapi_crds()),
                s(&crd),
                "--layout",
                layout,
                "--strict",
                "--out",
                s(&out),
            ]);
            assert!(o.status.success(), "{layout}: {}", stderr(&o));
            runs.push(tree(&out));
        }
        assert!(!runs[0].is_empty(), "{layout} wrote nothing");
        assert!(runs[0] == runs[1], "{layout}: a re-run wrote other bytes");
    }
}

#[test]
fn catalog_names_kinds_by_group_and_openapi_v2_is_one_swagger_document() {
    let dir = scratch_dir("export-layouts");
    let crd = widget_crd(&dir);
    let catalog = dir.join("catalog");
    let o = export(&[s(&kube_1_35()), s(&crd), "--layout", "catalog", "--out", s(&catalog)]);
    assert!(o.status.success(), "{}", stderr(&o));
    for file in ["apps/deployment_v1.json", "core/configmap_v1.json", "example.com/widget_v1.json"]
    {
        assert!(catalog.join(file).is_file(), "{file} missing");
    }
    let kubectl = dir.join("kubectl-validate");
    let o =
        export(&[s(&kube_1_35()), s(&crd), "--layout", "kubectl-validate", "--out", s(&kubectl)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files: Vec<String> = tree(&kubectl).into_iter().map(|(f, _)| f).collect();
    assert!(files.contains(&"api/v1.json".to_owned()), "{files:?}");
    assert!(files.contains(&"apis/example.com/v1.json".to_owned()), "{files:?}");
    assert!(files.iter().all(|f| f.starts_with("api/") || f.starts_with("apis/")), "{files:?}");
    let v2 = dir.join("v2");
    let o = export(&[s(&kube_1_35()), s(&crd), "--layout", "openapi-v2", "--out", s(&v2)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(v2.join("swagger.json")).expect("swagger.json"))
            .expect("JSON");
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().expect("definitions");
    assert!(definitions.contains_key("io.k8s.api.apps.v1.Deployment"));
    assert!(definitions.contains_key("com.example.v1.Widget"), "the CRD's kind is in");
}

/// The kubectl-validate layout of a server is what the server serves,
/// byte for byte: here the proxy, converting Kubernetes 1.35's Swagger 2.0.
#[actix_web::test]
async fn kubectl_validate_layout_of_a_server_is_what_it_serves() {
    use crate::common::proxy::{TestProxy, downstream, site};
    use openapi_proxy::demo::Route;

    let ds = site();
    ds.routes.set("/openapi/v2", Route::json(std::fs::read(kube_1_35()).expect("read 1.35")));
    let proxy = TestProxy::start(vec![downstream("kube", &ds.url(), 1)]);
    proxy.wait_for("the converted documents", |s| s.openapi.len() > 40).await;
    let out = scratch_dir("export-server").join("out");
    let o = export_server(&proxy.base, &out, &[]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    let written = tree(&out);
    let root = proxy.get("/openapi/v3", &[]).await.json();
    let group_versions = root["paths"]
        .as_object()
        .expect("paths")
        .keys()
        .filter(|k| openapi_proxy::GroupVersion::from_key(k).is_some())
        .count();
    assert_eq!(written.len(), group_versions, "one file per group-version");
    for (file, bytes) in &written {
        let key = file.strip_suffix(".json").expect("a .json file");
        let served = proxy.get(&format!("/openapi/v3/{key}"), &[]).await;
        assert_eq!(served.status, 200, "{key}");
        assert!(served.body == *bytes, "{key}: export wrote other bytes than the proxy serves");
    }
}

#[test]
fn an_existing_out_is_refused_without_force_and_replaced_whole_with_it() {
    let dir = scratch_dir("export-force");
    let crd = widget_crd(&dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("out");
    std::fs::write(out.join("stale.json"), "{}").expect("stale file");
    let args = [s(&crd), "--layout", "kubeconform", "--out", s(&out)];
    let o = export(&args);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("exists; give --force to replace it"), "{}", stderr(&o));
    assert!(out.join("stale.json").is_file(), "a refused export leaves --out alone");

    let o = export(&[&args[..], &["--force"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let files: Vec<String> = tree(&out).into_iter().map(|(f, _)| f).collect();
    assert_eq!(files, ["widget-example-v1.json", "widgetlist-example-v1.json"]);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary folders left: {leftovers:?}");
}

#[test]
fn a_failed_export_leaves_no_output_and_says_which_source() {
    let dir = scratch_dir("export-bad-source");
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {group: example.com, names: {kind: ../../x}, versions: []}\n").expect("write");
    let out = dir.join("out");
    let o = export(&[s(&bad), "--layout", "kubeconform", "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("bad.yaml") && err.contains("kind \"../../x\" is not a valid name"),
        "{err}"
    );
    assert!(!out.exists());
}

/// What an export holds at once, one group-version's documents, is
/// bounded by the memory budget (by default the one `serve` takes on this
/// machine): a document past it (1.35's `api/v1`, over 1 MiB) stops the
/// export with a message naming the document, the budget and the flag,
/// and it writes nothing.
#[test]
fn an_export_past_its_memory_budget_stops_and_writes_nothing() {
    let dir = scratch_dir("export-budget");
    let out = dir.join("out");
    let o = export(&[
        s(&kube_1_35()),
        "--layout",
        "kubectl-validate",
        "--out",
        s(&out),
        "--memory-budget-bytes",
        "1MiB",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("memory budget") && err.contains("--memory-budget-bytes"), "{err}");
    assert!(err.contains(" api/v1 from "), "{err}");
    assert!(!out.exists());
    // The same within a budget that holds it.
    let o = export(&[
        s(&kube_1_35()),
        "--layout",
        "kubectl-validate",
        "--out",
        s(&out),
        "--memory-budget-bytes",
        "64MiB",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `count` CRDs, one file each, of a group-version each but the last,
/// whose group-version is the first's: two CRDs joined in one document.
fn crd_files(dir: &Path, count: usize) -> PathBuf {
    std::fs::create_dir_all(dir).expect("CRD folder");
    for i in 0..count {
        let group = if i + 1 == count { 0 } else { i };
        let crd = format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: things{i}.g{group}.example.com}}
spec:
  group: g{group}.example.com
  names: {{kind: Thing{i}, plural: things{i}}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer}}
"
        );
        std::fs::write(dir.join(format!("thing{i:02}.yaml")), crd).expect("write CRD");
    }
    dir.to_owned()
}

/// The budget bounds what an export holds at once, one group-version's
/// documents, not what the sources hold together: CRD files whose
/// documents take many times the budget are exported, to the bytes of an
/// export whose budget holds them all.
#[test]
fn crd_files_past_the_budget_together_are_exported_within_it() {
    let dir = scratch_dir("export-budget-files");
    let crds = crd_files(&dir.join("crds"), 40);
    let run = |layout: &str, out: &Path, budget: &str| {
        let o =
            export(&[s(&crds), "--layout", layout, "-o", s(out), "--memory-budget-bytes", budget]);
        assert!(o.status.success(), "{layout} within {budget}: {}", stderr(&o));
    };
    let whole = dir.join("whole");
    run("kubectl-validate", &whole, "1GiB");
    let documents = tree(&whole);
    assert_eq!(documents.len(), 39, "one document per group-version");
    let largest = documents.iter().map(|(_, b)| b.len()).max().expect("documents");
    let all: usize = documents.iter().map(|(_, b)| b.len()).sum();
    // The joined group-version's two documents fit; all of them, five
    // times over, do not.
    let budget = 3 * largest;
    assert!(all > 5 * budget, "{all} bytes of documents, {budget} of budget");
    let budget = budget.to_string();
    for layout in ["kubectl-validate", "kubeconform"] {
        let (unbounded, bounded) =
            (dir.join(format!("{layout}-a")), dir.join(format!("{layout}-b")));
        run(layout, &unbounded, "1GiB");
        run(layout, &bounded, &budget);
        assert!(tree(&unbounded) == tree(&bounded), "{layout}: other files within the budget");
    }
    let (unbounded, bounded) = (dir.join("a.tar.gz"), dir.join("b.tar.gz"));
    run("kubeconform", &unbounded, "1GiB");
    run("kubeconform", &bounded, &budget);
    let read = |p: &Path| std::fs::read(p).expect("read archive");
    assert!(read(&unbounded) == read(&bounded), "another archive within the budget");
}

/// A server's documents, likewise: each is fetched, laid out and dropped
/// at its turn, so that documents together past the budget are exported,
/// each as the server serves it.
#[actix_web::test]
async fn a_servers_documents_past_the_budget_together_are_exported_within_it() {
    use std::collections::BTreeMap;

    use crate::common::proxy::site;
    use openapi_proxy::DocumentKey;

    let padding = "x".repeat(20_000);
    let docs: BTreeMap<DocumentKey, bytes::Bytes> = (0..40)
        .map(|i| {
            let key = DocumentKey::parse(&format!("apis/g{i}.example.com/v1")).expect("key");
            let body = format!(
                r#"{{"openapi":"3.0.0","info":{{"title":"g{i}","version":"v1"}},"paths":{{}},"components":{{"schemas":{{"X":{{"description":"{padding}"}}}}}}}}"#
            );
            (key, bytes::Bytes::from(body))
        })
        .collect();
    let server = site();
    server.routes.replace(openapi_proxy::demo::v3_routes(&docs));
    let out = scratch_dir("export-budget-server").join("out");
    // 800 KB of documents, 20 KB each.
    let o = export_server(&server.url(), &out, &["--memory-budget-bytes", "64KiB"]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    let written = tree(&out);
    assert_eq!(written.len(), docs.len());
    for (file, bytes) in &written {
        let key = DocumentKey::parse(file.strip_suffix(".json").expect("json")).expect("key");
        assert!(docs[&key] == bytes[..], "{file}: other bytes than served");
    }
}

#[test]
fn schemas_two_sources_define_differently_keep_the_first_and_warn_once_each() {
    let dir = scratch_dir("export-clash");
    let first = dir.join("a.yaml");
    let second = dir.join("b.yaml");
    std::fs::write(&first, WIDGET_CRD).expect("write");
    std::fs::write(&second, WIDGET_CRD.replace("minimum: 1", "minimum: 5")).expect("write");
    let out = dir.join("out");
    let o = export(&[s(&first), s(&second), "--layout", "kubeconform", "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(
        warnings,
        [format!(
            "warning: apis/example.com/v1 components/schemas/com.example.v1.Widget differs between sources: kept {}'s, not {}'s",
            s(&first),
            s(&second)
        )],
        "{err}"
    );
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("widget-example-v1.json")).expect("read"))
            .expect("JSON");
    assert_eq!(schema["properties"]["spec"]["properties"]["size"]["minimum"], 1);
}

#[test]
fn help_explains_the_layouts_and_the_kubeconform_recipe() {
    let o = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["export", "--help"])
        .output()
        .expect("binary runs");
    let help = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "kubectl-validate",
        "kubeconform",
        "catalog",
        "openapi-v2",
        "{{ .ResourceKind }}{{ .KindSuffix }}.json",
        "--strict",
        "--force",
        "draft-07",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
}

/// The files of an archive, in archive order (folders end in `/`).
fn archive_entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let file = std::fs::File::open(path).expect("open archive");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = Vec::new();
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        let name = entry.path().expect("a path").to_string_lossy().into_owned();
        assert_eq!(entry.header().mtime().expect("mtime"), 0, "{name}: a time in the archive");
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read entry");
        out.push((name, bytes));
    }
    out
}

#[test]
fn an_archive_holds_the_folders_files_and_is_the_same_on_a_rerun() {
    let dir = scratch_dir("export-archive");
    let crd = widget_crd(&dir);
    let folder = dir.join("catalog");
    let o = export(&[s(&kube_1_35()), s(&crd), "--layout", "catalog", "--out", s(&folder)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut archives = Vec::new();
    for run in ["a", "b"] {
        let archive = dir.join(format!("catalog-{run}.tar.gz"));
        let o = export(&[s(&kube_1_35()), s(&crd), "--layout", "catalog", "-o", s(&archive)]);
        assert!(o.status.success(), "{}", stderr(&o));
        archives.push(std::fs::read(&archive).expect("read archive"));
        let mut files: Vec<(String, Vec<u8>)> =
            archive_entries(&archive).into_iter().filter(|(n, _)| !n.ends_with('/')).collect();
        files.sort();
        assert!(files == tree(&folder), "the archive holds other files than the folder");
    }
    assert!(archives[0] == archives[1], "a re-run wrote another archive");
}

/// `--kubeconfig` makes the context's server the first source; `--context`
/// chooses another context than the file's current one.
#[actix_web::test]
async fn a_kubeconfig_context_names_the_server_to_export() {
    use crate::common::proxy::{TestProxy, downstream, site};
    use openapi_proxy::demo::Route;

    let ds = site();
    ds.routes.set(
        "/openapi/v2",
        Route::json(std::fs::read(root().join("testdata/sample/widgets.v2.json")).expect("sample")),
    );
    let proxy = TestProxy::start(vec![downstream("widgets", &ds.url(), 1)]);
    proxy.wait_for("the converted documents", |s| !s.openapi.is_empty()).await;
    let dir = scratch_dir("export-kubeconfig");
    let token = dir.join("token");
    std::fs::write(&token, "t0ken\n").expect("token");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1
kind: Config
current-context: gone
clusters:
- {{name: proxy, cluster: {{server: '{base}'}}}}
- {{name: gone, cluster: {{server: 'http://127.0.0.1:1'}}}}
contexts:
- {{name: proxy, context: {{cluster: proxy, user: u}}}}
- {{name: gone, context: {{cluster: gone, user: u}}}}
users:
- {{name: u, user: {{tokenFile: '{token}'}}}}
",
            base = proxy.base,
            token = s(&token),
        ),
    )
    .expect("kubeconfig");
    let run = |args: Vec<String>| {
        actix_web::rt::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            export(&args)
        })
    };
    let args = |out: &str, context: Option<&str>| {
        let mut a = vec!["--kubeconfig".to_owned(), s(&kubeconfig).to_owned()];
        if let Some(c) = context {
            a.extend(["--context".to_owned(), c.to_owned()]);
        }
        a.extend(["--layout", "kubectl-validate", "--out"].map(str::to_owned));
        a.push(s(&dir.join(out)).to_owned());
        a
    };
    let o = run(args("chosen", Some("proxy"))).await.expect("export ran");
    assert!(o.status.success(), "{}", stderr(&o));
    let written = tree(&dir.join("chosen"));
    assert!(!written.is_empty());
    let said = format!("{}: {} OpenAPI document", proxy.base, written.len());
    assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    for (file, bytes) in &written {
        let served =
            proxy.get(&format!("/openapi/v3/{}", file.trim_end_matches(".json")), &[]).await;
        assert!(served.body == *bytes, "{file}: the kubeconfig's server's bytes");
    }

    let o = run(args("current", None)).await.expect("export ran");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("http://127.0.0.1:1"), "{}", stderr(&o));
    assert!(!dir.join("current").exists());
}

/// An OpenAPI 3.0 document with paths is split per group-version as the
/// proxy splits one: kube-openapi's copy of Kubernetes' `apps/v1`
/// document gives `apis/apps/v1.json`, whose Deployment validates.
#[test]
fn an_openapi_3_document_with_paths_is_split_per_group_version() {
    let dir = scratch_dir("export-openapi3");
    let apps = shared_testdata("kube-openapi/pkg/spec3/testdata/appsv1spec.json");
    let kubectl = dir.join("kubectl-validate");
    let o = export(&[s(&apps), "--layout", "kubectl-validate", "--out", s(&kubectl)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files: Vec<String> = tree(&kubectl).into_iter().map(|(f, _)| f).collect();
    assert_eq!(files, ["apis/apps/v1.json"]);
    let schemas = dir.join("kubeconform");
    let o = export(&[s(&apps), "--layout", "kubeconform", "--strict", "--out", s(&schemas)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let verdicts = validate(
        &schemas,
        &[
            ("deployment-apps-v1.json", DEPLOYMENT),
            ("deployment-apps-v1.json", &DEPLOYMENT.replace("replicas: 2", "replicas: two")),
        ],
    );
    assert_valid(&verdicts[..1], &["Deployment"]);
    assert_refused_at(&verdicts[1], "/spec/replicas", "is not of type 'integer'");
}

/// An export that takes a while says how far it is on standard error:
/// nothing for two seconds, then a line at most once a second.
#[actix_web::test]
async fn a_long_export_shows_its_progress() {
    use std::collections::BTreeMap;

    use crate::common::proxy::site;
    use openapi_proxy::DocumentKey;

    const DOCUMENTS: usize = 40;
    let docs: BTreeMap<DocumentKey, bytes::Bytes> = (0..DOCUMENTS)
        .map(|i| {
            let key = DocumentKey::parse(&format!("apis/g{i}.example.com/v1")).expect("key");
            let body = r#"{"openapi":"3.0.0","info":{"title":"t","version":"v"},"paths":{}}"#;
            (key, bytes::Bytes::from_static(body.as_bytes()))
        })
        .collect();
    // Each document takes 700 ms: eight at a time, about 3.5 s in all.
    let routes: Vec<(String, openapi_proxy::demo::Route)> = openapi_proxy::demo::v3_routes(&docs)
        .into_iter()
        .map(|(path, route)| {
            let slow = path != "/openapi/v3";
            (path, if slow { route.delayed(std::time::Duration::from_millis(700)) } else { route })
        })
        .collect();
    let server = site();
    server.routes.replace(routes);
    let out = scratch_dir("export-progress").join("out");
    let o = export_server(&server.url(), &out, &[]).await;
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with("export: laid out ")).collect();
    assert!(
        !progress.is_empty() && progress.len() <= 3,
        "one line a second after the first two: {err}"
    );
    assert!(progress.iter().all(|l| l.ends_with(&format!("/{DOCUMENTS} documents"))), "{err}");
    assert_eq!(tree(&out).len(), DOCUMENTS);
}
