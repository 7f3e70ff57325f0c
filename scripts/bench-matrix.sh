#!/usr/bin/env bash
# The Matrix Push Gateway API's intake: `POST /_matrix/push/v1/notify` requests a second that one
# `herald serve` on SQLite takes and answers (each stored durably, as a notification to its device,
# before its answer), with `wrk` as the homeserver. Each request carries one device of an APNs
# pusher (a pool of POOL pushkeys, each registered by its first request) and an event ID of its
# own, so none is suppressed as a duplicate. Two cases, side by side in one run:
#   - api-only: `herald serve --api-only`, so the rate is the intake alone;
#   - full: the same with its workers sending every notification to `herald mock` meanwhile.
# PERF=PREFIX: a profile of herald serve in each case, PREFIX-CASE.data (`perf report -i …`).
# Usage: scripts/bench-matrix.sh [SECONDS] [CONNECTIONS] [POOL]. Needs wrk (Debian: wrk), openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_RUN=${1:-15}
CONNECTIONS=${2:-32}
POOL=${3:-10000}
MOCK_PORT=18644
API_PORT=18680

command -v wrk >/dev/null || { echo "bench-matrix.sh needs wrk: apt-get install -y wrk" >&2; exit 2; }
. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port, start_mock_and_key

start_mock_and_key "$MOCK_PORT"

cat >"$WORK/notify.lua" <<LUA
-- Each request: one event of its own, to one pushkey of the pool (a 32-byte APNs token in hex).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local counter = 0
local thread_id = 0
function setup(thread) thread:set("id", thread_id); thread_id = thread_id + 1 end
request = function()
    counter = counter + 1
    local key = string.format("%064x", (counter * 7919 + id * 104729) % $POOL)
    local body = '{"notification":{"event_id":"\$e' .. id .. '_' .. counter .. ':example.org","room_id":"!room:example.org",'
        .. '"type":"m.room.message","sender":"@ann:example.org","sender_display_name":"Ann","room_name":"Team",'
        .. '"content":{"msgtype":"m.text","body":"hello"},"counts":{"unread":2},'
        .. '"devices":[{"app_id":"com.example.chat.ios","pushkey":"' .. key .. '","pushkey_ts":1700000000}]}}'
    return wrk.format(nil, nil, nil, body)
end
done = function(summary, latency, requests)
    io.write(string.format("RESULT requests=%d seconds=%.2f non2xx=%d errors=%d p50=%.1fms p99=%.1fms\n",
        summary.requests, summary.duration / 1e6, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
        latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
LUA

run_case() {  # NAME [serve flags…]
    local name=$1; shift
    rm -f "$WORK"/matrix.db*
    cat >"$WORK/herald.json" <<JSON
{ "listen": "127.0.0.1:$API_PORT", "database": "sqlite:$WORK/matrix.db",
  "apps": [ { "id": "chat",
              "apns": { "topic": "com.example.chat", "environment": "https://127.0.0.1:$MOCK_PORT", "caFile": "$WORK/ca.pem",
                        "authKey": { "file": "$WORK/AuthKey_BENCHKEY01.p8", "keyID": "BENCHKEY01", "teamID": "BENCHTEAM1" } },
              "matrix": { "appIds": { "com.example.chat.ios": "apns" } } } ],
  "apiKeys": [ { "name": "bench", "sha256": "$DIGEST", "apps": ["chat"] } ] }
JSON
    "$HERALD" serve --config "$WORK/herald.json" "$@" >"$WORK/serve-$name.log" 2>&1 &
    local serve=$!
    PIDS+=($serve)
    wait_for_port "$API_PORT" 300
    local before
    before=$(awk '{print $14 + $15}' /proc/$serve/stat)
    local perf_pid=""
    if [ -n "${PERF:-}" ]; then perf record -F 499 -g -p "$serve" -o "$PERF-$name.data" >/dev/null 2>&1 & perf_pid=$!; fi
    local result
    result=$(wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s "$WORK/notify.lua" "http://127.0.0.1:$API_PORT/_matrix/push/v1/notify" | grep '^RESULT')
    local after
    after=$(awk '{print $14 + $15}' /proc/$serve/stat)
    if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; fi
    kill "$serve"; wait "$serve" 2>/dev/null || true
    local requests seconds
    requests=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$result")
    seconds=$(sed -E 's/.*seconds=([0-9.]+).*/\1/' <<<"$result")
    local ticks
    ticks=$(getconf CLK_TCK)
    python3 - "$name" "$requests" "$seconds" "$((after - before))" "$ticks" "$result" <<'PY'
import sys
name, requests, seconds, cpu, ticks, result = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
rate = requests / seconds
print(f"{name:9} {rate:8.0f} notify requests/s ({requests} in {seconds:.1f} s); herald serve CPU {1e6 * cpu / ticks / max(requests, 1):.0f} µs a request; {result.split(' ', 1)[1]}")
PY
}

echo "herald: $HERALD; $SECONDS_RUN s a case, $CONNECTIONS connections, $POOL pushkeys; cores: $(nproc)"
run_case api-only --api-only
run_case full
