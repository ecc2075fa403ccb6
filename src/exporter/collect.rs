//! The threads that read the node for scrapes. Reading /proc is blocking
//! file I/O (and `--by-cgroup` walks a hierarchy, `--kernel-log FILE` may
//! be a slow file), so it never runs on the HTTP event loop: each scrape
//! hands a job to a fixed set of threads, started at start-up, and awaits
//! its answer. At most `workers` collections run at once; the others wait
//! their turn in the queue.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::collectors::Collector as Source;
use super::metrics;
use crate::status::Collector;

/// One scrape's request: where to send the metrics text,
/// and the scrape's place under `--max-requests`, held until the
/// collection is over, even when the client has gone meanwhile.
struct Job {
    reply: oneshot::Sender<String>,
    _permit: Option<OwnedSemaphorePermit>,
}

/// The queue in front of the collecting threads.
#[derive(Clone)]
pub(crate) struct Scrapes {
    jobs: mpsc::Sender<Job>,
}

impl Scrapes {
    /// Starts `workers` threads reading the node with `collector` and
    /// writing the families of `sources`. A thread that cannot be started
    /// is an error naming the limit to raise.
    pub(crate) fn start(
        collector: Arc<Collector>,
        workers: usize,
        sources: Arc<Vec<Box<dyn Source>>>,
    ) -> Result<Scrapes> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..workers {
            let (q, c, n) = (Arc::clone(&queue), Arc::clone(&collector), Arc::clone(&sources));
            std::thread::Builder::new().name(format!("scrape-{i}")).spawn(move || work(&q, &c, &n)).with_context(
                || {
                    format!(
                        "cannot start scrape worker thread {} of {workers} (lower --workers, or raise the \
                     process's thread limit: ulimit -u, the pids cgroup)",
                        i + 1
                    )
                },
            )?;
        }
        Ok(Scrapes { jobs })
    }

    /// The node's metrics in the exposition format, read by one of the
    /// threads. `permit` is released when that collection is over. Fails
    /// only when the threads have ended: a source that cannot be read
    /// leaves its families out, never the scrape.
    pub(crate) async fn metrics(&self, permit: Option<OwnedSemaphorePermit>) -> Result<String> {
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { reply, _permit: permit }).map_err(|_| anyhow!("every scrape worker thread has ended"))?;
        answer.await.map_err(|_| anyhow!("the scrape worker thread ended before answering"))
    }
}

fn work(queue: &Mutex<mpsc::Receiver<Job>>, collector: &Collector, sources: &[Box<dyn Source>]) {
    loop {
        // The lock is held only while waiting for a job, not while collecting.
        let job = match queue.lock() {
            Ok(q) => q.recv(),
            Err(_) => return,
        };
        let Ok(Job { reply, _permit: permit }) = job else { return };
        // The client went away before its turn: nothing to read for it.
        if reply.is_closed() {
            continue;
        }
        let t0 = Instant::now();
        let text = metrics::scrape(sources, &collector.read(), &|| t0.elapsed().as_secs_f64());
        // The scrape's place is free before its answer leaves: a client that
        // scrapes again as soon as it has the answer is not refused.
        drop(permit);
        let _ = reply.send(text);
    }
}
