//! An S3 server over a folder, for the tests and the one-machine cluster:
//! s3s-fs with its conditional writes made atomic.
//!
//! s3s-fs checks `If-None-Match` / `If-Match` before it receives the body
//! and renames the finished file after, so two writers racing on one key
//! can both be told they won. The lake commits each log version by a
//! put-if-absent, which AWS S3, MinIO and R2 honour atomically; a test
//! server that lets two commits take one version loses one of them. Here a
//! conditional write holds one lock from its check to its rename.
//!
//! `some-s3 [--host 127.0.0.1] --port 9000 --access-key K --secret-key S FOLDER`
//! serves the buckets that are folders of FOLDER.

use s3s::auth::SimpleAuth;
use s3s::dto::*;
use s3s::service::S3ServiceBuilder;
use s3s::{S3, S3Request, S3Response, S3Result};
use s3s_fs::FileSystem;
use tokio::sync::Mutex;

/// s3s-fs, with conditional writes taken one at a time.
struct Folder {
    fs: FileSystem,
    conditional: Mutex<()>,
}

/// The trait impl: every operation s3s-fs has goes straight to it, except
/// the listed ones, written out after.
macro_rules! s3_of_folder {
    ($($op:ident: $input:ident => $output:ident,)* ; $($own:item)*) => {
        #[async_trait::async_trait]
        impl S3 for Folder {
            $(async fn $op(&self, req: S3Request<$input>) -> S3Result<S3Response<$output>> {
                self.fs.$op(req).await
            })*
            $($own)*
        }
    };
}

s3_of_folder! {
    create_bucket: CreateBucketInput => CreateBucketOutput,
    delete_bucket: DeleteBucketInput => DeleteBucketOutput,
    head_bucket: HeadBucketInput => HeadBucketOutput,
    list_buckets: ListBucketsInput => ListBucketsOutput,
    get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput,
    get_object: GetObjectInput => GetObjectOutput,
    head_object: HeadObjectInput => HeadObjectOutput,
    copy_object: CopyObjectInput => CopyObjectOutput,
    delete_object: DeleteObjectInput => DeleteObjectOutput,
    delete_objects: DeleteObjectsInput => DeleteObjectsOutput,
    list_objects: ListObjectsInput => ListObjectsOutput,
    list_objects_v2: ListObjectsV2Input => ListObjectsV2Output,
    create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput,
    upload_part: UploadPartInput => UploadPartOutput,
    upload_part_copy: UploadPartCopyInput => UploadPartCopyOutput,
    list_parts: ListPartsInput => ListPartsOutput,
    abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput,
    ;
    async fn put_object(&self, mut req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        if req.input.if_none_match.is_none() && req.input.if_match.is_none() {
            return self.fs.put_object(req).await;
        }
        // The whole body is read first, as S3 does: s3s-fs refuses before
        // reading it, and a client still sending sees its connection reset
        // instead of the refusal.
        if let Some(blob) = req.input.body.take() {
            let bytes = s3s::Body::from(blob).store_all_limited(usize::MAX).await.map_err(|e| s3s::s3_error!(IncompleteBody, "{e}"))?;
            req.input.body = Some(StreamingBlob::from(s3s::Body::from(bytes)));
        }
        let _held = self.conditional.lock().await;
        self.fs.put_object(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let conditional = req.input.if_none_match.is_some() || req.input.if_match.is_some();
        let _held = if conditional { Some(self.conditional.lock().await) } else { None };
        self.fs.complete_multipart_upload(req).await
    }
}

struct Options {
    host: String,
    port: u16,
    access_key: String,
    secret_key: String,
    root: std::path::PathBuf,
}

fn options() -> Result<Options, String> {
    const USAGE: &str = "usage: some-s3 [--host HOST] --port PORT --access-key KEY --secret-key SECRET FOLDER";
    let mut args = std::env::args().skip(1);
    let mut host = "127.0.0.1".to_string();
    let (mut port, mut access_key, mut secret_key, mut root) = (None, None, None, None);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value; {USAGE}"));
        match arg.as_str() {
            "--host" => host = value()?,
            "--port" => port = Some(value()?.parse::<u16>().map_err(|e| format!("--port: {e}"))?),
            "--access-key" => access_key = Some(value()?),
            "--secret-key" => secret_key = Some(value()?),
            _ if !arg.starts_with("--") && root.is_none() => root = Some(arg.into()),
            _ => return Err(format!("unexpected argument {arg:?}; {USAGE}")),
        }
    }
    match (port, access_key, secret_key, root) {
        (Some(port), Some(access_key), Some(secret_key), Some(root)) => Ok(Options { host, port, access_key, secret_key, root }),
        _ => Err(USAGE.to_string()),
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let opts = options()?;
    let fs = FileSystem::new(&opts.root).map_err(|e| format!("{}: {e:?}", opts.root.display()))?;
    let mut builder = S3ServiceBuilder::new(Folder { fs, conditional: Mutex::new(()) });
    builder.set_auth(SimpleAuth::from_single(opts.access_key, opts.secret_key));
    let service = builder.build();
    let address = format!("{}:{}", opts.host, opts.port);
    let listener = tokio::net::TcpListener::bind(&address).await.map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let http = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    loop {
        let Ok((socket, _)) = listener.accept().await else { continue };
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(socket), service.clone()).into_owned();
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}
