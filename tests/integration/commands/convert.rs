//! The `openapi-proxy convert` command as a user runs it: files written,
//! summary, exit status.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::validators::scratch_dir;

const SAMPLE: &str = "testdata/sample/widgets.v2.json";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn convert(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .arg("convert")
        .args(args)
        .current_dir(root())
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    if let Some(bytes) = stdin {
        child.stdin.take().expect("stdin").write_all(bytes).expect("write stdin");
    }
    child.wait_with_output().expect("binary finishes")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files_under(dir: &Path) -> Vec<String> {
    super::files_below(dir).into_iter().map(|(name, _)| name).collect()
}

#[test]
fn convert_writes_one_document_per_key_and_summarises() {
    let out = scratch_dir("cli-sample");
    let o = convert(&[SAMPLE, "--out", out.to_str().expect("utf-8")], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        files_under(&out),
        [
            "apis.json",
            "apis/widgets.example.com.json",
            "apis/widgets.example.com/v1beta1.json",
            "version.json"
        ]
    );
    let gv: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("apis/widgets.example.com/v1beta1.json")).expect("read"),
    )
    .expect("JSON");
    assert_eq!(gv["openapi"], "3.0.0");
    assert!(gv["components"]["schemas"]["com.example.widgets.v1beta1.Widget"].is_object());
    let err = stderr(&o);
    assert!(err.contains("converted: 4 documents (1 group-version, 3 other); "), "{err}");
    assert!(err.contains("note operation-schemes: 10"), "{err}");
}

/// Output files are overwritten in place and cut to length (truncating
/// them first makes ext4 flush them on close): a shorter document leaves
/// no tail of the longer one, a symbolic link in their place is written
/// through, and a device such as `/dev/null` is written to, not cut.
#[test]
fn rerunning_over_earlier_output_replaces_files_and_writes_through_links() {
    let out = scratch_dir("cli-rerun");
    let out_s = out.to_str().expect("utf-8");
    let first = convert(&[SAMPLE, "--out", out_s], None);
    assert!(first.status.success(), "{}", stderr(&first));
    let version = out.join("version.json");
    let expected = std::fs::read(&version).expect("read");
    // A longer stale file where `version.json` goes, and a link where
    // `apis.json` goes.
    std::fs::write(&version, vec![b' '; expected.len() * 3]).expect("write");
    let target = out.join("apis-target.txt");
    std::fs::write(&target, b"stale").expect("write");
    let apis = out.join("apis.json");
    let apis_bytes = std::fs::read(&apis).expect("read");
    std::fs::remove_file(&apis).expect("remove");
    std::os::unix::fs::symlink(&target, &apis).expect("symlink");

    let second = convert(&[SAMPLE, "--out", out_s], None);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(std::fs::read(&version).expect("read"), expected);
    assert!(std::fs::symlink_metadata(&apis).expect("lstat").file_type().is_symlink());
    assert_eq!(std::fs::read(&target).expect("read"), apis_bytes);

    let to_null = convert(&[SAMPLE, "--whole", "/dev/null"], None);
    assert!(to_null.status.success(), "{}", stderr(&to_null));
}

#[test]
fn convert_reads_yaml_from_stdin_and_writes_the_whole_document() {
    let dir = scratch_dir("cli-stdin");
    let whole = dir.join("whole.json");
    let yaml = std::fs::read(root().join("testdata/convert/petstore.v2.yaml")).expect("fixture");
    let o = convert(&["-", "--whole", whole.to_str().expect("utf-8"), "--pretty"], Some(&yaml));
    assert!(o.status.success(), "{}", stderr(&o));
    let written = std::fs::read_to_string(&whole).expect("whole written");
    let golden =
        std::fs::read_to_string(root().join("testdata/convert/petstore.v3.json")).expect("golden");
    assert_eq!(written.trim_end(), golden.trim_end());
}

