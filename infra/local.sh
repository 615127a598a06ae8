#!/usr/bin/env bash
# One machine, the distributed shape: RabbitMQ, an S3 server (some-s3), N
# LLM workers and a compute worker, all on 127.0.0.1. Submit runs with
# `some run --queue "$SOME_QUEUE"`, releases with `some ingest release DIR
# --queue "$SOME_QUEUE"`.
#   infra/local.sh up [WORKERS]   start everything (default 2 LLM workers)
#   infra/local.sh down           stop the workers and the S3 server
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
STATE="$SOME_CACHE/local"
mkdir -p "$STATE"
export SOME_QUEUE="${SOME_QUEUE:-amqp://guest:guest@127.0.0.1:5672/%2f}"
export AWS_ENDPOINT_URL="${AWS_ENDPOINT_URL:-http://127.0.0.1:9000}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-some}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-some-secret}" AWS_REGION="${AWS_REGION:-us-east-1}"
export SOME_LAKE="${SOME_LAKE:-s3://some/lake}"

case "${1:-up}" in
  up)
    ensure_build_tools
    ensure_rabbitmq
    cargo build --release --locked --workspace --bins
    mkdir -p "$STATE/s3/some"
    "$CARGO_TARGET_DIR/release/some-s3" --port 9000 --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$STATE/s3" >"$STATE/s3s.log" 2>&1 &
    echo $! >"$STATE/s3s.pid"
    for i in $(seq 1 "${2:-2}"); do
      "$CARGO_TARGET_DIR/release/some" worker --kind llm --remote-kernels >"$STATE/worker-$i.log" 2>&1 &
      echo $! >"$STATE/worker-$i.pid"
    done
    "$CARGO_TARGET_DIR/release/some" worker --kind compute >"$STATE/compute.log" 2>&1 &
    echo $! >"$STATE/compute.pid"
    say "RabbitMQ, some-s3 (:9000), ${2:-2} LLM workers and a compute worker are up; logs in $STATE"
    say "export SOME_QUEUE=$SOME_QUEUE SOME_LAKE=$SOME_LAKE AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY AWS_REGION=$AWS_REGION"
    ;;
  down)
    for pid in "$STATE"/*.pid; do
      [ -e "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
      rm -f "$pid"
    done
    say "stopped"
    ;;
  *) echo "usage: infra/local.sh up [WORKERS] | down" >&2; exit 2 ;;
esac
