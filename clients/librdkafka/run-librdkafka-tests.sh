#!/usr/bin/env bash
# Build and run librdkafka's own producer tests that need no real cluster
# (unit tests, local and mock-cluster tests) on a librdkafka source tree,
# pristine or patched, and print one line per test: NAME PASSED|FAILED|SKIPPED DURATION.
#
# Usage: run-librdkafka-tests.sh TREE [TEST...]
#   TREE   a librdkafka 2.12.1 tree (configured or not; built here if needed)
#   TEST   test numbers to run (default: the list below)
# Logs: TREE/tests/kbatch-logs/NNNN.log.  Exit code: number of failed tests.
set -u
tree=$(cd "${1:?usage: $0 TREE [TEST...]}" && pwd)
shift
default_tests=(0000 0004 0009 0055 0062 0074 0076 0084 0086 0095 0103 0105 0117 0125 0143 0144 0145 0146 0151 0200 0201)
tests=("${@:-${default_tests[@]}}")
jobs=$(nproc 2>/dev/null || echo 2)

cd "$tree"
if [ ! -f Makefile.config ]; then
    echo "configuring $tree" >&2
    bash ./configure --disable-gssapi --disable-curl --disable-sasl --disable-zstd \
        >kbatch-configure.log 2>&1 || { echo "configure failed, see $tree/kbatch-configure.log" >&2; exit 100; }
fi
echo "building librdkafka and the test runner in $tree (a few minutes the first time)" >&2
{ make -j"$jobs" -C src librdkafka.a librdkafka.so.1 &&
  make -j"$jobs" -C src-cpp librdkafka++.a &&
  make -j"$jobs" -C tests test-runner; } >kbatch-build-tests.log 2>&1 ||
    { echo "build failed, see $tree/kbatch-build-tests.log" >&2; exit 100; }

cd tests
mkdir -p kbatch-logs
failed=0
for t in "${tests[@]}"; do
    if ! compgen -G "$t-*.c*" >/dev/null; then
        printf '%s\tABSENT\t0\n' "$t"
        continue
    fi
    start=$(date +%s)
    # -l: only the local tests (unit, mock cluster): none needs a real cluster
    TESTS=$t TEST_LEVEL=2 ./test-runner -l >"kbatch-logs/$t.log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    # One line per test of the run's summary table (a number may name several)
    rows=$(sed 's/\x1b\[[0-9;]*m//g' "kbatch-logs/$t.log" |
        awk -F'|' '/^\|/ && $2 !~ /<MAIN>/ && NF >= 4 {
            gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4); print $2 "\t" $3 "\t" $4 }')
    if [ -z "$rows" ]; then
        rows="$t"$'\t'"FAILED(rc=$rc)"$'\t'"${secs}s"
    fi
    printf '%s\n' "$rows"
    if [ $rc -ne 0 ]; then
        failed=$((failed + 1))
    fi
done
exit $failed
