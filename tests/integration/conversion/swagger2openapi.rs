//! swagger2openapi's own conversion suite (`swagger2openapi-tests/` in the
//! shared test data, `scripts/testdata.sh`), run through our converter.
//!
//! Issue 14 asks that every real Swagger 2.0 document converts to valid
//! OpenAPI 3.0. For each of the suite's 37 cases the table below says what
//! must happen: the output passes swagger-parser (which also resolves every
//! `$ref`), or the input is refused with an error naming the problem. The
//! notes each conversion gives are part of the outcome, so a case whose
//! conversion changes in any visible way fails here. Each case is converted
//! as `openapi-proxy convert` does it, references to other files of the
//! suite followed and copied in: `issue39`, a path item that is a `$ref` to
//! another file holding Swagger 2.0, was the one case left invalid while
//! those references were kept as written.
//!
//! The cases are read where they are and never copied into the repository.
//! For validation the suite is copied into a scratch folder under `target/`
//! and our output is written as each case's `openapi.yaml` (JSON is YAML),
//! so references to sibling files (`../include/health.yml`, and
//! `endpoints/ping.yaml`, which refers back to `../openapi.yaml`) resolve as
//! they do in the suite.
//!
//! Where our output differs from swagger2openapi's expected `openapi.yaml`
//! on purpose, the table says why in one line.

use std::fs;
use std::path::{Path, PathBuf};

use openapi_proxy::cli::{ConvertArgs, run_convert};
use openapi_proxy::error_chain;

use crate::common::shared::shared_testdata;
use crate::common::validators;

/// What converting one case must give.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// Converted, with notes of these labels (in order); the output passes
    /// swagger-parser.
    Valid(&'static [&'static str]),
    /// Refused; the error message contains this text.
    Refused(&'static str),
}

/// One case of the suite.
struct Case {
    /// The case's folder.
    name: &'static str,
    /// What must happen.
    outcome: Outcome,
    /// Why our output differs from swagger2openapi's `openapi.yaml`, where
    /// it does on purpose (beyond always writing `components`, which
    /// Kubernetes' documents always have).
    differs: Option<&'static str>,
}

use Outcome::{Refused, Valid};

const BUNDLED: &str = "bundled-ref";
const DROPPED: &str = "dropped-field";
const UNREAD: &str = "unread-ref";
const HOISTED: &str = "hoisted-schema";
const FORM_COMPONENT: &str = "formdata-component";
const MULTIPART_STYLE: &str = "multipart-collection-format";
const NUMERIC_VERSION: &str = "numeric-swagger-version";
const RENAMED: &str = "renamed-component";
const UNMAPPED: &str = "unmapped-ref";

