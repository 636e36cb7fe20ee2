//! The writer's lease: object storage has no file lock, so one writer per agent is a row
//! of the agent's `lease` table, taken and kept through LanceDB's own commit protocol.
//!
//! A node takes the lease by a conditional update, "holder and expiry are still what I
//! read", committed as a new version of the table; two nodes that race commit on the same
//! row, LanceDB lets one through and retries the other's merge against the new version,
//! where the condition no longer holds (a check after the commit reads back who holds it).
//! The holder renews it every third of its term from a thread of its own, and gives it
//! back when the writer is dropped. A node that dies keeps it until it expires (30 s,
//! `MEMORIA_FLEET_LEASE_SECONDS`); another may then take it, and the dead node's uncommitted writes are rolled
//! back by the next writer's `begin`. A holder that finds its lease taken (it stalled past
//! the term) refuses to commit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase};
use lancedb::{Connection, Table};

use super::rows::{lease_batch, quoted, signed, text};
use super::tables::block;
use crate::error::{Error, Result};

/// How long a lease lasts without renewal, unless `MEMORIA_FLEET_LEASE_SECONDS` says
/// otherwise: how long a node that died mid-sync keeps others from syncing its agent.
const TERM: Duration = Duration::from_secs(30);

/// How many times a node tries to take a free lease that others race for.
const ATTEMPTS: usize = 5;

fn term() -> Duration {
    Duration::from_secs(super::env_number(
        "MEMORIA_FLEET_LEASE_SECONDS",
        TERM.as_secs(),
    ))
}

fn now_ms() -> i64 {
    crate::clock::now().as_millis() as i64
}

/// Who holds a lease: this host, process and moment.
fn holder() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    format!(
        "{host}:{}:{}",
        std::process::id(),
        crate::clock::now().as_nanos()
    )
}

/// The lease row as read: `(holder, expires)`; `None` when the table has no row.
async fn read(table: &Table) -> lancedb::Result<Option<(String, i64)>> {
    table.checkout_latest().await?;
    let batches: Vec<_> = table
        .query()
        .only_if("entry = 'lease'")
        .execute()
        .await?
        .try_collect()
        .await?;
    for batch in batches {
        let holders = text(&batch, "holder").map_err(column_error)?;
        let expires = signed(&batch, "expires").map_err(column_error)?;
        if let (Some(h), Some(e)) = (holders.first(), expires.first()) {
            return Ok(Some((h.clone(), *e)));
        }
    }
    Ok(None)
}

fn column_error(message: String) -> lancedb::Error {
    lancedb::Error::Runtime { message }
}

/// Sets the row to `(holder, expires)` if it still reads `seen`; true when `holder` holds
/// it afterwards.
async fn swap(
    table: &Table,
    seen: &(String, i64),
    holder: &str,
    expires: i64,
) -> lancedb::Result<bool> {
    let row = lease_batch(holder, expires);
    let schema = row.schema();
    let mut merge = table.merge_insert(&["entry"]);
    merge.when_matched_update_all(Some(format!(
        "target.holder = {} AND target.expires = {}",
        quoted(&seen.0),
        seen.1
    )));
    merge
        .execute(Box::new(arrow_array::RecordBatchIterator::new(
            vec![Ok(row)],
            schema,
        )))
        .await?;
    Ok(read(table).await?.is_some_and(|(h, _)| h == holder))
}

/// The lease table, created with a free lease when absent.
async fn table(db: &Connection) -> lancedb::Result<Table> {
    if let Ok(table) = db.open_table("lease").execute().await {
        return Ok(table);
    }
    match db.create_table("lease", lease_batch("", 0)).execute().await {
        Ok(table) => Ok(table),
        // Another node created it first.
        Err(_) => db.open_table("lease").execute().await,
    }
}

/// A lease held: renewed while it lives, given back when dropped.
pub(super) struct Lease {
    location: String,
    table: Table,
    holder: String,
    lost: Arc<AtomicBool>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    renewer: Option<JoinHandle<()>>,
}

