//! The memory cap: how much one workspace or simulation may take, derived from what the
//! process can really get, and allocations that report a refusal as
//! [`Error::Memory`] instead of aborting the process.

use crate::aligned::{AlignedVec, Plain};
use crate::error::{Error, Result};

/// The error of an allocation of `bytes` for `what` that the system refused.
fn refused(bytes: usize, what: &str) -> Error {
    Error::Memory(format!(
        "the system refused {} MB for {what} (an address-space or cgroup limit, or memory \
         in use elsewhere; the memory cap is {} MB)",
        bytes >> 20,
        cap_mb()
    ))
}

/// `len` aligned zeros for `what`, or `Error::Memory` when the system refuses them (below
/// the cap: `ulimit -v`, cgroups, memory taken by others) instead of aborting the process.
pub fn try_zeros<T: Plain>(len: usize, what: &str) -> Result<AlignedVec<T>> {
    AlignedVec::try_zeros(len).map_err(|bytes| refused(bytes, what))
}

/// An empty vector with room for `len` values for `what`, or `Error::Memory` when the
/// system refuses it.
pub fn try_with_capacity<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| refused(len.saturating_mul(std::mem::size_of::<T>()), what))?;
    Ok(v)
}

/// Makes `v` `len` copies of `value`, reusing its buffer, or `Error::Memory` when the
/// system refuses a larger one.
pub fn try_resize<T: Clone>(v: &mut Vec<T>, len: usize, value: T, what: &str) -> Result<()> {
    v.clear();
    v.try_reserve_exact(len)
        .map_err(|_| refused(len.saturating_mul(std::mem::size_of::<T>()), what))?;
    v.resize(len, value);
    Ok(())
}

/// `vec![value; len]` for `what`, or `Error::Memory` when the system refuses it.
pub fn try_vec<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = try_with_capacity(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// Default cap on the memory of one workspace or simulation.
const DEFAULT_MAX_MEMORY_MB: usize = 8192;

/// The memory cap in MB: `LOGICARS_MAX_MEMORY_MB`, else 8192 or, when less, three
/// quarters of what the process can still get under its address-space limit
/// (`ulimit -v`) and its cgroup's memory limit (Linux; the limits are read once), so
/// that work the process cannot get is refused instead of aborting in the allocator.
pub fn cap_mb() -> usize {
    if let Some(mb) = std::env::var("LOGICARS_MAX_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return mb;
    }
    let room_mb = headroom::bytes().map_or(usize::MAX, |b| (b / 4 * 3) >> 20);
    DEFAULT_MAX_MEMORY_MB.min(room_mb)
}

/// Memory the process can still get under hard limits (not free memory: with
/// overcommit, allocations beyond it still succeed).
mod headroom {
    #[cfg(target_os = "linux")]
    pub fn bytes() -> Option<usize> {
        use std::sync::OnceLock;
        static LIMITS: OnceLock<(Option<usize>, Option<String>)> = OnceLock::new();
        let (address_space, cgroup) = LIMITS.get_or_init(|| (address_space_limit(), cgroup_dir()));
        let mut room: Option<usize> = None;
        if let Some(limit) = address_space {
            let used = status_kb("VmSize:")?.saturating_mul(1024);
            room = Some(limit.saturating_sub(used));
        }
        if let Some(dir) = cgroup {
            let max = read_number(&format!("{dir}/memory.max"));
            let current = read_number(&format!("{dir}/memory.current"));
            if let (Some(max), Some(current)) = (max, current) {
                // The page cache counts in memory.current but is given back on demand.
                let cache = std::fs::read_to_string(format!("{dir}/memory.stat"))
                    .ok()
                    .and_then(|stat| {
                        let line = stat.lines().find(|l| l.starts_with("file "))?;
                        line[5..].trim().parse::<usize>().ok()
                    })
                    .unwrap_or(0);
                let left = max.saturating_sub(current.saturating_sub(cache));
                room = Some(room.map_or(left, |r| r.min(left)));
            }
        }
        room
    }

    #[cfg(not(target_os = "linux"))]
    pub fn bytes() -> Option<usize> {
        None
    }

    /// The soft `RLIMIT_AS` in bytes, None when unlimited.
    #[cfg(target_os = "linux")]
    fn address_space_limit() -> Option<usize> {
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max address space"))?;
        let soft = line["Max address space".len()..]
            .split_whitespace()
            .next()?;
        soft.parse().ok() // "unlimited" does not parse
    }

    /// This process's cgroup (v2) directory when it has a memory limit.
    #[cfg(target_os = "linux")]
    fn cgroup_dir() -> Option<String> {
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
        let dir = format!("/sys/fs/cgroup{}", path.trim_end_matches('/'));
        read_number(&format!("{dir}/memory.max")).map(|_| dir) // "max": no limit
    }

    #[cfg(target_os = "linux")]
    fn read_number(path: &str) -> Option<usize> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    #[cfg(target_os = "linux")]
    fn status_kb(field: &str) -> Option<usize> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with(field))?;
        line[field.len()..].split_whitespace().next()?.parse().ok()
    }
}

/// Whether `bytes` exceed the memory cap (saturating: a huge cap cannot wrap around).
pub fn over_cap(bytes: usize) -> bool {
    bytes > cap_mb().saturating_mul(1 << 20)
}
