#!/usr/bin/env bash
# Runs the benchmark and prints one table. Usage:
#   benchmarks/run.sh [rounds] [messages per record scenario] [messages per batch scenario] [scenarios...]
# Scenarios: A NOOP B B_CACHE C_CACHE C_NO_CACHE D E E_FLOOR F F_NO_CACHE (the default set; NOOP is a listener that
# does nothing, the ceiling of the duplicates scenarios C_*; E_FLOOR is D plus one multi-row insert of the batch's keys
# into a table with a unique index, the floor of E), L (lease mode) and OUTBOX (the
# relay's throughput over a backlog of batch-scenario size, and its latency at 1,000/s; OUTBOX_AHEAD is the
# same with idempotency.outbox.claim-ahead=true), OUTBOX_REPLICATION (the replication relay against the plain
# producer, the table relay and the plain table loop over the same backlog, and its latency at 1,000/s).
# HTTP (not in the default set): an @Idempotent POST handler against the same handler without it, with a
# concurrent client (BENCH_HTTP_CONCURRENCY, 8): new keys and all replays; BENCH_HTTP_REQUESTS (5,000) per phase.
# G, G_NEW and G_DUP (not in the default set) are a new consumer group on an emptied processed_messages table:
# 3 partitions, random UUID keys, no ANALYZE while the table grows; 50,000 messages each (BENCH_GROWING_MESSAGES).
# BENCH_BEFORE=<git revision> also runs every scenario on the starter as it was at that revision, interleaved
# with this one (A A' B B' ..., then A' A B' B ... in even rounds), and reports both, so that a change is
# measured before and after in one run.
# Scenarios run interleaved (A B C ... A B C ...), each in a fresh JVM pinned to CPU 0;
# Kafka, PostgreSQL and Redis run in one process pinned to CPU 1 (the PostgreSQL and Redis
# server processes inherit the pinning).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
record_messages=${2:-20000}
batch_messages=${3:-100000}
shift $(( $# > 3 ? 3 : $# ))
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(A NOOP B B_CACHE C_CACHE C_NO_CACHE D E E_FLOOR F F_NO_CACHE)

./mvnw -q -B -DskipTests -pl benchmarks -am package dependency:build-classpath \
  -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
classpath="benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)"
work=benchmarks/target/run-$(date +%Y%m%d-%H%M%S)
mkdir -p "$work"
variants=(after)
if [ -n "${BENCH_BEFORE:-}" ]; then
  # the starter's classes at that revision, in place of this tree's, on the same classpath
  before="$PWD/benchmarks/target/before-$(git rev-parse --short "$BENCH_BEFORE")"
  if [ ! -d "$before/classes" ]; then
    rm -rf "$before" && git worktree add -f --detach "$before/tree" "$BENCH_BEFORE" >/dev/null
    (cd "$before/tree" && ./mvnw -q -B -o -DskipTests -pl idempotency-spring-boot-autoconfigure package \
      || ./mvnw -q -B -DskipTests -pl idempotency-spring-boot-autoconfigure package)
    cp -r "$before/tree/idempotency-spring-boot-autoconfigure/target/classes" "$before/classes"
    git worktree remove --force "$before/tree"
  fi
  classpath_before="benchmarks/target/classes:$before/classes:$(tr ':' '\n' < benchmarks/target/classpath.txt \
    | grep -v 'idempotency-spring-boot-autoconfigure' | paste -sd:)"
  variants=(after before)
fi

pin() { if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }

# In a subshell that execs, so that $! is the JVM itself (taskset execs it too) and the
# trap below stops it: its shutdown hook stops PostgreSQL and Redis.
(exec_pin() { if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then exec taskset -c "$1" "${@:2}"; else exec "${@:2}"; fi; }
 exec_pin 1 java -Xmx2g -Dot.epg.working-dir="$work/postgres" -cp "$classpath" \
  dev.idempotency.benchmarks.BenchmarkInfrastructure "$work/infrastructure.properties") > "$work/infrastructure.log" 2>&1 &
infrastructure=$!
trap 'kill $infrastructure 2>/dev/null; wait $infrastructure 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do [ -f "$work/infrastructure.properties" ] && break; sleep 0.5; done
[ -f "$work/infrastructure.properties" ] || { cat "$work/infrastructure.log"; exit 1; }

{
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "java: $(java -version 2>&1 | head -1)"
  echo "rounds: $rounds, messages: $record_messages per record scenario, $batch_messages per batch scenario"
} | tee "$work/machine.txt"

for round in $(seq 1 "$rounds"); do
  for scenario in "${scenarios[@]}"; do
    case $scenario in D|E|E_FLOOR|F|F_NO_CACHE) messages=$batch_messages ;; G|G_NEW|G_DUP) messages=${BENCH_GROWING_MESSAGES:-50000} ;;
      *) messages=$record_messages ;; esac
    if [ "$scenario" = HTTP ]; then
      main=dev.idempotency.benchmarks.HttpBenchmark
      arguments=("$work/infrastructure.properties" "${BENCH_HTTP_REQUESTS:-5000}" "$round")
    elif [ "$scenario" = OUTBOX_REPLICATION ]; then
      main=dev.idempotency.benchmarks.ReplicationOutboxBenchmark; arguments=("$work/infrastructure.properties" "$batch_messages")
    elif [ "$scenario" = OUTBOX ] || [ "$scenario" = OUTBOX_AHEAD ]; then
      main=dev.idempotency.benchmarks.OutboxBenchmark; arguments=("$work/infrastructure.properties" "$batch_messages" "$scenario")
    else
      main=dev.idempotency.benchmarks.BenchmarkScenario; arguments=("$scenario" "$work/infrastructure.properties" "$messages")
    fi
    # before and after take turns at going first, so that neither gains from its place
    order=("${variants[@]}")
    if [ ${#variants[@]} -eq 2 ] && [ $((round % 2)) -eq 0 ]; then order=(before after); fi
    for variant in "${order[@]}"; do
      if [ "$variant" = before ]; then cp="$classpath_before"; results="$work/results-before.txt"
      else cp="$classpath"; results="$work/results.txt"; fi
      # shellcheck disable=SC2086
      line=$(pin 0 java -Xmx1g ${BENCH_JAVA_OPTS:-} -cp "$cp" "$main" "${arguments[@]}" \
        2>>"$work/scenarios.log" | grep '^RESULT' || true)
      [ -n "$line" ] || { echo "scenario $scenario ($variant) failed; see $work/scenarios.log"; exit 1; }
      echo "round $round ($variant): $line"
      echo "$line" >> "$results"
    done
  done
done

java -cp "$classpath" dev.idempotency.benchmarks.BenchmarkReport "$work/results.txt" | tee "$work/report.md"
if [ -f "$work/results-before.txt" ]; then
  echo; echo "Before ($BENCH_BEFORE), same run:"
  java -cp "$classpath" dev.idempotency.benchmarks.BenchmarkReport "$work/results-before.txt" | tee "$work/report-before.md"
fi
