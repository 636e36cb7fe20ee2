//! The text index's directory: tantivy's `MmapDirectory`, except that a *reader* can open
//! an index it cannot write.
//!
//! tantivy's reader takes the meta lock (by creating `.tantivy-meta.lock`) while it reads
//! `meta.json`. On a read-only mount, or in a state directory owned by another user, that
//! file cannot be created and every search would fail. The lock only keeps a reader from
//! reading `meta.json` while a writer replaces it, and tantivy replaces it by an atomic
//! rename anyway; so when the meta lock cannot be created for lack of permission, reading
//! goes ahead without it. Every other lock (the index writer's) and every other error is
//! tantivy's as usual.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle,
    WritePtr, META_LOCK,
};

/// See the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct TolerantDirectory(MmapDirectory);

impl TolerantDirectory {
    pub(crate) fn open(dir: &Path) -> tantivy::Result<TolerantDirectory> {
        Ok(TolerantDirectory(MmapDirectory::open(dir)?))
    }
}

/// Whether `err` means "this process may not write here".
fn is_read_only(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

impl Directory for TolerantDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.0.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.0.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.0.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.0.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.0.sync_directory()
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.0.watch(watch_callback)
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        match self.0.acquire_lock(lock) {
            Err(LockError::IoError(err))
                if lock.filepath == META_LOCK.filepath && is_read_only(&err) =>
            {
                Ok(DirectoryLock::from(Box::new(())))
            }
            other => other,
        }
    }
}
