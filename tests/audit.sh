#!/usr/bin/env bash
# `make audit`: every check plimsoll has, in one command, ending with one
# summary table. Each step runs even when an earlier one failed; the exit
# status is non-zero if any step failed. A step whose real part is missing
# on this machine is reported as skipped, with the reason from its output.
#
# Steps: formatting, clippy (-D warnings), the whole test suite except the
# escape catalogue, the escape catalogue at each tier, the fuzz smoke run,
# and the CI-sized soak through the daemon.
set -uo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/plimsoll-audit.XXXXXX")
rows=()
failed=0

step() {
    local name=$1
    shift
    local log="$log_dir/$(echo "$name" | tr -c 'a-zA-Z0-9' '-').log"
    echo "== $name"
    local start=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    local took=$((SECONDS - start))
    local result
    if [ $rc -ne 0 ]; then
        result="FAILED (log: $log)"
        failed=1
        tail -n 30 "$log"
    elif grep -q '^SKIP' "$log"; then
        result="skipped: $(grep -m1 '^SKIP' "$log" | cut -c7-110)"
    else
        result="passed"
    fi
    local detail
    detail=$(grep -E '^test result:' "$log" | awk '{p+=$4; f+=$6} END {if (NR) printf "%d tests passed, %d failed", p, f}')
    rows+=("| $name | $result | ${detail:-} | ${took}s |")
}

step "rustfmt" make -s lint-fmt
step "clippy -D warnings" make -s lint-clippy
step "tests (all but the escape catalogue)" \
    make -s test TEST_ARGS="--skip the_catalogue_holds"
for tier in in_process in_bubblewrap in_gvisor in_a_microvm; do
    step "escape catalogue, ${tier//_/ }" \
        $CARGO test --release -p plimsoll --test escape -- --exact "the_catalogue_holds_$tier" --nocapture
done
step "fuzz smoke (60 s per target)" make -s fuzz-smoke
step "soak (${PLIMSOLL_SOAK_RUNS:-5000} runs through the daemon)" make -s soak

echo
echo "| step | result | detail | time |"
echo "|---|---|---|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "logs: $log_dir"
exit $failed