/// `--whole -` is standard output, as `-` is standard input: the document
/// there, nothing written to a file named `-`, and a summary that says so.
#[test]
fn whole_dash_writes_the_document_to_standard_output() {
    let dir = scratch_dir("cli-whole-stdout");
    let mut child = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["convert", root().join(SAMPLE).to_str().expect("utf-8"), "--whole", "-"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let _ = child.stdin.take();
    let o = child.wait_with_output().expect("binary finishes");
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the document on stdout");
    assert_eq!(doc["openapi"], "3.0.0");
    assert!(!dir.join("-").exists(), "a file named - was written");
    let err = stderr(&o);
    assert!(err.contains("converted: the whole document to standard output; "), "{err}");
    assert!(!err.contains("0 documents"), "{err}");
}

/// With neither --out nor --whole, the error names both.
#[test]
fn an_output_is_required_and_the_error_names_both() {
    let o = convert(&[SAMPLE], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("--out <DIR>") && err.contains("--whole <FILE>"), "{err}");
}

#[test]
fn input_that_is_not_swagger_exits_3_with_a_pointer() {
    let o = convert(&["-", "--whole", "/dev/null"], Some(br#"{"openapi": "3.0.0", "paths": {}}"#));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a Swagger 2.0 document (found openapi 3.0.0)"),
        "{}",
        stderr(&o)
    );

    let o = convert(
        &["-", "--whole", "/dev/null"],
        Some(br##"{"swagger": "2.0", "definitions": {"A": {"$ref": "#/definitions/B"}}}"##),
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("reference #/definitions/B at /definitions/A points to nothing"),
        "{}",
        stderr(&o)
    );

    // Broken JSON that YAML cannot read either: the JSON error, with its
    // place, not a YAML one.
    let o = convert(&["-", "--whole", "/dev/null"], Some(b"{ not json: [ nor yaml"));
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("not JSON: unexpected character at line 1, column 3"),
        "{}",
        stderr(&o)
    );
}

/// JSON with trailing commas, as a Kubernetes test fixture has it: read as
/// YAML, converted, and the summary says why a stricter tool refuses it.
#[test]
fn json_with_a_trailing_comma_is_read_as_yaml_and_the_summary_says_so() {
    let input = b"{\n  \"swagger\": \"2.0\",\n  \"paths\": {},\n  \"definitions\": {\"A\": {\"type\": \"object\",},},\n}\n";
    let o = convert(&["-", "--whole", "-"], Some(input));
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON out");
    assert_eq!(doc["components"]["schemas"]["A"], serde_json::json!({"type": "object"}));
    assert!(
        stderr(&o).contains(
            "read as YAML: not JSON: unexpected character at line 4, column 42, but YAML's flow \
             style (a superset of JSON that allows trailing commas and comments) reads it"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn hostile_inputs_are_refused_with_a_clear_error() {
    // One anchored list reused: 500 KB of YAML standing for ten billion
    // values.
    let items = vec!["a"; 100_000].join(", ");
    let uses = vec!["*a"; 100_000].join(", ");
    let bomb = format!("swagger: '2.0'\nx-a: &a [{items}]\nx-b: [{uses}]\n");
    let o = convert(&["-", "--whole", "/dev/null"], Some(bomb.as_bytes()));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("expands (through YAML aliases)"), "{}", stderr(&o));

    // Truncated JSON is a JSON error, never retried as YAML.
    let truncated = format!("{{\"x\":[{}", vec!["1"; 1_000_000].join(","));
    let o = convert(&["-", "--whole", "/dev/null"], Some(truncated.as_bytes()));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("not JSON: unexpected end of input"), "{}", stderr(&o));

    // Within --max-input-bytes, but more values than the memory budget
    // holds (1 MiB: 8,192 values): refused as it is read.
    let dense = format!("{{\"x\":[{}]}}", vec!["1"; 10_000].join(","));
    let o = convert(
        &["-", "--whole", "/dev/null", "--memory-budget-bytes", "1048576"],
        Some(dense.as_bytes()),
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("more than 8192 values"), "{}", stderr(&o));

    // An endless input stops at the limit.
    let o = convert(&["/dev/zero", "--whole", "/dev/null", "--max-input-bytes", "1000000"], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("larger than --max-input-bytes (1000000 bytes)"), "{}", stderr(&o));
}

#[test]
fn unreadable_input_or_unwritable_output_exits_4() {
    let o = convert(&["does/not/exist.json", "--out", "/tmp/x"], None);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("reading does/not/exist.json"), "{}", stderr(&o));

    let o = convert(&[SAMPLE, "--whole", "/proc/this/cannot/be/written.json"], None);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
}

#[test]
fn hostile_paths_never_write_outside_the_output_directory() {
    let dir = scratch_dir("cli-hostile");
    let out = dir.join("out");
    let doc = br#"{"swagger": "2.0", "paths": {
        "/../../escaped/x": {"get": {"responses": {"200": {"description": "OK"}}}},
        "/apis/../../escaped2/v1": {"get": {"responses": {"200": {"description": "OK"}}}},
        "/ok": {"get": {"responses": {"200": {"description": "OK"}}}}}}"#;
    let o = convert(&["-", "--out", out.to_str().expect("utf-8")], Some(doc));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files_under(&dir), ["out/ok.json"]);
    assert!(stderr(&o).contains("belongs to no document key"), "{}", stderr(&o));
}