impl Lease {
    /// Takes the agent's lease: [`Error::IndexBusy`] while another node holds it, as the
    /// local store answers while another process writes (a search then answers from the
    /// last commit; the live sync retries).
    pub(super) fn take(location: &str, db: &Connection) -> Result<Lease> {
        let holder = holder();
        let term = term();
        let table = {
            let db = db.clone();
            block(location, async move { table(&db).await })?
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (t, h) = (table.clone(), holder.clone());
            let taken = block(location, async move {
                let seen = read(&t).await?.unwrap_or_default();
                if !seen.0.is_empty() && seen.1 > now_ms() {
                    return Ok(None);
                }
                swap(&t, &seen, &h, now_ms() + term.as_millis() as i64)
                    .await
                    .map(Some)
            });
            match taken {
                Ok(Some(true)) => break,
                // Held by another node.
                Ok(None) => attempt = ATTEMPTS,
                // Another node took it first, or a commit conflict LanceDB gave up on.
                Ok(Some(false)) => {}
                Err(err) if attempt >= ATTEMPTS => return Err(err),
                Err(err) => tracing::debug!("{location}: taking the writer lease: {err}"),
            }
            if attempt >= ATTEMPTS {
                return Err(Error::IndexBusy {
                    dir: location.into(),
                });
            }
            std::thread::sleep(Duration::from_millis(50 * attempt as u64));
        }
        let lost = Arc::new(AtomicBool::new(false));
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let renewer = {
            let (at, table, holder) = (location.to_string(), table.clone(), holder.clone());
            let (lost, stop) = (lost.clone(), stop.clone());
            std::thread::Builder::new()
                .name("memoria-lease".into())
                .spawn(move || renew(&at, &table, &holder, term, &lost, &stop))
                .map_err(|err| Error::Store {
                    location: location.to_string(),
                    message: format!("cannot start the lease's renewal thread: {err}"),
                })?
        };
        Ok(Lease {
            location: location.to_string(),
            table,
            holder,
            lost,
            stop,
            renewer: Some(renewer),
        })
    }

    /// An error when the lease was lost (this node stalled past its term and another took
    /// it): the writer must not commit.
    pub(super) fn check(&self) -> Result<()> {
        match self.lost.load(Ordering::SeqCst) {
            false => Ok(()),
            true => Err(Error::Store {
                location: self.location.clone(),
                message: "this sync lost its writer lease (it stalled longer than the lease's \
                          term and another node took over); nothing more is committed"
                    .into(),
            }),
        }
    }
}

/// Renews the lease every third of its term until stopped; marks it lost when another
/// holds it.
fn renew(
    location: &str,
    table: &Table,
    holder: &str,
    term: Duration,
    lost: &AtomicBool,
    stop: &(Mutex<bool>, Condvar),
) {
    let (stopped, wake) = stop;
    let mut guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let (g, _) = wake
            .wait_timeout(guard, term / 3)
            .unwrap_or_else(|e| e.into_inner());
        guard = g;
        if *guard {
            return;
        }
        let (t, h) = (table.clone(), holder.to_string());
        let renewed = block(location, async move {
            match read(&t).await? {
                Some(seen) if seen.0 == h => {
                    swap(&t, &seen, &h, now_ms() + term.as_millis() as i64).await
                }
                _ => Ok(false),
            }
        });
        match renewed {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!("{location}: the writer lease was taken by another node");
                lost.store(true, Ordering::SeqCst);
                return;
            }
            Err(err) => tracing::warn!("{location}: renewing the writer lease: {err}"),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.join();
        }
        if self.lost.load(Ordering::SeqCst) {
            return;
        }
        let (t, h) = (self.table.clone(), self.holder.clone());
        let released = block(&self.location, async move {
            match read(&t).await? {
                Some(seen) if seen.0 == h => swap(&t, &seen, "", 0).await.map(drop),
                _ => Ok(()),
            }
        });
        if let Err(err) = released {
            tracing::warn!("{}: giving back the writer lease: {err}", self.location);
        }
    }
}
