//! The files a `convert` input's references name, read for
//! [`bundle`](crate::openapi::bundle) only where the user allows.
//!
//! A document chooses the paths its references name, and what is read is
//! copied into the output. A document from elsewhere could name
//! `../../.kube/config#/users/0/user` and have a credential published with
//! its converted form. So only files under one directory are read (the
//! input's own by default, `--refs-root` to widen it, as Azure's
//! specifications refer to `../../common-types/`), only `.json`, `.yaml`
//! and `.yml` files, only by relative paths, symbolic links resolved before
//! the check, and never more bytes in all than `--max-input-bytes`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::Value;

use crate::json::document;
use crate::openapi::bundle::Files;

use super::convert::read_sized;

/// The files under one directory, read once each.
pub(super) struct RefFiles {
    /// The input, canonical; `None` for standard input.
    input: Option<Rc<str>>,
    /// Where paths of the input are relative to.
    input_dir: PathBuf,
    /// What may be read: this directory and below, canonical.
    allowed: PathBuf,
    /// Bytes that may still be read.
    bytes_left: u64,
    /// The memory budget of each file's parse.
    memory_budget: usize,
    read: BTreeMap<PathBuf, (Rc<str>, Rc<Value>)>,
}

impl RefFiles {
    /// Files for the references of `input` (`-`: standard input, paths
    /// relative to the working directory), under `refs_root` or else the
    /// input's directory.
    pub(super) fn new(
        input: &Path,
        refs_root: Option<&Path>,
        bytes_left: u64,
        memory_budget: usize,
    ) -> std::io::Result<Self> {
        let (input, input_dir) = if input.as_os_str() == "-" {
            (None, std::env::current_dir()?)
        } else {
            let canonical = input.canonicalize()?;
            let dir = canonical.parent().map_or_else(|| canonical.clone(), Path::to_path_buf);
            (Some(Rc::from(canonical.to_string_lossy())), dir)
        };
        let allowed = match refs_root {
            Some(root) => root.canonicalize()?,
            None => input_dir.clone(),
        };
        Ok(Self { input, input_dir, allowed, bytes_left, memory_budget, read: BTreeMap::new() })
    }
}

impl Files for RefFiles {
    fn load(&mut self, from: Option<&str>, path: &str) -> Result<(Rc<str>, Rc<Value>), String> {
        let relative = Path::new(path);
        if relative.is_absolute() {
            return Err("an absolute path; only paths relative to the document are read".into());
        }
        let extension = relative.extension().map(|e| e.to_ascii_lowercase());
        if !matches!(extension.as_ref().and_then(|e| e.to_str()), Some("json" | "yaml" | "yml")) {
            return Err("not a .json, .yaml or .yml file".into());
        }
        let base = from.map(Path::new).and_then(Path::parent).unwrap_or(&self.input_dir);
        let joined = joined_lexically(base, relative);
        let canonical = joined.canonicalize().map_err(|e| format!("{}: {e}", joined.display()))?;
        if let Some(input) = self.input.as_ref().filter(|i| canonical.as_os_str() == &***i) {
            // The input itself, whatever --refs-root allows: the reference
            // becomes local, and nothing is read (the bundler looks no
            // further than the name).
            return Ok((Rc::clone(input), Rc::new(Value::Null)));
        }
        if !canonical.starts_with(&self.allowed) {
            return Err(format!(
                "{} is outside {}; --refs-root DIR allows reading under DIR",
                canonical.display(),
                self.allowed.display()
            ));
        }
        if let Some(hit) = self.read.get(&canonical) {
            return Ok(hit.clone());
        }
        let bytes = read_within(&canonical, self.bytes_left)?;
        self.bytes_left -= bytes.len() as u64;
        let (tree, _) = document::parse_tree_within(&bytes, self.memory_budget)
            .map_err(|e| format!("{}: {e}", canonical.display()))?;
        let id: Rc<str> = Rc::from(canonical.to_string_lossy());
        let loaded = (id, Rc::new(tree.to_value()));
        self.read.insert(canonical, loaded.clone());
        Ok(loaded)
    }

    fn root(&self) -> Option<Rc<str>> {
        self.input.clone()
    }
}

