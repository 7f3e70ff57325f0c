#!/usr/bin/env bash
# The delivery queue against the client, side by side in one run: `herald bench client` sending
# 300,000 straight to `herald mock`, then `herald bench store` (COUNT devices registered, one
# notification to all of them claimed and completed in batches, every device accepted, nothing
# sent) on SQLite, and on PostgreSQL when POSTGRES=postgres://USER@HOST:PORT/DB is given (each
# run on a database of its own, made with psql and dropped after: the user needs CREATEDB).
# Prints each store rate ÷ the client's rate measured just before it: how many times faster
# than the client the queue hands out and records work (issue 18's goal: at least 5).
# ROUNDS=N (default 3) runs it all N times over and ends with each ratio's median; with
# HERALD_BEFORE=PATH each round runs that build too, after this one, on the same mock.
# Usage: scripts/bench-store.sh [COUNT]. Needs python3 and openssl (and psql for PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-1000000}
ROUNDS=${ROUNDS:-3}
MOCK_PORT=18744

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, start_mock_and_key, fresh databases
start_mock_and_key "$MOCK_PORT"

client_rate() {  # BINARY
    "$1" bench client --host "https://127.0.0.1:$MOCK_PORT" --ca-file "$WORK/ca.pem" --count 300000 \
        --auth-key "$WORK/AuthKey_BENCHKEY01.p8" --key-id BENCHKEY01 --team-id BENCHTEAM1 --output json |
        python3 -c 'import json, sys; print("%.0f" % json.load(sys.stdin)["rate"])'
}
store_rate() {  # BINARY [DATABASE]
    "$1" bench store ${2:+--database "$2"} --count "$COUNT" --output json | python3 -c 'import json, sys; print("%.0f" % json.load(sys.stdin)["broadcast_rate"])'
}
declare -A RATIOS
run() {  # NAME BINARY ROUND
    local name=$1 binary=$2 label="$1 [round $3]" client rate url
    client=$(client_rate "$binary")
    echo "$label: herald bench, straight to the mock: $client/s"
    rate=$(store_rate "$binary")
    echo "$label: store on SQLite: $rate/s, $(python3 -c "print('%.2f' % ($rate / $client))") × the client"
    RATIOS["$name, SQLite"]+="$(python3 -c "print('%.2f' % ($rate / $client))") "
    if [ -n "${POSTGRES:-}" ]; then
        fresh "$POSTGRES"
        rate=$(store_rate "$binary" "$FRESH_URL")
        forget_fresh
        echo "$label: store on PostgreSQL: $rate/s, $(python3 -c "print('%.2f' % ($rate / $client))") × the client"
        RATIOS["$name, PostgreSQL"]+="$(python3 -c "print('%.2f' % ($rate / $client))") "
    fi
}

for round in $(seq 1 "$ROUNDS"); do
    run "this build" "$HERALD" "$round"
    if [ -n "${HERALD_BEFORE:-}" ]; then run "before" "$HERALD_BEFORE" "$round"; fi
done
for key in "${!RATIOS[@]}"; do
    python3 -c "import statistics, sys; v = [float(x) for x in sys.argv[2].split()]; print('median of %d rounds, %s: store ÷ client %.2f (%s)' % (len(v), sys.argv[1], statistics.median(v), ', '.join('%.2f' % x for x in v)))" \
        "$key" "${RATIOS[$key]}"
done | sort
