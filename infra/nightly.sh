#!/usr/bin/env bash
# The nightly regression evaluation: a sampled run of every task against the
# built-in model, compared with the stored baseline run; exits non-zero when
# a task's score or TCR drops by more than $SOME_NIGHTLY_THRESHOLD points.
# The first night (no baseline in the lake yet) records the baseline.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SOME_ROOT"
build_workspace
SOME="$CARGO_TARGET_DIR/debug/some"
export SOME_LAKE="${SOME_LAKE:-$SOME_CACHE/nightly-lake}"
SAMPLE="${SOME_NIGHTLY_SAMPLE:-3}"
BASELINE="${SOME_NIGHTLY_BASELINE:-nightly-baseline}"
RUN="nightly-$(date -u +%Y%m%dT%H%M%S)"

"$SOME" models fetch multilingual-e5-small qwen2.5-coder-0.5b-instruct
# A lake of another schema version cannot be read by this build, and its
# baseline cannot be compared with: keep it aside and record a new baseline.
if ! probe=$("$SOME" sql "SELECT 1" 2>&1) && grep -q "schema version" <<<"$probe"; then
  say "the nightly lake has another schema version ($probe); moving it to $SOME_LAKE.old and recording a new baseline"
  rm -rf "$SOME_LAKE.old" && mv "$SOME_LAKE" "$SOME_LAKE.old"
fi
"$SOME" ingest queries
if [ "$("$SOME" sql --format csv "SELECT count(*) AS n FROM posts" | tail -n 1)" = "0" ]; then
  "$SOME" synth --scale small
fi
FLAGS=(--sample "$SAMPLE" --sample-seed 0 --temperature 0 --seed 0 --max-llm-calls 6 --max-tokens 256 --max-input-tokens 6000)
if ! "$SOME" report "$BASELINE" >/dev/null 2>&1; then
  say "no baseline yet: recording $BASELINE"
  "$SOME" run --run-id "$BASELINE" "${FLAGS[@]}"
fi
"$SOME" run --run-id "$RUN" "${FLAGS[@]}" --html "nightly-report.html"
"$SOME" compare "$RUN" "$BASELINE" --threshold "${SOME_NIGHTLY_THRESHOLD:-10}"
