//! The default memory budget: from the memory the process may use.
//!
//! A fixed default either refuses honest big clusters (5,000 CRDs) or lets
//! a small container be killed, so the budget follows the container's
//! limit: the process itself (runtime, connection buffers, discovery
//! renditions) keeps [`PROCESS_RESERVE_BYTES`], and the rest is halved,
//! because while a downstream's new documents are built its previous ones
//! are still served. Without a container limit, a quarter of the physical
//! memory stands for one: the proxy is rarely alone on a machine.

use std::fmt;
use std::path::Path;

/// What the process needs besides the documents: the runtime, connection
/// buffers, the snapshot's discovery renditions.
pub const PROCESS_RESERVE_BYTES: u64 = 64 * 1024 * 1024;

/// The protobuf renditions of OpenAPI documents, made when a client first
/// asks for one, hold at most this part of the memory budget together
/// (`budget / 8`). They are not charged to a downstream's share: what a
/// client asks for must not make a downstream's next round refused.
pub const PROTOBUF_RENDITIONS_PART: usize = 8;

/// What the merged `/openapi/v2` of several downstreams may hold: three
/// quarters of the memory budget. That bounds making it (on a client's
/// request, or aside once clients read it), its peak estimated from the
/// documents it reads, and afterwards the document and its protobuf
/// rendition together; past it the document or the rendition is not
/// made. With the documents (the budget) and the documents' protobuf
/// renditions (an eighth), the bodies held stay within 15/8 of the
/// budget, inside the halving of [`budget_for_limit`]. At 5,000 CRDs
/// beside Kubernetes' own documents the documents hold a third of the
/// budget a 512 MiB container gives, and the merge about 130 MiB at its
/// peak.
#[must_use]
pub fn merged_v2_limit(budget: usize) -> u64 {
    u64::try_from(budget / 4 * 3).unwrap_or(u64::MAX)
}

/// The limit assumed when none can be read: the deploy manifests'.
pub const ASSUMED_LIMIT_BYTES: u64 = 512 * 1024 * 1024;

/// The smallest budget a limit gives, however small the limit.
const SMALLEST_BUDGET_BYTES: u64 = 16 * 1024 * 1024;

/// Each pooled downstream's guarantee: half an equal part of the pool, so
/// the other half is there for whichever needs it.
#[must_use]
pub fn pooled_guarantee(pool: usize, pooled: usize) -> usize {
    match pooled {
        0 => 0,
        1 => pool / 2,
        n => pool / n / 2,
    }
}

/// What the process learned of its memory at start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MachineMemory {
    /// The container's limit (cgroup v2 `memory.max`, v1
    /// `memory.limit_in_bytes`), when one is set.
    pub container_limit: Option<u64>,
    /// The machine's memory (`MemTotal`).
    pub physical: Option<u64>,
}

/// Where the budget came from, for the log line at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetSource {
    /// `memoryBudgetBytes` or `--memory-budget-bytes`.
    Configured,
    /// The container's memory limit.
    ContainerLimit(u64),
    /// A quarter of the physical memory, with no container limit.
    PhysicalMemory(u64),
    /// Nothing could be read: the deploy manifests' limit is assumed.
    Assumed,
}

impl fmt::Display for BudgetSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MIB: u64 = 1 << 20;
        match self {
            Self::Configured => f.write_str("memoryBudgetBytes"),
            Self::ContainerLimit(l) => write!(f, "container memory limit {} MiB", l / MIB),
            Self::PhysicalMemory(p) => {
                write!(f, "no container limit; a quarter of {} MiB physical memory", p / MIB)
            }
            Self::Assumed => {
                write!(f, "no memory limit readable; assumed {} MiB", ASSUMED_LIMIT_BYTES / MIB)
            }
        }
    }
}

/// The budget for a process limited to `limit` bytes.
#[must_use]
pub fn budget_for_limit(limit: u64) -> usize {
    let budget = (limit.saturating_sub(PROCESS_RESERVE_BYTES) / 2).max(SMALLEST_BUDGET_BYTES);
    usize::try_from(budget).unwrap_or(usize::MAX)
}

/// The default budget on `machine`, and why.
#[must_use]
pub fn default_budget(machine: &MachineMemory) -> (usize, BudgetSource) {
    match (machine.container_limit, machine.physical) {
        // A limit at or above the machine's memory limits nothing.
        (Some(limit), Some(physical)) if limit >= physical => {
            (budget_for_limit(physical / 4), BudgetSource::PhysicalMemory(physical))
        }
        (Some(limit), _) => (budget_for_limit(limit), BudgetSource::ContainerLimit(limit)),
        (None, Some(physical)) => {
            (budget_for_limit(physical / 4), BudgetSource::PhysicalMemory(physical))
        }
        (None, None) => (budget_for_limit(ASSUMED_LIMIT_BYTES), BudgetSource::Assumed),
    }
}

impl MachineMemory {
    /// Reads this process's limits from `/proc` and `/sys/fs/cgroup`.
    #[must_use]
    pub fn detect() -> Self {
        Self::detect_in(Path::new("/proc"), Path::new("/sys/fs/cgroup"))
    }

    /// As [`MachineMemory::detect`], with `proc` and `cgroup` where those
    /// file systems are mounted (tests point them at directories of their
    /// own). Anything unreadable counts as not set.
    #[must_use]
    pub fn detect_in(proc: &Path, cgroup: &Path) -> Self {
        let read = |path: &Path| std::fs::read_to_string(path).ok();
        let memberships = read(&proc.join("self/cgroup")).unwrap_or_default();
        let container_limit =
            container_limit(&memberships, |relative| read(&cgroup.join(relative)));
        let physical = read(&proc.join("meminfo")).as_deref().and_then(mem_total);
        Self { container_limit, physical }
    }
}

