//! Steps of a rollout (or of its back-propagation) run as a wavefront of chunk tasks:
//! a chunk's next step starts as soon as the chunks it depends on have done this one,
//! not when every chunk has. Which thread runs what changes no result: each task does
//! the same work on the same data whenever it runs. What it buys is threads that never
//! wait at the end of a step: a grid of 6¼ chunks splits over 2 threads as 3¼ and 3 in
//! a wavefront, against 4 and 2¼ at worst with a barrier per step.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a worker with nothing ready spins (yielding its core between looks) for a
/// task to finish before it sleeps. Waking a sleeping thread is a system call and a
/// reschedule, tens of microseconds on a virtual machine, and with two chunks a step on
/// two threads one waits for the other at every step (docs/performance.md, round six).
const SPIN: Duration = Duration::from_micros(500);

/// The chunks of a grid, as the wavefront sees them.
pub(crate) struct Chunks {
    /// `deps[k]`: the chunks whose step `i - 1` task must be done before chunk `k`'s
    /// step `i` starts, `k` included. Symmetric (`j ∈ deps[k]` iff `k ∈ deps[j]`), so
    /// it also lists the tasks a finished one may release.
    pub deps: Vec<Vec<u32>>,
    /// Cells of each chunk: the work of its tasks, to share out among the workers.
    pub cells: Vec<usize>,
}

/// Which tasks wait for which, and how far to go.
struct Graph<'a> {
    deps: &'a [Vec<u32>],
    /// The worker whose share chunk `k` is in.
    owner: Vec<usize>,
    n_steps: usize,
    progress: Mutex<Progress>,
    /// Rung when a task becomes ready, or when the work ends.
    wake: Condvar,
    /// Tasks finished so far: what a spinning worker watches.
    finished: AtomicU64,
}

struct Progress {
    /// Unfinished dependencies of task `(i, k)`, at `(i mod 2) · n_chunks + k`. Two
    /// steps of counters are enough: a decrement for `(i + 2, k)` comes from a task of
    /// step `i + 1` around `k`, which waited for `(i + 1, k)`, so `(i, k)`'s count had
    /// reached 0 (and been set back to `deps[k].len()` for step `i + 2`) before.
    waiting: Vec<u32>,
    /// Tasks whose dependencies are done, `(step, chunk)`: one per chunk at most, as
    /// a chunk's next task waits for its current one.
    ready: Vec<(usize, usize)>,
    /// Tasks being run.
    running: usize,
    /// Workers waiting on `wake`: a notification is a system call even when nobody
    /// waits, one per task for a single thread's worker without this count.
    sleeping: usize,
    /// Steps to complete: `n_steps` until `stop` asks to stop, then one past the
    /// latest step begun.
    limit: usize,
    /// The latest step any task was made ready for.
    begun: usize,
    /// A task panicked: the others stop taking tasks.
    failed: bool,
}

