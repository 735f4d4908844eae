//! A document and the files it refers to → bundle → convert, checking what
//! must hold for any input:
//!
//! - nothing panics, and bundling stays within its copy limit;
//! - bundling is deterministic: the same input gives the same document and
//!   notes;
//! - no reference to another document is kept silently: each one left in
//!   the output has an `unread-ref` note saying why;
//! - each reference a `bundled-ref` note says was made resolves in the
//!   bundled document;
//! - the bundled document converts or is refused, without panicking.
//!
//! The input is a JSON array: the document, then the files `f0.json`,
//! `f1.json`, … it may refer to (`sub/../f1.json` names `f1.json`). Other
//! inputs are uninteresting, not failures.

#![no_main]

use std::collections::BTreeMap;
use std::rc::Rc;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

use op::bundle::{Files, bundle};
use op::{Note, NoteKind};
use openapi_proxy as op;

/// The copy limit: small, so that inputs reach it.
const COPY_LIMIT: usize = 100_000;

/// Files named `f0.json`, `f1.json`, … in one folder.
struct Memory(BTreeMap<String, Rc<Value>>);

impl Files for Memory {
    fn load(&mut self, _from: Option<&str>, path: &str) -> Result<(Rc<str>, Rc<Value>), String> {
        let mut parts: Vec<&str> = Vec::new();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        let id = parts.join("/");
        let content = self.0.get(&id).cloned().ok_or_else(|| format!("no file {id}"))?;
        Ok((Rc::from(id), content))
    }

    fn root(&self) -> Option<Rc<str>> {
        Some(Rc::from("main.json"))
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Array(mut docs)) = serde_json::from_slice::<Value>(data) else { return };
    if docs.is_empty() {
        return;
    }
    let root = docs.remove(0);
    let files: BTreeMap<String, Rc<Value>> =
        docs.into_iter().enumerate().map(|(i, v)| (format!("f{i}.json"), Rc::new(v))).collect();
    let run = || bundle(root.clone(), &mut Memory(files.clone()), COPY_LIMIT);
    let Ok(first) = run() else { return };
    let second = run().expect("the same input bundled once already");
    assert!(first.document == second.document, "bundling the same input twice differs");
    assert_eq!(first.notes, second.notes, "bundling the same input twice notes differently");

    let unread: Vec<&str> = first
        .notes
        .iter()
        .filter_map(|n| match &n.kind {
            NoteKind::UnreadRef { reference, .. } => Some(reference.as_str()),
            _ => None,
        })
        .collect();
    for (at, reference) in op::all_refs(&first.document) {
        // `""` and `#…` are the document itself (RFC 3986 section 4.4).
        let local = reference.is_empty() || reference.starts_with('#');
        assert!(
            local || unread.contains(&reference.as_str()),
            "{reference} at {at} names another document and was kept without a note"
        );
    }
    for Note { kind, .. } in &first.notes {
        if let NoteKind::BundledRef { to: Some(to), .. } = kind {
            let fragment = to.strip_prefix('#').unwrap_or(to);
            let decoded = op::fragment_pointer(fragment).expect("bundling writes valid fragments");
            assert!(
                first.document.pointer(&decoded).is_some(),
                "{to} was made by bundling and points to nothing"
            );
        }
    }
    let _ = op::convert(&first.document);
});
