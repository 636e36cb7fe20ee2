//! The handle a process keeps per agent in fleet mode: where the agent lives, its
//! connections, and the reader of its committed generation.
//!
//! Every agent a process opens shares one LanceDB session and one budget,
//! `MEMORIA_FLEET_CACHE_MB` (1024 by default): half for index pages, a quarter for table
//! metadata, a quarter for small generations' vectors held in memory (module `held`); and
//! one registry of object-store clients. A node serving many agents holds one budget
//! rather than LanceDB's default per connection (7 GiB each).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use lance::session::Session;
use lancedb::Connection;

use super::lease::Lease;
use super::reader::LanceReader;
use super::tables::{block, read_committed, Committed};
use super::writer::LanceWriter;
use crate::error::{Error, Result};
use crate::store::{Manifest, Reader, Store, StoreCache, Writer};

/// The variable that sets the process's cache budget, in MB.
const CACHE_MB_ENV: &str = "MEMORIA_FLEET_CACHE_MB";

/// The process's session and its whole budget in bytes: half for LanceDB's index cache,
/// a quarter for its metadata cache, a quarter for the vectors held ([`held_budget`]).
fn session() -> &'static (Arc<Session>, u64) {
    static SESSION: OnceLock<(Arc<Session>, u64)> = OnceLock::new();
    SESSION.get_or_init(|| {
        let megabytes = super::env_number(CACHE_MB_ENV, 1024);
        let bytes = megabytes.saturating_mul(1 << 20);
        let (index, metadata) = ((bytes / 2) as usize, (bytes / 4) as usize);
        let session = Session::new(index, metadata, Default::default());
        (Arc::new(session), bytes)
    })
}

/// What the process may hold of small generations' vectors (module `held`): a quarter
/// of `MEMORIA_FLEET_CACHE_MB`.
fn held_budget() -> u64 {
    session().1 / 4
}

/// How searches have met an agent's tables in this process.
#[derive(Default)]
struct Opens {
    cold: u64,
    last_cold: Option<bool>,
    last_open_ms: Option<u64>,
}

/// Where a fleet keeps its agents: a URI (`s3://bucket/prefix`, a local directory) and
/// the object store's options (`aws_endpoint`, `aws_region`, `allow_http`, …; credentials
/// are better left to the environment's `AWS_*` variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    /// The URI under which each agent is `<uri>/<agentId>`.
    pub(crate) uri: String,
    /// LanceDB's storage options.
    pub(crate) options: Vec<(String, String)>,
}

