//! Bringing an agent's store up to date with the workspace (SPEC §4), through the store's
//! [`Writer`](crate::store::Writer) alone.
//!
//! - `run`: one sync, from the discovered files to a committed generation (batches of file
//!   changes, then vectors, then the manifest).
//! - `files`: one file's stat, read, hash and chunks.
//! - `embedding`: the chunks without a vector, through the cache, batch jobs and direct
//!   requests.
//! - `report`: what a sync tells its caller.
//!
//! When a sync runs, and what it may wait for, is `freshness`'s decision, not this
//! module's. The files import each other, never this one.

mod embedding;
mod files;
mod report;
mod run;

pub(crate) use embedding::{recorded_batch_jobs, EmbedPlan};
pub(crate) use files::workspace_digest;
pub use report::{SyncProgress, SyncReport};
pub(crate) use run::{sync, SyncRequest};