/// `relative` joined to `base`, `.` and `..` resolved as a URL's are
/// (RFC 3986 section 5.2.4), before any directory is looked at:
/// `./sub/../a.yaml` is `a.yaml` whether or not `sub` exists, as
/// swagger-parser reads it. Symbolic links are resolved afterwards.
fn joined_lexically(base: &Path, relative: &Path) -> PathBuf {
    let mut joined = base.to_path_buf();
    for part in relative.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                joined.pop();
            }
            other => joined.push(other),
        }
    }
    joined
}

/// The bytes of `path`, refused past `limit`.
fn read_within(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let failed = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(failed)?;
    let size = file.metadata().map_err(failed)?.len();
    read_sized(file, size.min(limit), limit).map_err(failed)?.ok_or_else(|| {
        format!("{}: the files read would be larger than --max-input-bytes", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory with `spec/main.yaml`, `spec/a.yaml` and
    /// `outside/secret.yaml`.
    fn tree(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ref-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in [
            ("spec/main.yaml", "swagger: '2.0'\n"),
            ("spec/a.yaml", "A: {type: string}\n"),
            ("spec/notes.txt", "A: {type: string}\n"),
            ("outside/secret.yaml", "token: hunter2\n"),
        ] {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    fn files(dir: &Path, root: Option<&Path>, bytes: u64) -> RefFiles {
        RefFiles::new(&dir.join("spec/main.yaml"), root, bytes, usize::MAX).expect("files")
    }

    #[test]
    fn only_relative_json_and_yaml_files_under_the_root_are_read() {
        let dir = tree("rules");
        let mut f = files(&dir, None, 1 << 20);
        let (id, a) = f.load(None, "a.yaml").expect("beside the input");
        assert_eq!(a["A"]["type"], "string");
        assert!(id.ends_with("spec/a.yaml"), "{id}");
        assert_eq!(f.load(None, "./sub/../a.yaml").expect("same file").0, id);
        let e = f.load(None, "../outside/secret.yaml").unwrap_err();
        assert!(e.contains("is outside") && e.contains("--refs-root"), "{e}");
        let absolute = dir.join("spec/a.yaml");
        let e = f.load(None, absolute.to_str().expect("utf-8")).unwrap_err();
        assert!(e.starts_with("an absolute path"), "{e}");
        let e = f.load(None, "notes.txt").unwrap_err();
        assert_eq!(e, "not a .json, .yaml or .yml file");
        let e = f.load(None, "missing.yaml").unwrap_err();
        assert!(e.contains("missing.yaml"), "{e}");

        // Widened, the same file is read, relative to the file referring.
        let mut f = files(&dir, Some(&dir), 1 << 20);
        assert!(f.load(None, "../outside/secret.yaml").is_ok());
        let from = dir.join("outside/secret.yaml").canonicalize().expect("canonical");
        assert!(f.load(from.to_str(), "../spec/a.yaml").is_ok());
    }

    #[cfg(unix)]
    /// A reference to the input by its own path is the input, even with a
    /// `--refs-root` that does not contain it.
    #[test]
    fn the_input_is_itself_whatever_the_root() {
        let dir = tree("itself");
        let mut f = files(&dir, Some(&dir.join("outside")), 1 << 20);
        let (id, _) = f.load(None, "./main.yaml").expect("the input");
        assert_eq!(Some(&id), f.root().as_ref());
        assert!(f.load(None, "a.yaml").expect_err("outside the root").contains("outside"));
    }

    #[test]
    fn a_link_out_of_the_root_is_outside() {
        let dir = tree("link");
        std::os::unix::fs::symlink(dir.join("outside/secret.yaml"), dir.join("spec/link.yaml"))
            .expect("symlink");
        let e = files(&dir, None, 1 << 20).load(None, "link.yaml").unwrap_err();
        assert!(e.contains("is outside"), "{e}");
    }

    #[test]
    fn the_files_read_share_one_byte_limit() {
        let dir = tree("bytes");
        // `A: {type: string}\n` is 18 bytes: once fits in 30, twice not,
        // and reading the same file again costs nothing.
        let mut f = files(&dir, Some(&dir), 30);
        assert!(f.load(None, "a.yaml").is_ok());
        assert!(f.load(None, "a.yaml").is_ok());
        let e = f.load(None, "../outside/secret.yaml").unwrap_err();
        assert!(e.contains("larger than --max-input-bytes"), "{e}");
    }
}