/// Runs `task(i, k)` for every step `i < n_steps` and chunk `k`, each once every
/// chunk in `chunks.deps[k]` has finished step `i - 1`. `stop` is asked after each
/// task; once it says yes, no step past the latest begun one starts. Returns the steps
/// done, every chunk of each (`n_steps` unless stopped).
///
/// One worker per thread of the current rayon pool takes ready tasks until none is
/// left: no allocation per task (`tests/alloc.rs`). A worker with nothing ready waits
/// only for tasks being run, which never wait, so it cannot deadlock even when the
/// pool's threads are busy elsewhere. A task's panic reaches the caller.
pub(crate) fn run<T, S>(n_steps: usize, chunks: &Chunks, task: &T, stop: &S) -> usize
where
    T: Fn(usize, usize) + Sync,
    S: Fn() -> bool + Sync,
{
    let deps = &chunks.deps[..];
    let n_chunks = deps.len();
    if n_steps == 0 || n_chunks == 0 {
        return n_steps;
    }
    let waiting = (0..2 * n_chunks)
        .map(|x| deps[x % n_chunks].len() as u32)
        .collect();
    let mut ready = Vec::with_capacity(n_chunks);
    ready.extend((0..n_chunks).rev().map(|k| (0, k)));
    let workers = rayon::current_num_threads();
    // Worker `w` owns the chunks whose middle cell falls in the `w`-th equal share of
    // the cells: 6¼ chunks split 3 and 3¼ over two.
    let total: usize = chunks.cells.iter().sum();
    let mut before = 0;
    let owner = (chunks.cells.iter())
        .map(|&c| {
            let middle = before + c / 2;
            before += c;
            middle * workers / total.max(1)
        })
        .collect();
    let graph = Graph {
        deps,
        owner,
        n_steps,
        progress: Mutex::new(Progress {
            waiting,
            ready,
            running: 0,
            sleeping: 0,
            limit: n_steps,
            begun: 0,
            failed: false,
        }),
        wake: Condvar::new(),
        finished: AtomicU64::new(0),
    };
    rayon::scope(|s| {
        for w in 0..workers {
            let graph = &graph;
            s.spawn(move |_| graph.work(w, task, stop));
        }
    });
    let steps_done = graph.lock().limit;
    steps_done
}

