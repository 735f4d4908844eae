//! Bytes → parse → convert → split, checking what must hold for any input:
//!
//! - nothing panics;
//! - conversion is deterministic: the converted document serializes to the
//!   same bytes twice, and converting the same input again gives the same
//!   bytes (and the same notes);
//! - every document the split produces is closed under `$ref`: each local
//!   `$ref` (`#/…`) resolves inside that same document;
//! - `split_rendered` gives for each key exactly the bytes
//!   `serde_json::to_vec` gives for `split`'s document;
//! - the tree path, which the `convert` command and the proxy run
//!   (`parse_tree`, `convert_tree`, `split_rendered_tree`), accepts the
//!   same bytes as `parse` and gives the same document, notes and bytes as
//!   the `Value` path.
//!
//! Inputs that are not JSON/YAML, not Swagger 2.0, or that the splitter
//! rejects are uninteresting, not failures.

#![no_main]

use libfuzzer_sys::fuzz_target;

use openapi_proxy as op;

fuzz_target!(|data: &[u8]| {
    let Ok(v2) = op::parse_document(data) else {
        assert!(op::parse_tree(data).is_err(), "parse_tree accepts what parse refuses");
        return;
    };
    let tree = op::parse_tree(data).expect("parse accepted the same bytes");
    assert!(tree.to_value() == v2, "parse_tree reads another document than parse");
    let fast = op::convert_tree(&tree);
    let Ok(first) = op::convert(&v2) else {
        assert!(fast.is_err(), "convert_tree accepts what convert refuses");
        return;
    };
    let fast = fast.expect("convert accepted the same document");
    assert_eq!(fast.notes, first.notes, "convert_tree gives other notes than convert");

    let bytes = serde_json::to_vec(&first.document).expect("a Value serializes");
    let again = serde_json::to_vec(&first.document).expect("a Value serializes");
    assert!(bytes == again, "serializing the converted document twice differs");
    assert!(
        same_json(&fast.document.to_vec(), &bytes),
        "convert_tree's bytes differ from convert's"
    );

    let second = op::convert(&v2).expect("the same input converted once already");
    let second_bytes = serde_json::to_vec(&second.document).expect("a Value serializes");
    assert!(bytes == second_bytes, "converting the same input twice gives different documents");
    assert_eq!(first.notes, second.notes, "converting the same input twice gives different notes");

    let Ok(parts) = op::split(&first.document) else { return };
    for (key, doc) in &parts.documents {
        // The library's check: a fragment is percent-decoded before it is
        // read as a JSON pointer (`#/…/amount%20due`), as RFC 6901 says.
        if let Some(reference) = op::dangling_refs(doc).first() {
            panic!(
                "split document {key} is not closed under $ref: {reference} resolves to nothing"
            );
        }
    }

    let rendered = op::split_rendered(&first.document).expect("split accepted the document");
    let rendered_tree =
        op::split_rendered_tree(&fast.document).expect("split accepted the same document");
    assert!(
        rendered_tree.unplaced == rendered.unplaced
            && rendered_tree.documents.keys().eq(rendered.documents.keys())
            && rendered_tree
                .documents
                .iter()
                .all(|(key, tree_bytes)| same_json(tree_bytes, &rendered.documents[key])),
        "split_rendered_tree differs from split_rendered"
    );
    assert_eq!(rendered.unplaced, parts.unplaced, "split_rendered places paths differently");
    assert!(
        rendered.documents.keys().eq(parts.documents.keys()),
        "split_rendered gives other keys than split"
    );
    for (key, doc) in &parts.documents {
        let expected = serde_json::to_vec(doc).expect("a Value serializes");
        assert!(
            rendered.documents[key] == expected,
            "split_rendered's bytes for {key} differ from split's document serialized"
        );
    }
});

/// The tree path (what the proxy and `convert` run) and the `Value` path
/// write the same bytes, except for integers beyond 64 bits: the tree
/// keeps them as written, a `Value` can only hold them as floats. So the
/// bytes are equal, or they are once both are read back and written again
/// (which turns those integers into the same floats, and keeps member
/// order: a difference in order is still caught).
fn same_json(tree: &[u8], value: &[u8]) -> bool {
    let normalized = |bytes: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(bytes)
            .ok()
            .and_then(|v| serde_json::to_vec(&v).ok())
    };
    tree == value || matches!((normalized(tree), normalized(value)), (Some(a), Some(b)) if a == b)
}
