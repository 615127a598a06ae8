# Recipes for what people type. `just --list` shows them.
# Every recipe runs the same scripts the README names, so they set up
# what they need on a fresh machine.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The main job on the embedded default: queries, a world, its coverage check.
demo:
    infra/demo.sh

# Every test (installs and starts what the tests need first).
test *ARGS:
    infra/test.sh {{ARGS}}

# Paper-scale lake benchmarks: synth posts/s, SearchPost latency.
bench-lake:
    source infra/env.sh && cargo bench -p some-workers --bench lake

# Run `some` from the release build against $SOME_LAKE (default ./some-lake).
some *ARGS:
    source infra/env.sh && cargo run --release --quiet -p some -- {{ARGS}}

# SQL over the lake.
sql QUERY:
    just some sql "{{QUERY}}"

# Formatting, clippy, and the direction of dependencies between crates.
lint:
    source infra/env.sh && cargo fmt --all --check && cargo clippy --workspace --all-targets -- -D warnings
    infra/check-deps.sh

fmt:
    cargo fmt --all
