#!/usr/bin/env bash
# Receipts (docs/receipts.md) on one `herald serve`, side by side in one run, per database:
#   1. broadcast with receipts on vs off: two apps, `on` and `off`, identical but for
#      `"receipts": {"enabled": false}` on `off`, the same DEVICES devices imported into each (one
#      NDJSON request each); ROUNDS rounds of one broadcast to all of each, in the order
#      on off, off on, on off… (each app first in every other round); each timed from the POST
#      to `done`, with the serve process's CPU over it. Per broadcast: devices/s and gateway CPU
#      µs per device; per case the ratio of the means, on ÷ off (target ≥ 0.95). Each is checked:
#      accepted = DEVICES, nothing pending, failed or rejected; and the mock's count of accepted
#      notifications (printed when it stops, at the end of the case) = the sum of every
#      broadcast's `accepted` (part 3's too).
#   2. receipt ingestion into the last `on` broadcast: receipts made in Python from the spec
#      alone (bench_receipts.py: the layout, KeySpace's hash, HMAC-SHA256 with the app's newest
#      key read from the database), not by the gateway. First 5 in one batch (202, all taken,
#      then the notification's receipts.received = 5: the two implementations agree), then, at
#      CONCURRENCY (32) keep-alive connections, with no API key:
#        (a) BATCHED (200,000) devices' `received` in batches of 100,
#        (b) SINGLE (40,000) other devices' `received`, one request each,
#        (c) PACED (20,000) more devices' in batches of 100, and PACED more single, each at TARGET
#            (20,000) events/s, latency from when each request was due (not a closed loop's
#            queue: 32 connections × 100 events in flight make 3,200 waiting at any rate);
#        (d) every receipt of (a) to (c) again, in batches of 100: taken, counted no more;
#      events/s, request latency p50/p95/p99, the gateway's (and PostgreSQL's) CPU per event,
#      the generator's own CPU (in cores: near 1.0 it is the bound) and how busy the machine was.
#      Then receipts.received must be 5 + BATCHED + SINGLE + 2 PACED, before and after the replays.
#      Targets: ≥ 20,000 events/s and p99 ≤ 50 ms for (a) and (b); (c) keeps its rate, p99 ≤ 50 ms.
#      "other c" in the tables: cores busy outside the gateway, the mock, PostgreSQL and the
#      generator (other programs, kernel threads): a build beside the run shows there.
#   3. hostile: app `off`'s broadcast alone, then under a flood of forged receipts (random
#      48-character base64url ones, and real receipts with one bit flipped; batches of 100 and
#      single ones) at CONCURRENCY connections from a process of its own, which goes on while
#      200 keyed GET /v1/apps/off/summary are timed (and 200 without the flood, before it), then
#      alone again: the flooded rate ÷ the mean of its neighbours;
#      every flood answer must be 403 or 429 (never 5xx). Then one batch of 101 events (400) and
#      one body over 32 KiB (413), and receipts.received unchanged by the flood.
# Ends with the table. On SQLite by default; with POSTGRES=postgres://USER@HOST:PORT/DB also on
# PostgreSQL with one process, on a database made for the case and dropped after it (see
# bench-common.sh: `fresh`). ONLY_POSTGRES=1 skips SQLite.
# Env: HERALD (default /tmp/herald-rel), DEVICES (300000), ROUNDS (2), CONCURRENCY (32),
# BATCHED (200000, at most 2/3 of DEVICES), SINGLE (40000, at most DEVICES/5), TARGET (20000),
# PACED (20000, at most what is left of DEVICES, halved), WORKERS (4).
# PERF=1: the gateway recorded (perf record -g) over the last round's two broadcasts and over
# the single-event pass (b); the top symbols of each by self time printed, and for the
# broadcasts the receipt's own functions with what they call (e.g. ReceiptMaker.receipt(for:)).
# ANALYZE=1: on PostgreSQL, ANALYZE devices right after the imports. Without it, the receipt
# lookups that come before autovacuum's own ANALYZE (some seconds after a large import) may be
# planned without statistics: here, devices_hash (app, kind, hash, token) scanned on `app`
# alone with kind and hash as filters, seconds per group of 2,000 receipts.
# Needs python3 (numpy optional: hashes faster), openssl, and psql for PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1

