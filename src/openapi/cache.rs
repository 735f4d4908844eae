//! What was prepared from each converted document (the proxy: its gzip
//! rendition, hash and ETag), keyed by the SHA-256 of the document's bytes,
//! shared by every poll loop and outliving snapshots.
//!
//! A Swagger 2.0 document changes a little at a time (one aggregated server
//! upgrades one group-version); the documents whose bytes did not change
//! keep the prepared body they had — not compressed again, the same `Arc`
//! in the next snapshot — so clients' caches of them stay valid.

use std::sync::Arc;

use dashmap::DashMap;

/// Prepared output by SHA-256 of the converted document's bytes. `T` is whatever the
/// user keeps of a conversion: the proxy keeps the prepared response body
/// (bytes, gzip, ETag), so an unchanged part is not even compressed again.
#[derive(Debug)]
pub struct ConversionCache<T> {
    entries: DashMap<[u8; 32], Arc<T>>,
}

impl<T> Default for ConversionCache<T> {
    fn default() -> Self {
        Self { entries: DashMap::new() }
    }
}

impl<T> ConversionCache<T> {
    /// What was prepared from the document with this digest, if cached.
    #[must_use]
    pub fn get(&self, digest: &[u8; 32]) -> Option<Arc<T>> {
        // Clone the Arc and drop the map's guard on the same line (dashmap
        // may deadlock if a guard is held while the map is used again).
        self.entries.get(digest).map(|e| Arc::clone(e.value()))
    }

    /// Caches a prepared document and returns it (or the one another thread cached
    /// first, so every user shares one `Arc`).
    pub fn insert(&self, digest: [u8; 32], rendered: Arc<T>) -> Arc<T> {
        Arc::clone(self.entries.entry(digest).or_insert(rendered).value())
    }

    /// Drops entries nothing else holds any more: documents no downstream
    /// contributes and no snapshot serves.
    pub fn prune(&self) {
        self.entries.retain(|_, v| Arc::strong_count(v) > 1);
    }

    /// Number of cached conversions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is cached.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_only_what_is_still_used() {
        let cache = ConversionCache::default();
        let kept = cache.insert([1; 32], Arc::new(b"{}".to_vec()));
        drop(cache.insert([2; 32], Arc::new(b"[]".to_vec())));
        cache.prune();
        assert_eq!(cache.len(), 1);
        assert!(Arc::ptr_eq(&cache.get(&[1; 32]).unwrap(), &kept));
    }
}
