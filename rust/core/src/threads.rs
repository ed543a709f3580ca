//! The thread pool every parallel loop runs in. Results do not depend on its size:
//! work is split into fixed chunks and partial sums are reduced in chunk order.

use std::sync::{Arc, RwLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::error::{value_err, Result};

static POOL: RwLock<Option<Arc<ThreadPool>>> = RwLock::new(None);

/// The most threads a pool may have (`set_num_threads`, `RAYON_NUM_THREADS`).
pub const MAX_THREADS: usize = 1024;

/// `RAYON_NUM_THREADS` when it asks for more than [`MAX_THREADS`]: then the pool
/// has [`MAX_THREADS`] (rayon itself would try to start them all and fail).
fn clamped_env_threads() -> Option<usize> {
    let asked = std::env::var("RAYON_NUM_THREADS").ok()?;
    let too_many = match asked.trim().parse::<usize>() {
        Ok(n) => n > MAX_THREADS,
        // All digits but beyond usize: too many as well; anything else rayon ignores.
        Err(_) => !asked.trim().is_empty() && asked.trim().bytes().all(|b| b.is_ascii_digit()),
    };
    if !too_many {
        return None;
    }
    eprintln!(
        "logicars: RAYON_NUM_THREADS={asked} is more than {MAX_THREADS} threads; \
         using {MAX_THREADS}"
    );
    Some(MAX_THREADS)
}

fn build(threads: usize) -> Result<Arc<ThreadPool>> {
    // 0 lets rayon decide: RAYON_NUM_THREADS, else one thread per core.
    let threads = if threads == 0 {
        clamped_env_threads().unwrap_or(0)
    } else {
        threads
    };
    match ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(p) => Ok(Arc::new(p)),
        Err(e) => value_err!("could not start {threads} threads: {e}"),
    }
}

/// The current pool, started on first use with rayon's defaults (one thread when
/// those cannot start, e.g. under a process limit, rather than failing every call).
pub fn pool() -> Arc<ThreadPool> {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.clone();
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert_with(|| {
        build(0)
            .or_else(|e| {
                eprintln!("logicars: {e}; using 1 thread");
                build(1)
            })
            .expect("a pool of one thread starts")
    })
    .clone()
}

/// Replaces the pool with one of `threads` threads (0: rayon's default, which
/// follows `RAYON_NUM_THREADS`).
pub fn set_num_threads(threads: usize) -> Result<()> {
    if threads > MAX_THREADS {
        return value_err!("threads must be between 0 and {MAX_THREADS}, got {threads}");
    }
    let p = build(threads)?;
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
    Ok(())
}

/// Number of threads in the current pool.
pub fn num_threads() -> usize {
    pool().current_num_threads()
}