/// The expected outcome of every case, in the suite's order.
const CASES: &[Case] = &[
    Case {
        name: "!issue217",
        outcome: Valid(&[]),
        differs: Some("invalid only under the `throws` option; YAML anchors are read as YAML says"),
    },
    Case {
        name: "!issue217b",
        outcome: Valid(&[]),
        differs: Some(
            "invalid only under the `anchors` option; YAML anchors are read as YAML says",
        ),
    },
    Case {
        name: "!issue79",
        outcome: Valid(&[]),
        differs: Some("not v2 (`example` on a query parameter), but v3 has the field: kept"),
    },
    Case {
        name: "!missing-ref",
        outcome: Refused("reference #/parameters/notthere at /paths/~1/get/parameters/0"),
        differs: Some("a local $ref to nothing is refused, not converted (and not only warned)"),
    },
    Case {
        name: "issue102",
        outcome: Valid(&[BUNDLED, UNREAD, BUNDLED, DROPPED]),
        differs: Some("its path item file holds v3 `content`, which Swagger 2.0 has no place for"),
    },
    Case {
        name: "issue112",
        outcome: Valid(&[FORM_COMPONENT, FORM_COMPONENT]),
        differs: Some("no x-codegen-request-body-name: a body parameter's name has no place in v3"),
    },
    Case {
        name: "issue117",
        outcome: Valid(&[FORM_COMPONENT]),
        differs: Some("form parameters are inlined where used, not made requestBodies components"),
    },
    Case {
        name: "issue130-allOf",
        outcome: Valid(&[]),
        differs: Some("a $ref with siblings is always wrapped in allOf, siblings kept beside it"),
    },
    Case {
        name: "issue130-preserve",
        outcome: Valid(&[]),
        differs: Some("siblings of a $ref are wrapped in allOf (v3.0 ignores them otherwise)"),
    },
    Case {
        name: "issue130-remove",
        outcome: Valid(&[]),
        differs: Some("siblings of a $ref are wrapped in allOf, never removed"),
    },
    Case {
        name: "issue145",
        outcome: Valid(&[MULTIPART_STYLE, MULTIPART_STYLE, FORM_COMPONENT]),
        differs: Some("a multipart array field keeps its collectionFormat as encoding style"),
    },
    Case { name: "issue164", outcome: Valid(&[]), differs: None },
    Case {
        name: "issue169",
        outcome: Valid(&[]),
        differs: Some("a body with no consumes anywhere is under */*, not application/json (A-5)"),
    },
    Case {
        name: "issue186",
        outcome: Valid(&[UNMAPPED, UNMAPPED, UNMAPPED, UNMAPPED, UNMAPPED]),
        differs: None,
    },
    Case { name: "issue189", outcome: Valid(&[]), differs: None },
    Case { name: "issue201", outcome: Valid(&[]), differs: None },
    Case { name: "issue202", outcome: Valid(&[]), differs: None },
    Case {
        name: "issue215",
        outcome: Valid(&[RENAMED, RENAMED]),
        differs: Some("a body with no consumes anywhere is under */*, not application/json (A-5)"),
    },
    Case { name: "issue229", outcome: Valid(&[FORM_COMPONENT]), differs: None },
    Case {
        name: "issue35",
        outcome: Valid(&[]),
        differs: Some("x-example is an extension and is copied, not made an `example`"),
    },
    Case {
        name: "issue39",
        outcome: Valid(&[BUNDLED, BUNDLED]),
        differs: Some("the path items of other files are copied in and converted with the rest"),
    },
    Case { name: "issue41", outcome: Valid(&[RENAMED]), differs: None },
    Case {
        name: "issue51a",
        outcome: Valid(&[BUNDLED, BUNDLED, NUMERIC_VERSION]),
        differs: Some("what other files hold is copied in, as the resolve option does"),
    },
    Case {
        name: "issue51b",
        outcome: Valid(&[BUNDLED, BUNDLED, NUMERIC_VERSION]),
        differs: Some("what other files hold is copied in, as the resolve option does"),
    },
    Case {
        name: "issue51c",
        outcome: Valid(&[HOISTED]),
        differs: Some("the hoisted schema is named after its pointer and also stays inline"),
    },
    Case {
        name: "issue51d",
        outcome: Valid(&[HOISTED]),
        differs: Some("the hoisted schema is named after its pointer and also stays inline"),
    },
    Case { name: "issue6", outcome: Valid(&[NUMERIC_VERSION]), differs: None },
    Case {
        name: "issue70",
        outcome: Valid(&[]),
        differs: Some("x-discriminator is an extension and is copied, not made a discriminator"),
    },
    Case {
        name: "issue76",
        outcome: Valid(&[]),
        differs: Some("style and explode go together, or not at all where v3's default agrees"),
    },
    Case { name: "minimal", outcome: Valid(&[]), differs: None },
    Case {
        name: "petstore",
        outcome: Valid(&[]),
        differs: Some("bodies are inline, as Kubernetes writes them; no requestBodies component"),
    },
    Case {
        name: "pull348-trailing-slash",
        outcome: Valid(&[NUMERIC_VERSION]),
        differs: Some("basePath `/` is kept in the server URL as written"),
    },
    Case {
        name: "speccy 141",
        outcome: Valid(&[BUNDLED]),
        differs: Some("what other files hold is copied in, as the resolve option does"),
    },
    Case {
        name: "speccy249",
        outcome: Valid(&[BUNDLED]),
        differs: Some("what other files hold is copied in, as the resolve option does"),
    },
    Case { name: "speccy286", outcome: Valid(&[]), differs: None },
    Case { name: "without-schemes", outcome: Valid(&[]), differs: None },
    Case { name: "without-schemes-with-base-path", outcome: Valid(&[]), differs: None },
];

/// The suite's folder in the shared test data.
fn suite_dir() -> PathBuf {
    shared_testdata("swagger2openapi-tests")
}

