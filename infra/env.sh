# Shared set-up for the scripts in infra/: sourced, not run.
#
# Everything slow to obtain (the cargo target folder, tools built from
# crates.io) lives under $SOME_CACHE, outside the clone, so the next run on
# this machine reuses it; a cold machine builds it once.

set -euo pipefail

SOME_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export SOME_ROOT
export SOME_CACHE="${SOME_CACHE:-$HOME/.cache/some}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$SOME_CACHE/target}"
export PATH="$SOME_CACHE/bin:$HOME/.cargo/bin:$PATH"
mkdir -p "$SOME_CACHE/bin"

# The workplace's shared folder (persona sets, the reference's parity
# fixture) that some tests read: beside the clone, else this workplace's.
if [ -z "${SOME_SHARED:-}" ]; then
  for candidate in "$SOME_ROOT/../shared" /work/shared; do
    if [ -d "$candidate/personas" ]; then export SOME_SHARED="$(cd "$candidate" && pwd)"; break; fi
  done
fi

say() { printf '[some] %s\n' "$*" >&2; }

# Installs Debian packages that are missing (needs root or sudo).
ensure_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# C toolchain pieces the -sys crates need: cmake (llama.cpp) and libclang
# (bindgen).
ensure_build_tools() {
  ensure_apt cmake libclang-dev
}

# The one build the demo, the tests, the nightly evaluation and `just some`
# share: the dev profile, with the crates that do heavy arithmetic (the
# models, compression) optimised in Cargo.toml, binaries and tests
# together, so whichever command comes first builds every crate for all of
# them (a plain `cargo build -p some` would resolve other features and
# compile dependencies again). The binary is $CARGO_TARGET_DIR/debug/some.
# Release builds are for benchmarks and `infra/local.sh` (our own crates
# optimised too).
build_workspace() {
  ensure_build_tools
  ensure_knowledge
  say "building the workspace, binaries and tests (dev profile, target folder $CARGO_TARGET_DIR; about 10 min cold on 2 cores, seconds when nothing changed)"
  cargo build --workspace --bins --tests --locked
  # The CUDA check's tests (infra/cuda-check.sh --rust): `-p some-jobs
  # --features cuda` resolves some dependencies' features differently (69
  # small crates, under a minute), so they are built here too.
  say "building the CUDA feature's tests of some-jobs"
  cargo test -p some-jobs --features cuda --locked --lib --test cuda_parity --no-run
}

# The simulation's built-in general-knowledge corpus (WordNet 3.0's noun
# glosses, infra/knowledge.md), generated from Debian's wordnet-base into
# $SOME_CACHE/knowledge, where `some` reads it; seconds once the package is
# in. Not committed: it is 7 MB of data any machine can rebuild exactly.
ensure_knowledge() {
  local out="$SOME_CACHE/knowledge/wordnet-nouns.jsonl"
  [ -s "$out" ] && return 0
  ensure_apt wordnet-base
  say "generating the built-in knowledge corpus into $out"
  python3 "$SOME_ROOT/infra/gen-knowledge.py" /usr/share/wordnet "$out" >&2
}

# A Python venv at $1 (Debian's python3-venv installed if venv is missing).
make_venv() {
  python3 -m venv "$1" 2>/dev/null || { ensure_apt python3-venv && rm -rf "$1" && python3 -m venv "$1"; }
}

# Debian's Chromium, the real browser the transcript viewer's test reads
# its pages in (seconds from Debian's mirror).
ensure_chromium() {
  ensure_apt chromium
  export SOME_CHROMIUM=/usr/bin/chromium
}

# Pinned PyPI packages in the venv $SOME_CACHE/$1, installed unless
# `import $2` already works there: ensure_pip VENV "MODULES" PACKAGE==VERSION...
ensure_pip() {
  local venv="$SOME_CACHE/$1" modules="$2"
  shift 2
  if "$venv/bin/python" -c "import $modules" >/dev/null 2>&1; then return 0; fi
  [ -x "$venv/bin/python" ] || make_venv "$venv"
  say "installing $* into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
}

# The official OpenAI Python client, for the test that `some llm serve`
# streams to it. Exports SOME_OPENAI_PYTHON.
ensure_openai_client() {
  export SOME_OPENAI_PYTHON="$SOME_CACHE/openai-venv/bin/python"
  ensure_pip openai-venv openai openai==3.54.0
}

# Engines that read the lake's Delta logs and that no one here wrote: the
# `deltalake` package (delta-rs) and Polars, for the test that they read
# every table as `some sql` does. Exports SOME_DELTA_PYTHON.
ensure_delta_readers() {
  export SOME_DELTA_PYTHON="$SOME_CACHE/delta-venv/bin/python"
  ensure_pip delta-venv "deltalake, polars, pyarrow" deltalake==1.6.6 polars==2.1.0 pyarrow==26.0.1
}

# RabbitMQ on 127.0.0.1:5672 (guest/guest).
ensure_rabbitmq() {
  if (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then return 0; fi
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    ensure_apt rabbitmq-server
  fi
  say "starting RabbitMQ"
  rabbitmq-server -detached >/dev/null 2>&1 || true
  rabbitmqctl await_startup --timeout 120 >/dev/null
}

# Python for the kernel benchmark's peers: numpy, and numba (with scipy,
# which numba's `@` calls for BLAS) because the reference clustering
# jit-compiles its dot product with numba. Exports SOME_PYTHON, which the
# benchmark reads first.
ensure_numpy() {
  export SOME_PYTHON="$SOME_CACHE/pyenv/bin/python"
  ensure_pip pyenv "numpy, numba, scipy" numpy==2.4.6 numba==0.68.1 llvmlite==0.50.0 scipy==1.17.1
}
