//! The workspace: which files are memory, how they are read and cited, and which paths
//! `memory_get` may open.
//!
//! - `discover`: the memory files (SPEC §1): `MEMORY.md`, `memory.md`, `memory/**/*.md`,
//!   extra paths, QMD collections and, with sessions on, the agent's transcripts. Symlinks
//!   are never followed; files reached twice are de-duplicated by real path.
//! - `collection`: a QMD collection (`memory.qmd.paths`): a named directory and a glob,
//!   cited as `qmd/<name>/…` when outside the workspace. It lives here, not under `qmd/`,
//!   because discovery and the `memory_get` policy list its files; the QMD sidecar above
//!   only names them to QMD.
//! - `get`: the `memory_get` path policy.
//! - `text`: decoding a file's bytes.
//! - `paths`: the path arithmetic all of them share.
//!
//! Stored paths are workspace-relative with `/`, and may start with `../` for extra paths
//! outside it. The files import each other, never this one.

pub(crate) mod collection;
mod discover;
mod get;
mod paths;
#[cfg(test)]
mod tests;
mod text;

pub(crate) use discover::{
    discover, Discovery, MemoryFile, SourceKind, ROOT_FILES_DOCUMENTED, ROOT_FILES_OPENCLAW,
};
pub(crate) use get::{read_allowed, resolve_get_path};
pub(crate) use paths::{absolute, absolute_in, relative_path};
pub use text::decode_text;
