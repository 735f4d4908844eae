//! One subtree standing at many spots of a tree ([`Node::Shared`]).
//!
//! The converter turns each of an API's query and path parameters into
//! the same few objects again and again: Kubernetes 1.27 writes 4,177
//! parameters inline, 102 of them different, and they are more than half
//! the bytes of its OpenAPI 3.0 documents. Converted once and shared, each
//! is built and written out once; every other spot copies its bytes.
//!
//! A shared subtree holds no `$ref`, so the walks that look for
//! references (`openapi::split`) pass it by without looking inside. A
//! clone shares it, and nothing changes it once it is shared.

use std::fmt;
use std::sync::{Arc, OnceLock};

use super::Node;

/// A subtree that stands at many spots of a tree: see the module.
#[derive(Clone)]
pub struct Shared<'a>(Arc<Inner<'a>>);

struct Inner<'a> {
    node: Node<'a>,
    /// The node as compact JSON, once it is known to stand at more than
    /// one spot (a subtree met once is written from the tree, as any).
    rendered: OnceLock<Box<[u8]>>,
}

impl<'a> Shared<'a> {
    /// `node`, to be shared; `node` back when something inside it is named
    /// `$ref`, or is shared already, which the walks for references would
    /// then have to look into.
    pub(crate) fn new(node: Node<'a>) -> Result<Self, Node<'a>> {
        if holds_ref_or_shared(&node) {
            return Err(node);
        }
        Ok(Self(Arc::new(Inner { node, rendered: OnceLock::new() })))
    }

    /// The subtree.
    #[must_use]
    pub fn node(&self) -> &Node<'a> {
        &self.0.node
    }

    /// Renders the subtree now, for every later [`Node::render`] of it to
    /// copy: for one placed at a second spot.
    pub(crate) fn keep_rendered(&self) {
        self.0.rendered.get_or_init(|| {
            let mut out = Vec::new();
            self.0.node.render(&mut out);
            out.into_boxed_slice()
        });
    }

    /// The compact JSON [`Shared::keep_rendered`] made, if it was called.
    pub(crate) fn rendered(&self) -> Option<&[u8]> {
        self.0.rendered.get().map(|b| &**b)
    }

    /// True when both are the one subtree (not merely equal ones).
    #[must_use]
    pub fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Shared<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.node(), f)
    }
}

/// True when a member of an object under `node` (itself included) is
/// named `$ref`, or a node is shared. Iterative: the converter's nodes
/// are as deep as the input makes them.
fn holds_ref_or_shared(node: &Node<'_>) -> bool {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n {
            Node::Object(o) => {
                for (k, v) in o {
                    if k == "$ref" {
                        return true;
                    }
                    stack.push(v);
                }
            }
            Node::Array(items) => stack.extend(items.iter()),
            Node::Shared(_) => return true,
            _ => {}
        }
    }
    false
}