/// `openapi-proxy convert --help`, which must succeed.
fn convert_help() -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["convert", "--help"])
        .output()
        .expect("runs");
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn help_explains_the_command() {
    let help = convert_help();
    for needle in ["--out", "--whole", "Exit status", "YAML"] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
}

/// `convert --out` and a v2-only downstream behind the proxy go through one
/// pipeline: every file written is, byte for byte, the document the proxy
/// serves under the same key, and the proxy serves no other key.
async fn convert_out_matches_what_the_proxy_serves(input: &Path, name: &str) {
    use crate::common::proxy::{TestProxy, downstream, site};
    use openapi_proxy::demo::Route;

    let out = scratch_dir(name);
    let o = convert(&[input.to_str().expect("utf-8"), "--out", out.to_str().expect("utf-8")], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let written = files_under(&out);
    assert!(!written.is_empty(), "convert wrote nothing for {}", input.display());

    let ds = site();
    ds.routes.set("/openapi/v2", Route::json(std::fs::read(input).expect("read input")));
    let proxy = TestProxy::start(vec![downstream("v2-only", &ds.url(), 1)]);
    proxy.wait_for("the converted documents", |s| s.openapi.len() == written.len()).await;
    for file in &written {
        let key = file.strip_suffix(".json").expect("a .json file");
        let served = proxy.get(&format!("/openapi/v3/{key}"), &[]).await;
        assert_eq!(served.status, 200, "{key}");
        let on_disk = std::fs::read(out.join(file)).expect("read output");
        assert!(
            served.body == on_disk,
            "{key}: the proxy serves {} bytes, convert wrote {} other bytes",
            served.body.len(),
            on_disk.len()
        );
    }
}

#[actix_web::test]
async fn convert_out_writes_the_bytes_the_proxy_serves_for_the_sample() {
    convert_out_matches_what_the_proxy_serves(&root().join(SAMPLE), "cli-same-sample").await;
}

#[actix_web::test]
async fn convert_out_writes_the_bytes_the_proxy_serves_for_kubernetes_1_35() {
    // Shared parameters and non-group-version keys (`logs`, `openid/v1/jwks`)
    // are where two pipelines in different orders used to disagree.
    let input = crate::common::shared::shared_testdata("kubernetes-1.35/swagger.json");
    convert_out_matches_what_the_proxy_serves(&input, "cli-same-1.35").await;
}

/// `--max-input-bytes`' default: 64 MiB.
const DEFAULT_LIMIT: u64 = 64 * 1024 * 1024;

/// `convert /dev/zero` and `convert - < /dev/zero` stop at the default
/// `--max-input-bytes` with an error that names it, and exit 3.
#[test]
fn an_endless_input_stops_at_the_default_limit_as_a_file_or_on_stdin() {
    let file = convert(&["/dev/zero", "--whole", "/dev/null"], None);
    let zero = std::fs::File::open("/dev/zero").expect("/dev/zero");
    let stdin = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["convert", "-", "--whole", "/dev/null"])
        .stdin(Stdio::from(zero))
        .output()
        .expect("binary runs");
    for (name, o) in [("/dev/zero", file), ("-", stdin)] {
        assert_eq!(o.status.code(), Some(3), "{name}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "error: {name} is larger than --max-input-bytes ({DEFAULT_LIMIT} bytes); refused\n"
            )
        );
    }
}

