//! The handle a process keeps per agent in fleet mode: where the agent lives, its
//! connections, and the reader of its committed generation.

use std::sync::{Arc, Mutex, MutexGuard};

use lancedb::Connection;

use super::lease::Lease;
use super::reader::LanceReader;
use super::tables::{block, read_committed, Committed};
use super::writer::LanceWriter;
use crate::error::{Error, Result};
use crate::store::{Manifest, Reader, Store, Writer};

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
        }
    }

    fn connect(&self, slot: &Mutex<Option<Connection>>, uri: &str) -> Result<Connection> {
        let mut slot = lock(slot);
        if let Some(db) = slot.as_ref() {
            return Ok(db.clone());
        }
        let (uri, options) = (uri.to_string(), self.options.clone());
        let db = block(&self.location, async move {
            let mut builder = lancedb::connect(&uri);
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
                return Ok(reader.clone());
            }
        }
        let reader = Arc::new(LanceReader::open(
            &self.location,
            self.db()?,
            committed.clone(),
        )?);
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
        )))
    }
}