HERALD=${HERALD:-/tmp/herald-rel}
DEVICES=${DEVICES:-300000}
ROUNDS=${ROUNDS:-2}
CONCURRENCY=${CONCURRENCY:-32}
BATCHED=${BATCHED:-$(python3 -c "print(min(200000, $DEVICES * 2 // 3 // 100 * 100))")}
SINGLE=${SINGLE:-$(python3 -c "print(min(40000, $DEVICES // 5))")}
TARGET=${TARGET:-20000}
PACED=${PACED:-$(python3 -c "print(max(0, min(20000, ($DEVICES - 5 - $BATCHED - $SINGLE) // 2 // 100 * 100)))")}
MOCK_PORT=18944
API_PORT=18980
HELPER=$PWD/scripts/bench_receipts.py

. scripts/bench-common.sh  # $WORK, PIDS and their cleanup, wait_for_port, start_mock_and_key, fresh

say() { echo "[$(date +%H:%M:%S)] $*"; }
forget_pid() {  # PID: ended on purpose, out of PIDS
    local kept=() pid
    for pid in "${PIDS[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
    PIDS=("${kept[@]}")
}
stop() {  # PID
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget_pid "$1"
}
field() {  # JSON KEY...: the value at that path
    python3 -c '
import json, sys
value = json.loads(sys.argv[1])
for key in sys.argv[2:]: value = value[key]
print(value)' "$@"
}
helper() { python3 "$HELPER" "$@"; }
perf_top() {  # PERF.DATA WHAT [PATTERN]: the top 25 symbols by self time; and with PATTERN, those
    # of its symbols that match it by time spent in them and what they call
    echo "$2"
    # awk, not head: every stage reads to the end (no SIGPIPE, which pipefail would make fatal).
    perf report -i "$1" --no-children --fields overhead,sym --stdio -g none 2>/dev/null \
        | grep -E '^ +[0-9]' | awk 'NR <= 25' \
        | { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else cat; fi; } | cut -c1-150 || true
    if [ -n "${3:-}" ]; then
        echo "  with what they call (children), those matching $3:"
        perf report -i "$1" --children --sort sym --stdio -g none 2>/dev/null \
            | grep -E '^ +[0-9]' | { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else cat; fi; } \
            | grep -E "$3" | awk 'NR <= 12' | cut -c1-150 || true
    fi
}

