//! What a child process costs in memory and has read, from `/proc`: the
//! memory-bound tests run the binary and compare its peak resident set
//! (`VmHWM`) with a bound. `VmHWM` is gone once the child exits, so the
//! tests read it while the child is held at the point that matters (a
//! blocked read, a delayed answer).

/// A `Key:   value unit` field of `/proc/<pid>/<file>`, as a number (the
/// unit dropped); `None` once the process is gone.
fn proc_field(pid: u32, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    let value = text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    value.trim().trim_end_matches("kB").trim().parse().ok()
}

/// The peak resident set of `pid` so far, in KiB (`VmHWM`).
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    proc_field(pid, "status", "VmHWM")
}

/// The bytes `pid` has read so far through `read(2)` and friends
/// (`rchar` of `/proc/<pid>/io`).
pub fn bytes_read(pid: u32) -> Option<u64> {
    proc_field(pid, "io", "rchar")
}
