#!/usr/bin/env bash
# Runs the reliability suite's fault driver and prints its summary line. Usage:
#   reliability-tests/run.sh --size=full [--seed=N] [--events=N] [--kills=N] ...
#   reliability-tests/run.sh --size=ci --seed=42        (the size the build runs)
#   reliability-tests/run.sh --size=control             (the negative control: must fail)
#   reliability-tests/run.sh --size=ci --modes=transactional,lease   (listeners: transactional,lease,batch;
#                                                                    http: the HTTP handler; all four by default)
#   reliability-tests/run.sh --size=ci --http-requests=1000          (HTTP requests; default: events/20, at least 100)
# RELIABILITY_WORKLOAD_ARGS="--idempotency.outbox.claim-ahead=true ..." adds application properties
# to every workload process; RELIABILITY_POSTGRES_SETTINGS="synchronous_commit=off ..." sets
# PostgreSQL's settings over its durable defaults (a negative control of the crash check).
# Exits 0 when the checker found nothing, 1 otherwise. Data and logs of each process:
# reliability-tests/target/reliability/run-<seed>/ (control-<seed>/ for the control).
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -q -B -DskipTests -pl reliability-tests -am package dependency:build-classpath \
  -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
cd reliability-tests
exec java -Xmx1g -Dot.epg.working-dir=target/embedded-postgres \
  -cp "target/classes:$(cat target/classpath.txt)" dev.idempotency.reliability.FaultDriver \
  --work-dir=target/reliability "$@"
