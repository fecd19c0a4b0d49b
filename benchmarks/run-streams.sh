#!/usr/bin/env bash
# Runs the Kafka Streams benchmark and prints one table. Usage:
#   benchmarks/run-streams.sh [rounds] [measured records per scenario] [scenarios...]
# Scenarios: S_PASS (pass-through baseline), S_PASS_TWICE (the pass-through that also sends
# each record to a second topic, as a changelogged store sends one record per new key: the
# floor of its cost), S_NEW, S_DUP (the deduplicating processor, purging every 5 s, on
# all-new and all-duplicate input), S_NEW_WINDOW, S_DUP_WINDOW (the usual window-store
# deduplication, the same inputs); not in the default set: S_NEW_BLOOM, S_DUP_BLOOM (the
# processor's Bloom pre-check sized for 4 N keys from the start), S_NEW_LOOKUP, S_DUP_LOOKUP
# (without the pre-check: every key looked up in the store), S_NEW_MEMORY (an in-memory store instead of
# RocksDB, changelog kept), S_NEW_EXPIRE, S_NEW_WINDOW_EXPIRE (all new, the records' timestamps
# spread over 5/3 of the window, so that keys expire in the measured half: the purge deletes
# them, the window store drops a segment). Each scenario reads 2 x N records: N of warm-up, N measured; each
# RESULT line gives the longest stall between two records of the measured half (maxGapMs) and
# the size of the store once closed (RocksDB files, changelog on the broker). With
# BENCH_JAVA_OPTS=-Dbench.stalls=true, scenarios.log also gets the three longest stalls of each
# scenario and the one in which the stream thread worked most: how long, the stream thread's CPU
# meanwhile, and its most sampled frames (STALL lines).
# As in run.sh: scenarios interleaved, each in a fresh JVM pinned to CPU 0; the broker
# (the same infrastructure process as run.sh) pinned to CPU 1. The load average before each
# scenario goes to load.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
records=${2:-300000}
shift $(( $# > 2 ? 2 : $# ))
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(S_PASS S_PASS_TWICE S_NEW S_DUP S_NEW_WINDOW S_DUP_WINDOW)

./mvnw -q -B -DskipTests -pl benchmarks -am package dependency:build-classpath \
  -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
work=benchmarks/target/run-streams-$(date +%Y%m%d-%H%M%S)
mkdir -p "$work/lib"
# a copy of what this checkout built, so that a build during the run does not change it
cp -r benchmarks/target/classes "$work/classes"
classpath="$work/classes"
for entry in $(tr ':' ' ' < benchmarks/target/classpath.txt); do
  case "$entry" in
    "$PWD"/*) cp -r "$entry" "$work/lib/" && classpath="$classpath:$work/lib/$(basename "$entry")" ;;
    *) classpath="$classpath:$entry" ;;
  esac
done

# exec: a backgrounded function runs in a subshell, and $! must be the JVM itself, or the
# trap below kills the subshell and leaves the servers running
pin() { if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then exec taskset -c "$1" "${@:2}"; else exec "${@:2}"; fi; }

pin 1 java -Xmx2g -Dot.epg.working-dir="$work/postgres" -cp "$classpath" \
  dev.idempotency.benchmarks.BenchmarkInfrastructure "$work/infrastructure.properties" > "$work/infrastructure.log" 2>&1 &
infrastructure=$!
trap 'kill $infrastructure 2>/dev/null; wait $infrastructure 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do [ -f "$work/infrastructure.properties" ] && break; sleep 0.5; done
[ -f "$work/infrastructure.properties" ] || { cat "$work/infrastructure.log"; exit 1; }

{
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "java: $(java -version 2>&1 | head -1)"
  echo "rounds: $rounds, records: 2 x $records per scenario"
} | tee "$work/machine.txt"

for round in $(seq 1 "$rounds"); do
  for scenario in "${scenarios[@]}"; do
    echo "round $round $scenario: $(uptime)" >> "$work/load.txt"
    # shellcheck disable=SC2086
    line=$( (pin 0 java -Xmx1g ${BENCH_JAVA_OPTS:-} -cp "$classpath" dev.idempotency.benchmarks.StreamsBenchmark \
      "$scenario" "$work/infrastructure.properties" "$records") 2>>"$work/scenarios.log" | grep '^RESULT' || true)
    [ -n "$line" ] || { echo "scenario $scenario failed; see $work/scenarios.log"; exit 1; }
    echo "round $round: $line"
    echo "$line" >> "$work/results.txt"
  done
done

java -cp "$classpath" dev.idempotency.benchmarks.StreamsBenchmarkReport "$work/results.txt" | tee "$work/report.md"
echo "load average (1, 5, 15 min) before each scenario:"
awk -F'load average: ' '{print "  " $1 $2}' "$work/load.txt" | sed 's/ up .*users\?, */ load /' | tee -a "$work/report.md"