/// The case folders of the suite: every folder holding a `swagger.*`.
fn case_names(suite: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(suite)
        .expect("the suite folder is readable")
        .map(|entry| entry.expect("directory entries are readable").path())
        .filter(|path| input_of(path).is_some())
        .map(|path| path.file_name().and_then(|n| n.to_str()).expect("UTF-8 names").to_owned())
        .collect();
    names.sort();
    names
}

/// A case's Swagger 2.0 input, `swagger.yaml` or `swagger.json`.
fn input_of(case: &Path) -> Option<PathBuf> {
    ["swagger.yaml", "swagger.json"].into_iter().map(|f| case.join(f)).find(|p| p.is_file())
}

/// Copies `from` into `to` recursively, leaving out each case's expected
/// `openapi.yaml` (ours is written there instead).
fn copy_suite(from: &Path, to: &Path, depth: usize) {
    fs::create_dir_all(to).expect("the scratch folder is writable");
    for entry in fs::read_dir(from).expect("the suite folder is readable") {
        let path = entry.expect("directory entries are readable").path();
        let target = to.join(path.file_name().expect("entries have names"));
        if path.is_dir() {
            copy_suite(&path, &target, depth + 1);
        } else if !(depth == 1 && path.file_name().is_some_and(|n| n == "openapi.yaml")) {
            fs::copy(&path, &target).expect("the scratch folder is writable");
        }
    }
}

#[test]
fn the_table_names_every_case_of_the_suite_once() {
    let names = case_names(&suite_dir());
    assert_eq!(names.len(), 37, "{names:?}");
    let mut listed: Vec<&str> = CASES.iter().map(|c| c.name).collect();
    listed.sort_unstable();
    assert_eq!(listed, names);
    for case in CASES {
        if let Some(reason) = case.differs {
            assert!(!reason.is_empty() && !reason.contains('\n'), "{}: one line", case.name);
        }
    }
}

#[test]
fn every_case_of_the_suite_converts_to_valid_openapi_3_or_is_refused_by_name() {
    let suite = suite_dir();
    let scratch = validators::scratch_dir("swagger2openapi");
    copy_suite(&suite, &scratch, 0);
    // Each written output; every one must pass swagger-parser.
    let mut outputs: Vec<PathBuf> = Vec::new();
    let mut wrong = Vec::new();
    for case in CASES {
        // Converted as `convert` does it, from the copy, so references to
        // other files of the suite are followed (anywhere in it).
        let input = input_of(&scratch.join(case.name)).expect("every listed case has an input");
        let out = scratch.join(case.name).join("openapi.yaml");
        let args = ConvertArgs {
            input,
            out: None,
            whole: Some(out.clone()),
            pretty: true,
            verbose: false,
            max_input_bytes: 64 << 20,
            memory_budget_bytes: 512 << 20,
            refs_root: Some(scratch.clone()),
            keep_file_refs: false,
        };
        match (run_convert(&args).map_err(|e| error_chain(&e)), case.outcome) {
            (Ok(converted), Valid(labels)) => {
                let got: Vec<&str> = converted.notes.iter().map(|n| n.kind.label()).collect();
                if got != labels {
                    wrong.push(format!("{}: notes {got:?}, expected {labels:?}", case.name));
                }
                outputs.push(out);
            }
            (Err(message), Refused(text)) => {
                if !message.contains(text) {
                    wrong.push(format!(
                        "{}: refused with {message:?}, not naming {text:?}",
                        case.name
                    ));
                }
            }
            (Ok(_), Refused(text)) => {
                wrong.push(format!("{}: converted, expected a refusal naming {text:?}", case.name));
            }
            (Err(e), Valid(_)) => wrong.push(format!("{}: refused: {e}", case.name)),
        }
    }
    let reports = validators::swagger_parser(&outputs);
    assert_eq!(reports.len(), outputs.len());
    for (report, file) in reports.iter().zip(&outputs) {
        assert_eq!(&report.file, file);
        if !report.errors.is_empty() {
            let errors = &report.errors;
            wrong.push(format!("{}: swagger-parser said {errors:?}", file.display()));
        }
    }
    assert!(wrong.is_empty(), "{} case(s) changed outcome:\n{}", wrong.len(), wrong.join("\n"));
}