/// An agent's index in LanceDB (see the module docs).
pub(crate) struct LanceStore {
    /// `<uri>/<agentId>`.
    location: String,
    /// `<uri>/.shared`.
    shared: String,
    options: Vec<(String, String)>,
    db: Mutex<Option<Connection>>,
    shared_db: Mutex<Option<Connection>>,
    /// The reader of the committed generation, while the manifest names it.
    reader: Mutex<Option<(Committed, Arc<LanceReader>)>>,
    opens: Mutex<Opens>,
    /// Rows from which a generation's tables are indexed (module `indexes`).
    index_rows: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LanceStore {
    /// The store of agent `agent` under `location` (nothing is opened before the first
    /// use).
    pub(crate) fn new(location: &Location, agent: &str) -> LanceStore {
        let uri = location.uri.trim_end_matches('/');
        LanceStore {
            location: format!("{uri}/{agent}"),
            shared: format!("{uri}/.shared"),
            options: location.options.clone(),
            db: Mutex::new(None),
            shared_db: Mutex::new(None),
            reader: Mutex::new(None),
            opens: Mutex::default(),
            index_rows: super::indexes::index_rows(),
        }
    }

    /// The same store indexing its tables from `rows` rows (tests: an index on a small
    /// workspace).
    #[cfg(test)]
    pub(crate) fn with_index_rows(mut self, rows: u64) -> LanceStore {
        self.index_rows = rows;
        self
    }

    /// The indexed columns of the committed generation's tables, as `table.column`.
    #[cfg(test)]
    pub(crate) fn indexed_columns(&self) -> Result<Vec<String>> {
        let Some(committed) = self.committed()? else {
            return Ok(Vec::new());
        };
        let db = self.db()?;
        block(&self.location, async move {
            let generation = committed.manifest.generation;
            let mut out = Vec::new();
            for (kind, version) in super::tables::TABLES.iter().zip(committed.versions) {
                let name = super::tables::table_name(kind, generation);
                let Some(table) = super::tables::open_at(&db, &name, version).await? else {
                    continue;
                };
                for index in table.list_indices().await? {
                    out.extend(index.columns.iter().map(|c| format!("{kind}.{c}")));
                }
            }
            out.sort();
            Ok(out)
        })
    }

    /// Rewrites the committed generation's passages in the layout before one row per chunk
    /// (one row per passage, f32 vectors), as an earlier memoria left them (tests: the
    /// upgrade).
    #[cfg(test)]
    pub(crate) fn write_passages_one_row_each(&self) -> Result<()> {
        use super::tables::{collect, open_at, runtime_error, table_name};
        let Some(committed) = self.committed()? else {
            return Ok(());
        };
        let db = self.db()?;
        block(&self.location, async move {
            let name = table_name("passages", committed.manifest.generation);
            let Some(table) = open_at(&db, &name, committed.versions[3]).await? else {
                return Ok(());
            };
            let mut passages = Vec::new();
            for batch in collect(table.query()).await? {
                passages.extend(super::rows::passages(&batch).map_err(runtime_error)?);
            }
            db.drop_table(&name, &[]).await?;
            let old = super::rows::passages_batch_one_row_each(&passages);
            let table = db.create_table(&name, old).execute().await?;
            let mut versions = committed.versions;
            versions[3] = table.version().await?;
            let json = serde_json::to_string(&committed.manifest)
                .map_err(|err| runtime_error(err.to_string()))?;
            let manifest = db.open_table("manifest").execute().await?;
            manifest
                .add(super::rows::manifest_batch(&json, versions))
                .mode(lancedb::table::AddDataMode::Overwrite)
                .execute()
                .await?;
            Ok(())
        })
    }

    fn connect(&self, slot: &Mutex<Option<Connection>>, uri: &str) -> Result<Connection> {
        let mut slot = lock(slot);
        if let Some(db) = slot.as_ref() {
            return Ok(db.clone());
        }
        let (uri, options) = (uri.to_string(), self.options.clone());
        let db = block(&self.location, async move {
            let mut builder = lancedb::connect(&uri).session(session().0.clone());
            for (key, value) in options {
                builder = builder.storage_option(key, value);
            }
            builder.execute().await
        })?;
        *slot = Some(db.clone());
        Ok(db)
    }

    /// The agent's database.
    fn db(&self) -> Result<Connection> {
        self.connect(&self.db, &self.location.clone())
    }

    /// The database agents share (the embedding cache).
    fn shared_db(&self) -> Result<Connection> {
        self.connect(&self.shared_db, &self.shared.clone())
    }

    fn committed(&self) -> Result<Option<Committed>> {
        let db = self.db()?;
        block(&self.location, async move { read_committed(&db).await })
    }
}

impl Store for LanceStore {
    fn manifest(&self) -> Result<Option<Manifest>> {
        Ok(self.committed()?.map(|c| c.manifest))
    }

    fn reader(&self) -> Result<Arc<dyn Reader>> {
        let Some(committed) = self.committed()? else {
            return Err(Error::NoIndex {
                dir: self.location.clone().into(),
            });
        };
        let mut kept = lock(&self.reader);
        if let Some((c, reader)) = kept.as_ref() {
            if *c == committed {
                lock(&self.opens).last_cold = Some(false);
                return Ok(reader.clone());
            }
        }
        let started = Instant::now();
        let reader = Arc::new(LanceReader::open(
            &self.location,
            self.db()?,
            committed.clone(),
            self.index_rows,
            held_budget(),
        )?);
        let mut opens = lock(&self.opens);
        opens.cold += 1;
        opens.last_cold = Some(true);
        opens.last_open_ms = Some(started.elapsed().as_millis() as u64);
        *kept = Some((committed, reader.clone()));
        Ok(reader)
    }

    /// Forgets the kept reader (`reader` also reopens one whenever the manifest row it
    /// reads names another generation or versions).
    fn invalidate(&self) {
        *lock(&self.reader) = None;
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        let db = self.db()?;
        let lease = Lease::take(&self.location, &db)?;
        let shared = self.shared_db()?;
        Ok(Box::new(LanceWriter::new(
            &self.location,
            db,
            shared,
            lease,
            self.index_rows,
        )))
    }

    fn cache(&self) -> Option<StoreCache> {
        let (session, limit) = session();
        let opens = lock(&self.opens);
        Some(StoreCache {
            limit_bytes: *limit,
            used_bytes: session.size_bytes() + super::held::bytes(),
            cold_opens: opens.cold,
            last_search: opens
                .last_cold
                .map(|cold| if cold { "cold" } else { "warm" }),
            last_open_ms: opens.last_open_ms,
        })
    }
}