/// An input of unknown size (a pipe, a device) was read into one buffer
/// grown by doubling, whose smaller copies the allocator kept:
/// `convert /dev/zero` peaked at about 3.4 times the limit (221 MiB for
/// 64 MiB). Here the command is held with exactly the limit read, waiting
/// for more, and its peak must be that much and little else.
#[test]
fn reading_an_input_of_unknown_size_costs_about_its_size() {
    use crate::common::memory::{bytes_read, peak_rss_kib};

    let mut child = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["convert", "-", "--whole", "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let pid = child.id();
    let mut input = child.stdin.take().expect("stdin");
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..DEFAULT_LIMIT / 1024 / 1024 {
        input.write_all(&zeros).expect("the command reads its input");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while bytes_read(pid).unwrap_or(0) < DEFAULT_LIMIT {
        assert!(std::time::Instant::now() < deadline, "the command did not read its input");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let peak_kib = peak_rss_kib(pid).expect("VmHWM of the running command");
    // One byte more and the end: refused.
    input.write_all(b"x").expect("write");
    drop(input);
    let o = child.wait_with_output().expect("binary finishes");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("is larger than --max-input-bytes"), "{}", stderr(&o));
    // The limit, plus the binary itself (about 20 MiB for a debug build)
    // and a chunk: well below the doubling buffer's 2 to 3 times.
    let bound_kib = DEFAULT_LIMIT / 1024 + 40 * 1024;
    assert!(peak_kib < bound_kib, "peak RSS {peak_kib} KiB holding a 64 MiB input");
}

/// A specification split across files, as hand-written ones are: every
/// reference to another file under the allowed directory is followed, the
/// output stands alone (valid by swagger-parser away from the files), and
/// a file outside is not read.
#[test]
fn references_to_other_files_are_followed_under_the_allowed_directory() {
    let dir = scratch_dir("cli-bundle");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "spec/main.yaml",
        "swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths:\n  /things:\n    get:\n      \
         parameters: [{$ref: '../common/types.json#/parameters/ApiVersion'}]\n      responses:\n        \
         '200': {description: ok, schema: {$ref: './types/Thing.yaml'}}\n        \
         '400': {$ref: './responses.yaml#/responses/BadRequest'}\n",
    );
    write(
        "spec/responses.yaml",
        "responses:\n  BadRequest: {description: bad, schema: {$ref: './types/Error.yaml'}}\n",
    );
    write("spec/types/Thing.yaml", "{type: object, properties: {error: {$ref: 'Error.yaml'}}}\n");
    write("spec/types/Error.yaml", "{type: object, properties: {message: {type: string}}}\n");
    write(
        "common/types.json",
        r#"{"parameters": {"ApiVersion": {"name": "api-version", "in": "query", "required": true, "type": "string"}}}"#,
    );
    let main = dir.join("spec/main.yaml");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("mkdir out");
    let run = |extra: &[&str], name: &str| {
        let whole = out.join(name);
        let mut args =
            vec![main.to_str().expect("utf-8"), "--whole", whole.to_str().expect("utf-8")];
        args.extend(extra);
        let o = convert(&args, None);
        assert!(o.status.success(), "{}", stderr(&o));
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&whole).expect("written")).expect("JSON");
        (doc, stderr(&o), whole)
    };

    // By default, the input's directory: common/ is outside it.
    let (doc, said, _) = run(&["--verbose"], "default.json");
    let op = &doc["paths"]["/things"]["get"];
    assert_eq!(op["parameters"][0]["$ref"], "../common/types.json#/parameters/ApiVersion");
    assert_eq!(op["responses"]["400"]["$ref"], "#/components/responses/BadRequest");
    assert!(said.contains("into 3 other files"), "{said}");
    assert!(said.contains("is outside") && said.contains("--refs-root DIR"), "{said}");

    // Widened to the whole tree: everything followed, and the output is
    // valid where none of the files are.
    let root = dir.to_str().expect("utf-8");
    let (doc, said, whole) = run(&["--refs-root", root], "widened.json");
    let op = &doc["paths"]["/things"]["get"];
    // Shared parameters are copied into their operations, as Kubernetes
    // publishes them.
    assert_eq!(op["parameters"][0]["name"], "api-version");
    assert_eq!(op["parameters"][0]["schema"], serde_json::json!({"type": "string"}));
    assert_eq!(
        doc["components"]["schemas"]["Thing"]["properties"]["error"]["$ref"],
        "#/components/schemas/Error"
    );
    assert!(said.contains("into 4 other files"), "{said}");
    let reports = crate::common::validators::swagger_parser(&[whole]);
    assert!(reports.iter().all(|r| r.errors.is_empty()), "{reports:?}");

    // A directory that is not there is said at once, whatever the input.
    let o = convert(&[SAMPLE, "--whole", "/dev/null", "--refs-root", "/no/such/dir"], None);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("reading --refs-root /no/such/dir"), "{}", stderr(&o));

    // Kept as written when asked.
    let (doc, said, _) = run(&["--keep-file-refs"], "kept.json");
    let op = &doc["paths"]["/things"]["get"];
    assert_eq!(op["responses"]["400"]["$ref"], "./responses.yaml#/responses/BadRequest");
    assert!(!said.contains("other file"), "{said}");
    assert!(said.contains("note external-ref: 3"), "{said}");
}