BATCH_FIELD=${BATCH:+, \"batchSize\": $BATCH}
config() {  # DATABASE
    local app='"topic": "com.example.herald", "environment": "https://127.0.0.1:'$MOCK_PORT'", "caFile": "'$WORK'/ca.pem",
              "authKey": { "file": "'$WORK'/AuthKey_BENCHKEY01.p8", "keyID": "BENCHKEY01", "teamID": "BENCHTEAM1" }'
    cat <<EOF
{ "listen": "127.0.0.1:$API_PORT", "database": "$1", "workers": { "count": ${WORKERS:-4}$BATCH_FIELD },
  "limits": { "requestsPerSecondPerKey": 100000, "requestBurstPerKey": 100000 },
  "apps": [ { "id": "on", $app },
            { "id": "off", $app, "receipts": { "enabled": false } } ],
  "apiKeys": [ { "name": "bench", "sha256": "$DIGEST", "apps": ["on", "off"] } ] }
EOF
}

RESULTS=()
CASE_NUMBER=0
run_case() {  # LABEL DATABASE
    local label=$1 database=$2 out
    CASE_NUMBER=$((CASE_NUMBER + 1))
    local result="$WORK/result-$CASE_NUMBER.json"
    start_mock_and_key "$MOCK_PORT"  # a mock per case: its accepted count is the case's
    config "$database" >"$WORK/herald.json"
    "$HERALD" serve --config "$WORK/herald.json" --log-level warning >"$WORK/serve-$CASE_NUMBER.log" 2>&1 &
    SERVE_PID=$!
    PIDS+=($SERVE_PID)
    wait_for_port "$API_PORT" 300 || { echo "herald serve did not start:"; cat "$WORK/serve-$CASE_NUMBER.log"; exit 1; }
    say "$label: herald serve $SERVE_PID, mock $MOCK_PID"

    local app
    for app in on off; do
        out=$(helper import "$API_PORT" "$KEY" "$app" "$DEVICES" "$WORK/import-$DEVICES.ndjson")
        say "$label: import of $DEVICES devices into $app: $(field "$out" seconds | cut -c1-5) s, $(field "$out" rate | cut -d. -f1)/s"
    done

    # ANALYZE=1 (PostgreSQL): the devices' statistics now, as autovacuum makes them some seconds
    # after a large import. Without them the first receipt lookups may take another plan (see
    # the header); by default the run shows what comes right after an import.
    if [ -n "${ANALYZE:-}" ]; then
        case $database in postgres*) psql -q -X "$database" -c "ANALYZE devices"; say "$label: ANALYZE devices done" ;; esac
    fi

    # 1. Broadcasts, on and off alternating, each app first in every other round.
    local broadcasts=() accepted_total=0 last_on="" round order
    for round in $(seq 1 "$ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then order="on off"; else order="off on"; fi
        for app in $order; do
            # PERF: the last round's broadcasts recorded.
            out=$(PERF_DATA=${PERF:+$([ "$round" = "$ROUNDS" ] && echo "$WORK/perf-$CASE_NUMBER-$app.data")} \
                helper broadcast "$API_PORT" "$KEY" "$app" "$DEVICES" "$SERVE_PID" "$MOCK_PID")
            broadcasts+=("$out")
            accepted_total=$((accepted_total + $(field "$out" accepted)))
            [ "$app" = off ] || last_on=$(field "$out" id)
            say "$label: round $round, broadcast to $app: $(python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print("%.2f s, %.0f devices/s, gateway CPU %.2f µs/device, %s" % (r["seconds"], r["rate"], r["cpu_us"], "; ".join(r["problems"]) or "check ok"))' "$out")"
        done
    done

    if [ -n "${PERF:-}" ]; then
        for app in on off; do
            perf_top "$WORK/perf-$CASE_NUMBER-$app.data" "$label: the gateway's top symbols by self time over round $ROUNDS's broadcast to $app:" \
                'Receipt|Base64URL|HMAC|SHA256|sha256|BatchNotifications|withReceipt|inserted|malloc|free'
        done
    fi

    # 2. Ingestion into the last `on` broadcast.
    say "$label: receipts into notification $last_on: 5, then $BATCHED in batches of 100, $SINGLE single, $PACED each at $TARGET/s, then all again (replays)"
    local ingest received
    ingest=$(PERF_DATA=${PERF:+$WORK/perf-$CASE_NUMBER.data} helper ingest "$API_PORT" "$KEY" "$last_on" on "$database" "$DEVICES" "$BATCHED" "$SINGLE" "$PACED" "$TARGET" "$CONCURRENCY" "$SERVE_PID")
    received=$(field "$ingest" received)
    say "$label: receipts.received = $received (expected $(field "$ingest" expected_received))"
    if [ -n "${PERF:-}" ]; then
        perf_top "$WORK/perf-$CASE_NUMBER.data" "$label: the gateway's top symbols by self time over the single-event pass (perf record -g):"
    fi

    # 3. The hostile flood, during app off's broadcast.
    say "$label: hostile: off's broadcast alone, then under a flood of forged receipts"
    local hostile
    hostile=$(helper hostile "$API_PORT" "$KEY" off "$DEVICES" "$last_on" on "$database" "$CONCURRENCY" "$SERVE_PID" "$MOCK_PID" "$received" "$WORK")
    accepted_total=$((accepted_total + $(field "$hostile" quiet accepted) + $(field "$hostile" flooded accepted) + $(field "$hostile" quiet_after accepted)))
    say "$label: off alone $(field "$hostile" quiet rate | cut -d. -f1)/s, under the flood $(field "$hostile" flooded rate | cut -d. -f1)/s, alone again $(field "$hostile" quiet_after rate | cut -d. -f1)/s; flood answers $(field "$hostile" flood statuses)"

    # The mock's own count, printed as it stops: every broadcast's accepted notifications.
    stop "$SERVE_PID"
    stop "$MOCK_PID"
    local mock_line mock_accepted mock_check
    mock_line=$(grep -a "mock APNs stopped" "$WORK/mock.log" || echo "no stop line")
    mock_accepted=$(sed -nE 's/.*stopped: ([0-9]+) accepted.*/\1/p' <<<"$mock_line")
    if [ "${mock_accepted:-x}" = "$accepted_total" ]; then
        mock_check="ok: mock accepted $mock_accepted = gateway's accepted, summed"
    else
        mock_check="FAILED: $mock_line; the gateway's accepted summed: $accepted_total"
    fi
    say "$label: mock check $mock_check"
    if grep -aqiE "error|critical" "$WORK/serve-$CASE_NUMBER.log"; then
        echo "$label: the gateway logged (warnings and above):"; grep -aiE "error|critical" "$WORK/serve-$CASE_NUMBER.log" | sort | uniq -c | sort -rn | head -5
    fi

    # Everything of the case, in one file for the table.
    python3 - "$result" "$label" "$DEVICES" "$ROUNDS" "$CONCURRENCY" "$mock_check" "$ingest" "$hostile" "${broadcasts[@]}" <<'PY'
import json, sys
path, label, devices, rounds, concurrency, mock_check, ingest, hostile = sys.argv[1:9]
broadcasts = [json.loads(b) for b in sys.argv[9:]]
ingest, hostile = json.loads(ingest), json.loads(hostile)
problems = ["broadcast %d (%s): %s" % (i, b["app"], "; ".join(b["problems"])) for i, b in enumerate(broadcasts, 1) if b["problems"]]
problems += ["ingestion: " + p for p in ingest["problems"]] + ["hostile: " + p for p in hostile["problems"]]
if not mock_check.startswith("ok"): problems.append("mock " + mock_check)
json.dump({"label": label, "devices": int(devices), "rounds": int(rounds), "concurrency": int(concurrency), "mock_check": mock_check,
           "broadcasts": broadcasts, "ingest": ingest, "hostile": hostile, "problems": problems}, open(path, "w"))
PY
    RESULTS+=("$result")
}

say "herald: $HERALD; $DEVICES devices per app, $ROUNDS round(s), $CONCURRENCY connections, $BATCHED batched + $SINGLE single + 2 × $PACED paced receipts"
# What else runs on the machine: every benchmark here shares its cores.
python3 -c '
import time
def busy():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6], v[3] + v[4]
b0, i0 = busy(); time.sleep(2); b1, i1 = busy()
print("machine before the run: %.0f %% of all cores busy over 2 s" % (100 * (b1 - b0) / max(1, b1 - b0 + i1 - i0)))'

if [ -z "${ONLY_POSTGRES:-}" ]; then
    run_case "SQLite" "sqlite:$WORK/herald.db"
fi
if [ -n "${POSTGRES:-}" ]; then
    fresh "$POSTGRES"
    run_case "PostgreSQL, 1 process" "$FRESH_URL"
    forget_fresh
fi
helper table "${RESULTS[@]}"
