//! Golden files: each Swagger 2.0 fixture in `testdata/convert/` and
//! `testdata/sample/` (`NAME.v2.json` or `NAME.v2.yaml`) has its expected
//! conversion beside it (`NAME.v3.json`, indented) and the expected notes
//! (`NAME.notes.txt`). The output is deterministic, so the comparison is
//! byte for byte. After an intended change, regenerate with
//! `EXPECTORATE=overwrite cargo test --test integration golden` and review
//! the diff in git.

use std::path::{Path, PathBuf};

use openapi_proxy::convert;
use openapi_proxy::parse_document;

fn fixtures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut out = Vec::new();
    for dir in ["convert", "sample"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("fixture dir") {
            let path = entry.expect("entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name.ends_with(".v2.json") || name.ends_with(".v2.yaml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn expect_file(path: &Path, actual: &str, failures: &mut Vec<String>) {
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    if expected == actual {
        return;
    }
    if std::env::var("EXPECTORATE").as_deref() == Ok("overwrite") {
        std::fs::write(path, actual).expect("write golden file");
    } else {
        let first = expected.lines().zip(actual.lines()).position(|(e, a)| e != a);
        failures.push(format!(
            "{} differs (first differing line: {}); rerun with EXPECTORATE=overwrite and review",
            path.display(),
            first.map_or("length".to_owned(), |l| (l + 1).to_string())
        ));
    }
}

#[test]
fn fixtures_convert_to_their_golden_files() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 2, "fixtures missing: {fixtures:?}");
    let mut failures = Vec::new();
    for input in fixtures {
        let bytes = std::fs::read(&input).expect("read fixture");
        let v2 = parse_document(&bytes).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let converted = convert(&v2).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let stem = input.to_string_lossy().replace(".v2.json", "").replace(".v2.yaml", "");
        let mut v3 = serde_json::to_string_pretty(&converted.document).expect("serializes");
        v3.push('\n');
        expect_file(Path::new(&format!("{stem}.v3.json")), &v3, &mut failures);
        let notes: String = converted.notes.iter().map(|n| format!("{n}\n")).collect();
        expect_file(Path::new(&format!("{stem}.notes.txt")), &notes, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