/// A Swagger 2.0 document whose conversion is far larger than a pipe's
/// buffer (64 KiB on Linux), so writing it must meet a closed reader.
fn large_swagger() -> Vec<u8> {
    let defs: Vec<String> = (0..2_000)
        .map(|i| format!(r#""D{i}": {{"type": "object", "description": "definition number {i}"}}"#))
        .collect();
    format!(r#"{{"swagger": "2.0", "paths": {{}}, "definitions": {{{}}}}}"#, defs.join(","))
        .into_bytes()
}

/// `convert --whole - | head`: the reader takes what it wants and closes
/// the pipe; the command then ends quietly, as `yes | head` does, instead
/// of reporting a broken pipe as a failed write (exit 4).
#[test]
fn a_reader_that_stops_early_ends_convert_quietly() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_openapi-proxy"))
        .args(["convert", "-", "--whole", "-"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    child.stdin.take().expect("stdin").write_all(&large_swagger()).expect("write stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut head = [0u8; 16];
    stdout.read_exact(&mut head).expect("the document starts");
    assert_eq!(&head[..], b"{\"openapi\":\"3.0.");
    drop(stdout);
    let o = child.wait_with_output().expect("binary finishes");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "nothing on stderr");
}

/// `-v` (log level, global) and `--verbose` (each conversion note) are
/// told apart where people look for them.
#[test]
fn help_tells_the_log_level_from_the_notes() {
    let help = convert_help();
    // Each option's text, its lines joined, after the option's own line.
    let option = |line: &str| -> String {
        let start = help.find(&format!("\n{line}\n")).expect("the option is listed");
        let rest = &help[start + line.len() + 2..];
        let end = rest.find("\n\n").unwrap_or(rest.len());
        rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let verbose = option("      --verbose");
    assert!(verbose.contains("not the log level: that is -v N"), "{verbose}");
    let v = option("  -v, --v <N>");
    assert!(v.contains("Not convert's --verbose"), "{v}");
    let about = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(about.contains("--verbose and -v differ"), "{help}");
}

/// An empty input (or one of blanks only) is called what it is, not a
/// parse error at line 1, column 1.
#[test]
fn an_empty_input_says_empty_document() {
    for input in [&b""[..], b" \n\t\n"] {
        let o = convert(&["-", "--whole", "/dev/null"], Some(input));
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        assert!(stderr(&o).contains("empty document"), "{}", stderr(&o));
    }
}

/// `--whole -` ends with a newline, as text on a terminal should.
#[test]
fn whole_dash_ends_with_a_newline() {
    for extra in [&[][..], &["--pretty"][..]] {
        let mut args = vec![SAMPLE, "--whole", "-"];
        args.extend_from_slice(extra);
        let o = convert(&args, None);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(o.stdout.last(), Some(&b'\n'), "{extra:?}");
        assert_ne!(o.stdout.get(o.stdout.len().saturating_sub(2)), Some(&b'\n'), "{extra:?}");
    }
}
