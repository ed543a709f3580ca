//! The thread pool every parallel loop runs in. Results do not depend on its size:
//! work is split into fixed chunks and partial sums are reduced in chunk order.

use std::sync::{Arc, RwLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::error::{value_err, Result};

static POOL: RwLock<Option<Arc<ThreadPool>>> = RwLock::new(None);

fn build(threads: usize) -> Result<Arc<ThreadPool>> {
    // 0 lets rayon decide: RAYON_NUM_THREADS, else one thread per core.
    match ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(p) => Ok(Arc::new(p)),
        Err(e) => value_err!("could not start {threads} threads: {e}"),
    }
}

/// The current pool, started on first use with rayon's defaults.
pub fn pool() -> Arc<ThreadPool> {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.clone();
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert_with(|| build(0).expect("rayon's default pool starts"))
        .clone()
}

/// Replaces the pool with one of `threads` threads (0: rayon's default, which
/// follows `RAYON_NUM_THREADS`).
pub fn set_num_threads(threads: usize) -> Result<()> {
    if threads > 1024 {
        return value_err!("threads must be between 0 and 1024, got {threads}");
    }
    let p = build(threads)?;
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
    Ok(())
}

/// Number of threads in the current pool.
pub fn num_threads() -> usize {
    pool().current_num_threads()
}
