#!/usr/bin/env bash
# Writes the API baseline (api/baseline.jar): the classes of the API packages as they are
# built now. Run after a deliberate change of the API; see "API compatibility" in the README.
set -euo pipefail
module="$(cd "$(dirname "$0")/.." && pwd)"
cd "$module/.."
./mvnw -B -q -pl idempotency-spring-boot-autoconfigure -am package -DskipTests -Djapicmp.skip=true
classes="$module/target/classes"
cd "$classes"
files=$(find dev/idempotency -maxdepth 2 -name '*.class' -not -path 'dev/idempotency/internal/*' | sort)
rm -f "$module/api/baseline.jar"
# fixed timestamps, so that the same API gives the same bytes
touch -d '2000-01-01 00:00:00' $files
jar --create --file "$module/api/baseline.jar" --date=2000-01-01T00:00:00Z $files
echo "wrote $module/api/baseline.jar ($(echo "$files" | wc -l) classes)"
