//! The object store as one snapshot of the log shows it: listings name the
//! snapshot's live files and nothing else (no listing reaches the store),
//! reads go to the store. DataFusion's listing tables read the lake through
//! it, so they keep hive partitions and partition pruning, and never see a
//! file of a transaction that has not committed, nor one removed before
//! the snapshot.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult,
};

use super::log::{FileEntry, Snapshot};

/// A read-only view of the lake's store at one snapshot.
#[derive(Debug)]
pub(super) struct SnapshotView {
    inner: Arc<dyn ObjectStore>,
    root: Path,
    snapshot: Arc<Snapshot>,
}

impl SnapshotView {
    pub(super) fn new(inner: Arc<dyn ObjectStore>, root: Path, snapshot: Arc<Snapshot>) -> SnapshotView {
        SnapshotView { inner, root, snapshot }
    }

    /// `path` relative to the lake root, or `None` if it is outside it.
    fn relative<'a>(&self, path: &'a str) -> Option<&'a str> {
        let root = self.root.as_ref();
        if root.is_empty() {
            return Some(path);
        }
        match path.strip_prefix(root)? {
            "" => Some(""),
            rest => rest.strip_prefix('/'),
        }
    }

    fn meta(&self, entry: &FileEntry) -> ObjectMeta {
        let location = entry.path.split('/').fold(self.root.clone(), |p, part| p.join(part));
        ObjectMeta {
            location,
            last_modified: chrono::DateTime::from_timestamp_millis(entry.written_ms).unwrap_or_default(),
            size: entry.size,
            e_tag: None,
            version: None,
        }
    }

    fn entries(&self, prefix: Option<&Path>) -> Vec<ObjectMeta> {
        let Some(folder) = self.relative(prefix.map_or("", |p| p.as_ref())) else { return Vec::new() };
        self.snapshot.files_under(folder).map(|e| self.meta(e)).collect()
    }

    fn read_only(operation: &str) -> object_store::Error {
        object_store::Error::NotSupported {
            source: format!("{operation}: the lake's SQL view is read-only (write through the lake's transactions)").into(),
        }
    }
}

impl fmt::Display for SnapshotView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} as of lake version {}", self.inner, self.snapshot.version())
    }
}

#[async_trait]
impl ObjectStore for SnapshotView {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> object_store::Result<PutResult> {
        Err(Self::read_only("put"))
    }

    async fn put_multipart_opts(&self, _: &Path, _: PutMultipartOptions) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(Self::read_only("put"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, _: BoxStream<'static, object_store::Result<Path>>) -> BoxStream<'static, object_store::Result<Path>> {
        futures::stream::once(async { Err(Self::read_only("delete")) }).boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        futures::stream::iter(self.entries(prefix).into_iter().map(Ok)).boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let base = prefix.cloned().unwrap_or_else(|| self.root.clone());
        let depth = base.parts().count();
        let mut common_prefixes: Vec<Path> = Vec::new();
        let mut objects = Vec::new();
        for meta in self.entries(prefix) {
            let parts: Vec<_> = meta.location.parts().collect();
            if parts.len() == depth + 1 {
                objects.push(meta);
            } else if let Some(child) = parts.get(depth) {
                let folder = base.clone().join(child.clone());
                if common_prefixes.last() != Some(&folder) {
                    common_prefixes.push(folder);
                }
            }
        }
        common_prefixes.dedup();
        Ok(ListResult { common_prefixes, objects })
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> object_store::Result<()> {
        Err(Self::read_only("copy"))
    }
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;
    use object_store::memory::InMemory;

    use super::*;

    fn view(root: &str, paths: &[&str]) -> SnapshotView {
        let snapshot: Snapshot = serde_json::from_value(serde_json::json!({
            "applied": 2, "timestamp_ms": 0, "schema_version": 1,
            "files": paths.iter().map(|p| (p.to_string(), FileEntry { path: p.to_string(), size: 3, rows: 1, written_ms: 0, stats: None })).collect::<std::collections::BTreeMap<_, _>>(),
            "removed": {}, "txns": ["a"]
        }))
        .unwrap();
        SnapshotView::new(Arc::new(InMemory::new()), Path::from(root), Arc::new(snapshot))
    }

    #[tokio::test]
    async fn listings_show_the_snapshot_files_under_the_prefix_only() {
        let v = view("lake/x", &["posts/source=raw/bucket=a/p1.parquet", "posts/source=raw/bucket=b/p2.parquet", "users/u.parquet"]);
        let all: Vec<ObjectMeta> = v.list(Some(&Path::from("lake/x/posts"))).try_collect().await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].location.as_ref(), "lake/x/posts/source=raw/bucket=a/p1.parquet");
        assert_eq!(all[0].size, 3);
        let none: Vec<ObjectMeta> = v.list(Some(&Path::from("lake/y"))).try_collect().await.unwrap();
        assert!(none.is_empty());

        let top = v.list_with_delimiter(Some(&Path::from("lake/x/posts/source=raw"))).await.unwrap();
        let folders: Vec<&str> = top.common_prefixes.iter().map(|p| p.as_ref()).collect();
        assert_eq!(folders, ["lake/x/posts/source=raw/bucket=a", "lake/x/posts/source=raw/bucket=b"]);
        assert!(top.objects.is_empty());
        let leaf = v.list_with_delimiter(Some(&Path::from("lake/x/users"))).await.unwrap();
        assert_eq!(leaf.objects.len(), 1);
        assert!(leaf.common_prefixes.is_empty());
        assert!(v.put_opts(&Path::from("lake/x/users/new.parquet"), PutPayload::from_static(b"x"), PutOptions::default()).await.is_err());
    }
}
