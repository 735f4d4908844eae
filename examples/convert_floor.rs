//! The floor under `openapi-proxy convert --out`: what any converter of the
//! same input into the same files has to do, and nothing else. It reads the
//! input into one buffer, parses it with the parser `convert` uses (into
//! the same tree, on the same allocator), and writes one file per line of
//! a list of output sizes and paths — the files `convert --out` wrote —
//! each with one `write` of that many bytes, over the file in place as
//! `convert` does. The bytes written are the input's, repeated: what a
//! file holds does not change what writing it costs.
//!
//! ```sh
//! S=$(scripts/testdata.sh --print-dir)/kube-openapi/pkg/schemaconv/testdata/swagger.json
//! target/release/openapi-proxy convert $S --out /tmp/o
//! (cd /tmp/o && find . -name '*.json' -printf '%s %P\n') > /tmp/o.list
//! cargo build --release --example convert_floor
//! target/release/examples/convert_floor $S /tmp/o.list /tmp/o
//! ```
//!
//! `BENCHMARKS.md#conversion` times it beside the command.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// The binary's allocator, so that the parsed tree costs what it costs
/// there (mimalloc with transparent huge pages).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, list, out] = args.as_slice() else {
        eprintln!("usage: convert_floor INPUT SIZES_AND_PATHS OUT_DIR");
        return ExitCode::from(2);
    };
    match floor(Path::new(input), Path::new(list), Path::new(out)) {
        Ok(files) => {
            eprintln!("read, parsed, wrote {files} files");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn floor(input: &Path, list: &Path, out: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(input)?;
    let tree = openapi_proxy::parse_tree(&bytes)?;
    let list = std::fs::read_to_string(list)?;
    let mut files = 0;
    for line in list.lines() {
        let (size, path) = line.split_once(' ').ok_or("a line is not SIZE PATH")?;
        let size: usize = size.parse()?;
        let data = repeated(&bytes, size);
        let path = out.join(path);
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(&path)?;
        file.write_all(&data)?;
        if file.metadata()?.len() > size as u64 {
            file.set_len(size as u64)?;
        }
        files += 1;
    }
    // As `convert` does: the process ends here, freeing gives nothing back.
    std::mem::forget(tree);
    Ok(files)
}

/// `size` bytes of `source`, repeated as often as needed. Borrowed when
/// `source` is long enough (the 1.27 input is longer than any of its
/// outputs), so the floor copies nothing the kernel does not.
fn repeated(source: &[u8], size: usize) -> std::borrow::Cow<'_, [u8]> {
    if let Some(prefix) = source.get(..size) {
        return std::borrow::Cow::Borrowed(prefix);
    }
    std::borrow::Cow::Owned(source.iter().copied().cycle().take(size).collect())
}