impl Graph<'_> {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Worker `w`: takes ready tasks until every task is done, first those of its own
    /// chunks, earliest step first, so that a chunk's rows mostly stay in one core's
    /// cache from step to step; then the lowest chunk, so that one thread runs the
    /// chunks in the order a barrier per step did (the orders tried besides were slower:
    /// docs/performance.md).
    fn work(
        &self,
        w: usize,
        task: &(dyn Fn(usize, usize) + Sync),
        stop: &(dyn Fn() -> bool + Sync),
    ) {
        let mut p = self.lock();
        // Whether this worker's last spin ran out with no task finished: it then sleeps.
        let mut spun_out = false;
        loop {
            if p.failed {
                return;
            }
            let best = (0..p.ready.len()).min_by_key(|&x| {
                let (i, k) = p.ready[x];
                (self.owner[k] != w, i, k)
            });
            if let Some(x) = best {
                spun_out = false;
                let (i, k) = p.ready.swap_remove(x);
                p.running += 1;
                drop(p);
                let failed = Failed(self);
                task(i, k);
                std::mem::forget(failed);
                p = self.lock();
                p.running -= 1;
                self.finish(&mut p, i, k, stop);
            } else if p.running == 0 {
                self.wake_all(&p);
                return;
            } else if !spun_out {
                // A task is running and may soon make one ready: watch for it a while.
                let seen = self.finished.load(Ordering::Acquire);
                drop(p);
                spun_out = !self.spin_until_finished_after(seen);
                p = self.lock();
            } else {
                spun_out = false;
                p.sleeping += 1;
                p = self.wake.wait(p).unwrap_or_else(|e| e.into_inner());
                p.sleeping -= 1;
            }
        }
    }

    /// Spins until a task finishes after the `seen`-th, for at most `SPIN`; says
    /// whether one did.
    fn spin_until_finished_after(&self, seen: u64) -> bool {
        let start = Instant::now();
        loop {
            for _ in 0..64 {
                if self.finished.load(Ordering::Acquire) != seen {
                    return true;
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= SPIN {
                return false;
            }
            // On a host with more threads than cores, the task awaited may be waiting
            // for this core: without the yield, spinning made such runs 30-50% slower.
            std::thread::yield_now();
        }
    }

    /// Records task `(i, k)` as done, and makes ready the tasks it was the last
    /// dependency of.
    fn finish(&self, p: &mut Progress, i: usize, k: usize, stop: &dyn Fn() -> bool) {
        if p.limit == self.n_steps && stop() {
            p.limit = p.begun + 1;
        }
        if i + 1 < p.limit {
            let n_chunks = self.deps.len();
            for &j in &self.deps[k] {
                let at = (i + 1) % 2 * n_chunks + j as usize;
                p.waiting[at] -= 1;
                if p.waiting[at] == 0 {
                    p.waiting[at] = self.deps[j as usize].len() as u32;
                    debug_assert!(p.ready.len() < n_chunks);
                    p.ready.push((i + 1, j as usize));
                    p.begun = p.begun.max(i + 1);
                }
            }
        }
        if p.ready.len() > 1 || (p.ready.is_empty() && p.running == 0) {
            self.wake_all(p);
        }
        // With the lock held: a spinning worker that sees the count move and then takes
        // the lock finds the tasks this one made ready.
        self.finished.fetch_add(1, Ordering::Release);
    }

    fn wake_all(&self, p: &Progress) {
        if p.sleeping > 0 {
            self.wake.notify_all();
        }
    }
}

/// Unwinding out of a task: tells the other workers to stop, so none waits forever.
struct Failed<'a, 'b>(&'a Graph<'b>);

impl Drop for Failed<'_, '_> {
    fn drop(&mut self) {
        let mut p = self.0.lock();
        p.failed = true;
        p.running -= 1;
        self.0.wake_all(&p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of chunks, each depending on itself and its two neighbours.
    fn ring(n: usize) -> Chunks {
        let deps = (0..n)
            .map(|k| {
                let mut d = vec![((k + n - 1) % n) as u32, k as u32, ((k + 1) % n) as u32];
                d.sort_unstable();
                d.dedup();
                d
            })
            .collect();
        Chunks {
            deps,
            cells: (0..n).map(|k| 64 - 16 * (k + 1 == n) as usize).collect(),
        }
    }

    /// Every task runs once, after its dependencies, whatever the pool size; a stop
    /// ends after a whole step, and no task of a later step has run.
    #[test]
    fn tasks_run_once_after_their_dependencies() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for threads in [1, 2, 4, 7] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let cases = [(1, 5, None), (7, 9, None), (7, 9, Some(20)), (40, 30, None)];
            for (n_chunks, n_steps, stop_after) in cases {
                let chunks = ring(n_chunks);
                let deps = &chunks.deps;
                let done: Vec<AtomicUsize> = (0..n_chunks * n_steps)
                    .map(|_| AtomicUsize::new(0))
                    .collect();
                let finished = AtomicUsize::new(0);
                let task = |i: usize, k: usize| {
                    if i > 0 {
                        for &j in &deps[k] {
                            let before = (i - 1) * n_chunks + j as usize;
                            assert_eq!(done[before].load(Ordering::SeqCst), 1);
                        }
                    }
                    done[i * n_chunks + k].fetch_add(1, Ordering::SeqCst);
                    finished.fetch_add(1, Ordering::SeqCst);
                };
                let stop = || stop_after.is_some_and(|n| finished.load(Ordering::SeqCst) >= n);
                let steps = pool.install(|| run(n_steps, &chunks, &task, &stop));
                let counts: Vec<usize> = done.iter().map(|d| d.load(Ordering::SeqCst)).collect();
                assert!(counts[..steps * n_chunks].iter().all(|&c| c == 1));
                assert!(counts[steps * n_chunks..].iter().all(|&c| c == 0));
                match stop_after {
                    None => assert_eq!(steps, n_steps),
                    Some(n) => assert!(steps < n_steps && steps * n_chunks >= n),
                }
            }
        }
    }

    /// A task's panic ends the run and reaches the caller, on any pool size, instead of
    /// leaving the other workers waiting for it.
    #[test]
    fn a_panicking_task_reaches_the_caller() {
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let chunks = ring(5);
            let task = |i: usize, k: usize| assert!(i != 2 || k != 3, "task (2, 3) fails");
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| run(6, &chunks, &task, &|| false))
            }));
            assert!(result.is_err());
        }
    }
}
