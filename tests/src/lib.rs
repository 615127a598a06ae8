//! Helpers for the end-to-end tests: the `some` command as a user runs it,
//! and real service processes started for the test.

pub mod fleet;
pub mod scripted;
pub mod sim;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `some` binary next to the test executables (`cargo build --workspace --bins --tests`
/// puts it there; infra/test.sh builds it before the tests).
pub fn some_bin() -> PathBuf {
    workspace_bin("some")
}

/// A binary of the workspace, next to the test executables.
fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(Path::parent).expect("target folder");
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build it first with `cargo build --workspace --bins --tests` (infra/test.sh does)",
        bin.display()
    );
    bin
}

/// One invocation of `some`.
pub struct SomeRun {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl SomeRun {
    fn from(out: Output) -> SomeRun {
        SomeRun {
            status: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Panics with the output unless the command succeeded.
    pub fn ok(self) -> SomeRun {
        assert_eq!(self.status, 0, "some failed:\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }
}

/// Runs `some` with a lake and extra environment.
pub fn some(lake: &str, env: &[(String, String)], args: &[&str]) -> SomeRun {
    let out = Command::new(some_bin())
        .arg("--lake")
        .arg(lake)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env_remove("SOME_LAKE")
        .output()
        .expect("run some");
    SomeRun::from(out)
}

/// A lake in a temporary folder with the real queries and the small world
/// (seed 0).
pub fn lake_with_world() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lake = dir.path().join("lake").to_str().expect("utf-8 path").to_string();
    some(&lake, &[], &["ingest", "queries"]).ok();
    some(&lake, &[], &["synth", "--scale", "small"]).ok();
    (dir, lake)
}

/// Each world table, ordered so two lakes can be compared row for row.
const WORLD_TABLES: [(&str, &str); 4] = [
    ("posts", "SELECT * FROM posts ORDER BY source, post_id"),
    ("users", "SELECT * FROM users ORDER BY uid"),
    ("ref_posts", "SELECT * FROM ref_posts ORDER BY post_id"),
    ("knowledge", "SELECT * FROM knowledge ORDER BY doc_index"),
];

/// A query's result as CSV.
pub fn csv(lake: &str, query: &str) -> String {
    some(lake, &[], &["sql", "--format", "csv", query]).ok().stdout
}

/// Two lakes hold the same world, row for row.
pub fn assert_same_world(a: &str, b: &str) {
    for (table, query) in WORLD_TABLES {
        let (left, right) = (csv(a, query), csv(b, query));
        assert!(left.lines().count() > 1, "{table} is empty");
        assert!(left == right, "{table} differs between {a} and {b}");
    }
}

/// A release under `root` with one location-stream post and user 123,
/// whose file holds `user_json` (none at all if `None`: a missing part).
/// Returns the release root.
pub fn tiny_release(root: &Path, user_json: Option<&str>) -> PathBuf {
    let db = root.join("release/database");
    std::fs::create_dir_all(db.join("raw_data")).expect("raw_data");
    std::fs::write(db.join("raw_data/2025-05-01_北京_sensitive.jsonl"), "{\"unique_id\": \"1\", \"content\": \"早\"}\n").expect("raw file");
    std::fs::create_dir_all(db.join("user_data/123")).expect("user folder");
    if let Some(json) = user_json {
        std::fs::write(db.join("user_data/123/123.json"), json).expect("user file");
    }
    root.join("release")
}

/// A user file whose `weibo` is a number, not a list.
pub const BAD_USER: &str = "{\"user\": {\"id\": \"123\"}, \"weibo\": 5}";

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// One HTTP/1.1 request to 127.0.0.1 with `headers` (`Name: value`) and a
/// JSON body; returns the status line and the body. A `Content-Length`
/// among `headers` replaces the body's own, to announce a body that is
/// never sent.
pub fn http(port: u16, method: &str, path: &str, headers: &[&str], body: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).expect("read timeout");
    let mut extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    if !headers.iter().any(|h| h.to_ascii_lowercase().starts_with("content-length:")) {
        extra.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Connection: close\r\n\r\n{body}"
    )
    .expect("send");
    let mut out = String::new();
    // A server may answer and close before reading a refused body whole.
    let _ = s.read_to_string(&mut out);
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.lines().next().unwrap_or_default().to_string(), body.to_string())
}

/// Waits until something accepts connections on the port.
pub fn wait_for_port(port: u16, timeout: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A real S3 server (`some-s3`: s3s-fs with atomic conditional writes) over
/// a temporary folder, stopped on drop.
pub struct S3Server {
    pub port: u16,
    pub dir: tempfile::TempDir,
    child: Option<Child>,
}

pub const S3_KEY: &str = "some-test-key";
pub const S3_SECRET: &str = "some-test-secret";

impl S3Server {
    /// Starts the server with one bucket.
    pub fn start(bucket: &str) -> S3Server {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join(bucket)).expect("bucket folder");
        let mut server = S3Server { port: free_port(), dir, child: None };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let child = Command::new(workspace_bin("some-s3"))
            .args(["--port", &self.port.to_string(), "--access-key", S3_KEY, "--secret-key", S3_SECRET])
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start some-s3: {e}"));
        self.child = Some(child);
        assert!(wait_for_port(self.port, Duration::from_secs(20)), "some-s3 did not start on port {}", self.port);
    }

    /// Stops the server; [`S3Server::restart`] brings it back on the same port and data.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// The AWS_* variables that point a client at this server.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ENDPOINT_URL".into(), format!("http://127.0.0.1:{}", self.port)),
            ("AWS_ACCESS_KEY_ID".into(), S3_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), S3_SECRET.into()),
            ("AWS_REGION".into(), "us-east-1".into()),
        ]
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Tests that restart the shared RabbitMQ take this for writing; every
/// other broker test takes it for reading.
pub static BROKER: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn rabbitmqctl(args: &[&str]) {
    let out = Command::new("rabbitmqctl")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("rabbitmqctl {args:?}: {e} (infra/test.sh starts RabbitMQ)"));
    assert!(out.status.success(), "rabbitmqctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A virtual host of its own on the machine's RabbitMQ, so concurrent tests
/// never consume each other's shards; deleted on drop.
pub struct Vhost {
    pub name: String,
}

impl Vhost {
    pub fn create() -> Vhost {
        assert!(
            wait_for_port(5672, Duration::from_secs(5)),
            "RabbitMQ is not on 127.0.0.1:5672: run the tests through infra/test.sh, which starts it"
        );
        let name = format!("some-test-{}", std::process::id()) + &format!("-{}", free_port());
        rabbitmqctl(&["add_vhost", &name]);
        rabbitmqctl(&["set_permissions", "-p", &name, "guest", ".*", ".*", ".*"]);
        Vhost { name }
    }

    pub fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:5672/{}", self.name)
    }

    /// Stops and starts the broker application (every vhost).
    pub fn restart_broker(pause: Duration) {
        rabbitmqctl(&["stop_app"]);
        std::thread::sleep(pause);
        rabbitmqctl(&["start_app"]);
        rabbitmqctl(&["await_startup"]);
    }
}

impl Drop for Vhost {
    fn drop(&mut self) {
        let _ = Command::new("rabbitmqctl").args(["delete_vhost", &self.name]).output();
    }
}

/// A `some` process in the background (a worker), killed on drop.
pub struct Background {
    pub child: Child,
    /// Where its stderr goes; shown when the test fails.
    log: tempfile::NamedTempFile,
}

impl Background {
    pub fn start(lake: &str, env: &[(String, String)], args: &[&str]) -> Background {
        let log = tempfile::NamedTempFile::new().expect("create a log file");
        let child = Command::new(some_bin())
            .arg("--lake")
            .arg(lake)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env_remove("SOME_LAKE")
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("open the log file"))
            .spawn()
            .expect("start some");
        Background { child, log }
    }

    /// What it wrote to standard error so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// SIGKILL: no chance to settle anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends a signal by name (`STOP` freezes the process: alive, silent;
    /// `CONT` wakes it).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill").arg(format!("-{name}")).arg(self.child.id().to_string()).status().expect("run kill");
        assert!(status.success(), "kill -{name} {} failed", self.child.id());
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            // The test failed: what the process said is the first clue.
            let log = std::fs::read_to_string(self.log.path()).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            eprintln!("--- last lines of process {} ---\n{}", self.child.id(), tail.join("\n"));
        }
    }
}

/// Polls `done` until it is true or `timeout` passes.
pub fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}
