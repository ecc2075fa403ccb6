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

use super::census::Background;
use super::metrics;
use crate::status::Collector;

/// One scrape's request: where to send the metrics text (or the error),
/// and the scrape's place under `--max-requests`, held until the
/// collection is over, even when the client has gone meanwhile.
struct Job {
    reply: oneshot::Sender<Result<String>>,
    _permit: Option<OwnedSemaphorePermit>,
}

/// The queue in front of the collecting threads.
#[derive(Clone)]
pub(crate) struct Scrapes {
    jobs: mpsc::Sender<Job>,
}

impl Scrapes {
    /// Starts `workers` threads collecting from `collector`. A thread that
    /// cannot be started is an error naming the limit to raise.
    /// With `census`, each answer ends with its last walk's families.
    pub(crate) fn start(collector: Arc<Collector>, workers: usize, census: Option<Arc<Background>>) -> Result<Scrapes> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..workers {
            let (q, c, n) = (Arc::clone(&queue), Arc::clone(&collector), census.clone());
            std::thread::Builder::new()
                .name(format!("scrape-{i}"))
                .spawn(move || work(&q, &c, n.as_deref()))
                .with_context(|| {
                    format!(
                        "cannot start scrape worker thread {} of {workers} (lower --workers, or raise the \
                     process's thread limit: ulimit -u, the pids cgroup)",
                        i + 1
                    )
                })?;
        }
        Ok(Scrapes { jobs })
    }

    /// The node's metrics in the exposition format, read by one of the
    /// threads. `permit` is released when that collection is over.
    pub(crate) async fn metrics(&self, permit: Option<OwnedSemaphorePermit>) -> Result<String> {
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { reply, _permit: permit }).map_err(|_| anyhow!("every scrape worker thread has ended"))?;
        answer.await.map_err(|_| anyhow!("the scrape worker thread ended before answering"))?
    }
}

fn work(queue: &Mutex<mpsc::Receiver<Job>>, collector: &Collector, census: Option<&Background>) {
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
        let text = collector.collect().map(|s| metrics::encode(&s, t0.elapsed().as_secs_f64()));
        let text = text.map(|t| match census {
            Some(c) => t + &c.metrics(),
            None => t,
        });
        // The scrape's place is free before its answer leaves: a client that
        // scrapes again as soon as it has the answer is not refused.
        drop(permit);
        let _ = reply.send(text);
    }
}