/// The tightest memory limit of this process's cgroup and its parents,
/// given `/proc/self/cgroup` and a reader of files under the cgroup mount.
/// The cgroup's own directory may be the mount's root (a container's
/// cgroup namespace), so both are read.
fn container_limit(memberships: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let mut limits = Vec::new();
    for line in memberships.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = path.trim_matches('/');
        let (dir, file) = if controllers.is_empty() {
            ("", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut candidates = vec![String::new()];
        let mut prefix = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            prefix = if prefix.is_empty() { part.to_owned() } else { format!("{prefix}/{part}") };
            candidates.push(prefix.clone());
        }
        for candidate in candidates {
            let relative = [dir, candidate.as_str(), file]
                .iter()
                .filter(|p| !p.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("/");
            if let Some(limit) = read(&relative).as_deref().and_then(parse_limit) {
                limits.push(limit);
            }
        }
    }
    limits.into_iter().min()
}

/// A cgroup limit file's value; `max` (v2) and v1's page-rounded
/// `i64::MAX` mean no limit.
fn parse_limit(text: &str) -> Option<u64> {
    let value: u64 = text.trim().parse().ok()?;
    (value < 1 << 60).then_some(value)
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 =
        line.trim_start_matches("MemTotal:").trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_budget_keeps_the_process_reserve_and_halves_the_rest() {
        assert_eq!(budget_for_limit(512 * MIB), 224 << 20);
        assert_eq!(budget_for_limit(384 * MIB), 160 << 20);
        // A tiny limit still gives a budget that holds a small server.
        assert_eq!(budget_for_limit(64 * MIB), 16 << 20);
    }

    #[test]
    fn the_container_limit_wins_over_physical_memory() {
        let m = MachineMemory { container_limit: Some(512 * MIB), physical: Some(16 << 30) };
        assert_eq!(default_budget(&m), (224 << 20, BudgetSource::ContainerLimit(512 * MIB)));
        let m = MachineMemory { container_limit: None, physical: Some(16 << 30) };
        assert_eq!(default_budget(&m).1, BudgetSource::PhysicalMemory(16 << 30));
        assert_eq!(default_budget(&m).0, budget_for_limit(4 << 30));
        // A "limit" as large as the machine limits nothing.
        let m = MachineMemory { container_limit: Some(32 << 30), physical: Some(16 << 30) };
        assert_eq!(default_budget(&m).1, BudgetSource::PhysicalMemory(16 << 30));
        assert_eq!(default_budget(&MachineMemory::default()).1, BudgetSource::Assumed);
    }

    fn files(list: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::BTreeMap<String, String> =
            list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |p| map.get(p).cloned()
    }

    #[test]
    fn cgroup_v2_reads_memory_max_of_the_cgroup_and_its_parents() {
        let read = files(&[
            ("kubepods/pod1/memory.max", "max\n"),
            ("kubepods/memory.max", "1073741824\n"),
            ("kubepods/pod1/ctr/memory.max", "536870912\n"),
        ]);
        assert_eq!(container_limit("0::/kubepods/pod1/ctr\n", read), Some(512 * MIB));
        // In a cgroup namespace the container's own cgroup is the root.
        let read = files(&[("memory.max", "402653184\n")]);
        assert_eq!(container_limit("0::/\n", read), Some(384 * MIB));
        let read = files(&[("memory.max", "max\n")]);
        assert_eq!(container_limit("0::/\n", read), None);
    }

    #[test]
    fn cgroup_v1_reads_the_memory_controller() {
        let read = files(&[
            ("memory/memory.limit_in_bytes", "9223372036854771712\n"),
            ("memory/docker/abc/memory.limit_in_bytes", "268435456\n"),
        ]);
        let cgroup = "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n";
        assert_eq!(container_limit(cgroup, read), Some(256 * MIB));
        // Unlimited is no limit; unreadable or garbled lines are skipped.
        let read = files(&[("memory/memory.limit_in_bytes", "9223372036854771712\n")]);
        assert_eq!(container_limit("4:memory:/\nnonsense\n", read), None);
    }

    #[test]
    fn meminfo_gives_physical_memory() {
        let text = "MemTotal:       24684084 kB\nMemFree:        1 kB\n";
        assert_eq!(mem_total(text), Some(24_684_084 * 1024));
        assert_eq!(mem_total("nothing"), None);
    }

    #[test]
    fn detect_reads_from_the_given_mounts() {
        let dir = std::env::temp_dir().join(format!("memory-detect-{}", std::process::id()));
        let proc = dir.join("proc");
        let cgroup = dir.join("cgroup");
        std::fs::create_dir_all(proc.join("self")).unwrap();
        std::fs::create_dir_all(&cgroup).unwrap();
        std::fs::write(proc.join("self/cgroup"), "0::/\n").unwrap();
        std::fs::write(proc.join("meminfo"), "MemTotal: 1048576 kB\n").unwrap();
        std::fs::write(cgroup.join("memory.max"), "536870912\n").unwrap();
        let m = MachineMemory::detect_in(&proc, &cgroup);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(m, MachineMemory { container_limit: Some(512 * MIB), physical: Some(1 << 30) });
    }
}
