#!/usr/bin/env bash
# `herald serve` against the client alone, side by side in one run on this machine:
#   1. broadcast: COUNT devices imported over HTTP, one notification to all of them, timed from
#      the POST to `done`; and `herald bench` sending COUNT straight to the same mock right before
#      and right after it. Ratio to the mean of those two.
#   2. the gateway's peak memory (VmHWM) over that broadcast.
#   3. single-token latency: notifications to one token at RATE/s for 10 s, each timed by the
#      gateway's own clock from stored (`createdAt`, just before the 202) to done (`finishedAt`,
#      the mock's answer recorded): an upper bound on the time to the mock's receipt. Also the
#      p99 of the POST itself, as the caller sees it.
# On SQLite (embedded) by default; with POSTGRES=postgres://USER@HOST:PORT/DB also on that
# database with one process and with two (the second `--workers-only`), and with one process
# for a skewed registry (every token in one sixteenth of the token space: its first hex digit 0).
# SKIP_SKEWED=1 leaves out the skewed case on SQLite (a 10 M run takes minutes a case).
# ROUNDS=N runs every case N times and ends with each case's median (see the rounds below).
# Each PostgreSQL case runs on a database of its own, made for it and dropped after it (with psql,
# on the server of POSTGRES, whose user needs CREATEDB): as a new user's. A database reused from
# run to run holds every earlier import's index churn: re-registering the same 300,000 tokens
# again and again grew `devices_hash` to 2.6 times its fresh size here, and the broadcast's range
# reads with it. REUSE_POSTGRES=1 runs on POSTGRES (and POSTGRES_BEFORE) as they are instead.
# ONLY_IMPORT=1: each case only imports its devices (its rate and CPU per device), no broadcast.
# PERF_IMPORT=PREFIX: a profile of each import, as PERF gives of each broadcast (below).
# WORKERS and BATCH set the gateway's workers.count (default 4) and workers.batchSize (default: the build's).
# Each broadcast line also gives the mock's CPU per notification and how busy the machine's cores
# were: at ~90 % or more the run is bound by CPU, and the ratio is the ratio of CPU per notification.
# At the end, each case's gateway CPU ÷ the mock's over the same broadcast: steadier than the
# rates when the machine's speed drifts.
# Usage: scripts/bench-gateway.sh [COUNT] [RATE]. Needs python3 and openssl (and psql for PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-1000000}
RATE=${2:-200}
MOCK_PORT=18544
API_PORT=18580
API_PORT2=18581

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port, start_mock_and_key

start_mock_and_key "$MOCK_PORT"  # $KEY, $DIGEST, $WORK/ca.pem, $WORK/AuthKey_BENCHKEY01.p8
BATCH_FIELD=${BATCH:+, \"batchSize\": $BATCH}  # unset: each build's own default
config() {  # DATABASE PORT
    cat <<EOF
{ "listen": "127.0.0.1:$2", "database": "$1", "workers": { "count": ${WORKERS:-4}$BATCH_FIELD },
  "apps": [ { "id": "bench", "topic": "com.example.herald", "environment": "https://127.0.0.1:$MOCK_PORT", "caFile": "$WORK/ca.pem",
              "authKey": { "file": "$WORK/AuthKey_BENCHKEY01.p8", "keyID": "BENCHKEY01", "teamID": "BENCHTEAM1" } },
            { "id": "skewed", "topic": "com.example.herald", "environment": "https://127.0.0.1:$MOCK_PORT", "caFile": "$WORK/ca.pem",
              "authKey": { "file": "$WORK/AuthKey_BENCHKEY01.p8", "keyID": "BENCHKEY01", "teamID": "BENCHTEAM1" } } ],
  "apiKeys": [ { "name": "bench", "sha256": "$DIGEST", "apps": ["bench", "skewed"] } ] }
EOF
}

serve() {  # DATABASE PORT [ARGS...]; sets SERVE_PID
    local database=$1 port=$2
    shift 2
    config "$database" "$port" >"$WORK/herald-$port.json"
    "$HERALD" serve --config "$WORK/herald-$port.json" --log-level warning "$@" >"$WORK/serve-$port.log" 2>&1 &
    SERVE_PID=$!
    PIDS+=($SERVE_PID)
    wait_for_port "$port" 300 && return
    if [ "${*:-}" != "--workers-only" ]; then echo "herald serve did not start:"; cat "$WORK/serve-$port.log"; exit 1; fi
}

# The HTTP side: import, broadcast, latency. Prints "rate" or "p50 p99".
cat >"$WORK/drive.py" <<'EOF'
import hashlib, http.client, json, os, sys, time
port, key, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
app = os.environ.get("APP", "bench")
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
def connect(): return http.client.HTTPConnection("127.0.0.1", port, timeout=600)
def call(c, method, path, body=None, extra={}):
    c.request(method, path, body=body, headers={**headers, **extra})
    r = c.getresponse(); data = r.read()
    return r.status, (json.loads(data) if data else None)
def token(n):
    digest = hashlib.sha256(b"bench device %d" % n).hexdigest()
    return "0" + digest[1:] if app == "skewed" else digest
c = connect()
if mode in ("import", "write-import"):
    # The body is written to a file first (once per registry), then sent from it: the import is
    # timed from the request's first byte to its answer, and the client's own hashing is not in it.
    count, path = int(sys.argv[4]), sys.argv[5]
    if not os.path.exists(path):
        with open(path + ".part", "w") as f:
            for start in range(0, count, 10000):
                f.write("".join('{"token":"%s"}\n' % token(n) for n in range(start, min(count, start + 10000))))
        os.rename(path + ".part", path)
    if mode == "write-import": sys.exit(0)
    def chunks():
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk: return
                yield chunk
    start = time.monotonic()
    c.request("POST", "/v1/apps/%s/devices" % app, body=chunks(), headers={**headers, "Content-Type": "application/x-ndjson", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    r = c.getresponse(); report = json.loads(r.read())
    elapsed = time.monotonic() - start
    assert r.status == 200 and report["upserted"] == count, report
    print("%.2f %.0f" % (elapsed, count / elapsed))
elif mode == "broadcast":
    start = time.monotonic()
    status, queued = call(c, "POST", "/v1/apps/%s/notifications" % app, json.dumps({"to": {"all": True}, "payload": {"aps": {"alert": "Herald benchmark: a short alert body of about one hundred bytes."}}}))
    assert status == 202, queued
    while True:
        _, n = call(c, "GET", "/v1/notifications/" + queued["id"])
        if n["status"] == "done": break
        time.sleep(0.05)
    elapsed = time.monotonic() - start
    assert n["accepted"] == n["targeted"], n
    print("%.0f" % (n["accepted"] / elapsed))
elif mode == "latency":
    # Each notification's own times: createdAt (stored, just before the 202) to finishedAt (the
    # mock's answer recorded). No polling: a poller's own delays would count as latency.
    import datetime
    rate, seconds = int(sys.argv[4]), 10
    ids, posts = [], []
    t0 = time.monotonic()
    for i in range(rate * seconds):
        while time.monotonic() < t0 + i / rate: time.sleep(0.0005)
        sent = time.monotonic()
        status, queued = call(c, "POST", "/v1/apps/%s/notifications" % app, json.dumps({"to": {"tokens": [token(i % 1000)]}, "payload": {"aps": {"alert": "ping %d" % i}}}))
        assert status == 202, queued
        posts.append(time.monotonic() - sent); ids.append(queued["id"])
    parse = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    latencies = []
    for ident in ids:
        for _ in range(1000):
            _, n = call(c, "GET", "/v1/notifications/" + ident)
            if n["status"] == "done": break
            time.sleep(0.01)
        assert n["status"] == "done" and n["accepted"] == 1, n
        latencies.append((parse(n["finishedAt"]) - parse(n["createdAt"])).total_seconds())
    pick = lambda values, q: sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000
    print("%.1f %.1f %.1f" % (pick(latencies, 0.5), pick(latencies, 0.99), pick(posts, 0.99)))
EOF

drive() { python3 "$WORK/drive.py" "$@"; }
hwm() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }  # user + system CPU, in clock ticks
# PostgreSQL's processes on this machine (the server, its backends, autovacuum, WAL writer...):
# "PID TICKS" each, to charge the database its CPU over a broadcast. A backend that exits
# during it is not counted; the gateway's pool keeps its connections open.
database_ticks() {
    for stat in /proc/[0-9]*/stat; do
        awk '$2 == "(postgres)" { print $1, $14 + $15 }' "$stat"
    done 2>/dev/null
    # A process listed by the glob may be gone when its file is read (the glob's own short-lived
    # neighbours): its awk fails, and when it came last the loop's status ended the script (set -e).
    return 0
}
database_per_notification() {  # BEFORE (database_ticks output): µs per notification of COUNT since then
    python3 - "$1" "$(database_ticks)" "$COUNT" "$(getconf CLK_TCK)" <<'PY'
import sys
def load(text): return dict(line.split() for line in text.splitlines() if line.strip())
before, after = load(sys.argv[1]), load(sys.argv[2])
ticks = sum(int(t) - int(before.get(pid, 0)) for pid, t in after.items())
print("%.1f" % (ticks * 1e6 / int(sys.argv[4]) / int(sys.argv[3])))
PY
}
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; }  # the machine's busy and idle ticks
busy_percent() {  # "BUSY IDLE" before: the share of all cores busy since then
    local before=($1) now
    now=($(busy))
    python3 -c "b = ${now[0]} - ${before[0]}; i = ${now[1]} - ${before[1]}; print('%.0f' % (100 * b / max(1, b + i)))"
}
per_notification() {  # PID TICKS-BEFORE: its CPU since then, in µs per notification of COUNT
    python3 -c "print('%.1f' % (($(ticks "$1") - $2) * 1e6 / $(getconf CLK_TCK) / $COUNT))"
}
declare -A CPU_US MOCK_US IMPORTS
# THREADS=1: each broadcast also prints the gateway's CPU by thread name (the event loops of the
# APNs connections, Swift's cooperative pool, SQLite's thread: a dispatch queue's worker,
# `-qos.overcommit`; SGLTN-TP, NIO's thread pool, before it), in µs per notification, and its
# context switches per 1000 notifications, as each direct send does its own, with its CPU by
# thread (a build older than `context_switches` in `herald bench --output json` prints none).
thread_ticks() {  # PID: "NAME TICKS" per thread
    for task in /proc/$1/task/*; do
        printf '%s %s\n' "$(tr ' ' _ <"$task/comm")" "$(awk '{ print $14 + $15 }' "$task/stat")"
    done 2>/dev/null
}
# The process's context switches so far (voluntary and not, over its threads, those alive now).
switches() { cat /proc/$1/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }
threads_report() {  # BEFORE AFTER (thread_ticks outputs)
    python3 - "$1" "$2" "$COUNT" "$(getconf CLK_TCK)" <<'PY'
import collections, re, sys
def load(text):
    totals = collections.Counter()
    for line in text.splitlines():
        name, _, ticks = line.rpartition(" ")
        if ticks.isdigit():  # a thread that ended while it was read has none
            totals[re.sub(r"[-_#]?[0-9]+$", "", name)] += int(ticks)
    return totals
before, after = load(sys.argv[1]), load(sys.argv[2])
count, hz = int(sys.argv[3]), int(sys.argv[4])
for name, ticks in sorted(((n, after[n] - before.get(n, 0)) for n in after), key=lambda x: -x[1]):
    if ticks: print("    %-28s %.2f µs per notification" % (name, ticks * 1e6 / hz / count))
PY
}

run_gateway() {  # LABEL DATABASE [second process: yes]; APP=skewed for the skewed registry
    local label=$1 database=$2 second=${3:-}
    serve "$database" "$API_PORT"
    local first=$SERVE_PID
    if [ -n "$second" ]; then serve "$database" "$API_PORT2" --workers-only; fi
    local seconds import_rate
    # PERF_IMPORT=PREFIX: a profile of the gateway over its import's first PERF_SECONDS (4),
    # PREFIX-N.data as for PERF below (the import file is written before the request starts).
    if [ -n "${PERF_IMPORT:-}" ]; then
        PERF_IMPORT_RUN=$((${PERF_IMPORT_RUN:-0} + 1))
        echo "$label: profile of the import $PERF_IMPORT-$PERF_IMPORT_RUN.data"
        if [ ! -e "$WORK/import-${APP:-bench}-$COUNT.ndjson" ]; then
            drive "$API_PORT" "$KEY" write-import "$COUNT" "$WORK/import-${APP:-bench}-$COUNT.ndjson"
        fi
        perf record --call-graph "${PERF_GRAPH:-fp}" -o "$PERF_IMPORT-$PERF_IMPORT_RUN.data" -p "$first" -- sleep "${PERF_SECONDS:-4}" >/dev/null 2>&1 &
    fi
    local import_ticks
    import_ticks=$(ticks "$first")
    read -r seconds import_rate < <(drive "$API_PORT" "$KEY" import "$COUNT" "$WORK/import-${APP:-bench}-$COUNT.ndjson")
    echo "$label: import of $COUNT devices (NDJSON, one request): $seconds s, $import_rate/s, CPU $(per_notification "$first" "$import_ticks") µs per device, peak RSS so far $(hwm "$first") MiB"
    IMPORTS["$label"]=$import_rate
    if [ -n "${ONLY_IMPORT:-}" ]; then
        BROADCAST_RATE=0
        stop_gateway "$first" "$second"
        return
    fi
    local rate
    # The direct send right before the broadcast and right after it, and the case's ratios to the
    # mean of the two: on this machine the same `herald bench` moved from 118,000/s to 187,000/s
    # over one run (its CPU per notification from 7.8 to 5.7 µs), so only neighbours compare.
    direct "before $label"
    local direct_rate=$DIRECT_RATE direct_us=$DIRECT_US
    # PostgreSQL's processes and their CPU so far (none on SQLite).
    local database_before=""
    case $database in postgres*) database_before=$(database_ticks) ;; esac
    # PERF=PREFIX: a profile of the gateway's first PERF_SECONDS (4) of broadcasting (linux-perf), one
    # file per case: PREFIX-1.data, PREFIX-2.data… in the order the cases run (their labels say
    # which), and PREFIX-N-postgres.data of PostgreSQL's processes over the same seconds.
    if [ -n "${PERF:-}" ]; then
        PERF_RUN=$((${PERF_RUN:-0} + 1))
        echo "$label: profile $PERF-$PERF_RUN.data"
        # PERF_GRAPH=dwarf: call graphs unwound from stack copies (swift_release's callers, which
        # frame pointers lose); the default follows frame pointers, a far smaller file.
        # PERF_EVENT=sched:sched_switch: where the gateway's threads sleep and are switched out,
        # with their stacks, instead of where its CPU goes.
        perf record ${PERF_EVENT:+-e "$PERF_EVENT"} --call-graph "${PERF_GRAPH:-fp}" -o "$PERF-$PERF_RUN.data" -p "$first" -- sleep "${PERF_SECONDS:-4}" >/dev/null 2>&1 &
        if [ -n "$database_before" ]; then
            echo "$label: PostgreSQL's profile $PERF-$PERF_RUN-postgres.data"
            perf record --call-graph "${PERF_GRAPH:-fp}" -o "$PERF-$PERF_RUN-postgres.data" -p "$(awk '{ print $1 }' <<<"$database_before" | paste -sd,)" -- sleep "${PERF_SECONDS:-4}" >/dev/null 2>&1 &
        fi
    fi
    local before_ticks before_mock
    before_ticks=$(ticks "$first")
    before_mock=$(ticks "$MOCK_PID")
    local machine
    machine=$(busy)
    local threads_before=""
    local switches_before=""
    if [ -n "${THREADS:-}" ]; then threads_before=$(thread_ticks "$first"); switches_before=$(switches "$first"); fi
    rate=$(drive "$API_PORT" "$KEY" broadcast)
    if [ -n "${THREADS:-}" ]; then
        echo "$label: the gateway's CPU by thread:"
        threads_report "$threads_before" "$(thread_ticks "$first")"
        echo "    context switches             $(python3 -c "print('%.1f' % (($(switches "$first") - $switches_before) * 1000 / $COUNT))") per 1000 notifications"
    fi
    machine=$(busy_percent "$machine")
    local us mock_us
    us=$(per_notification "$first" "$before_ticks")
    mock_us=$(per_notification "$MOCK_PID" "$before_mock")
    CPU_US["$label"]=$us
    MOCK_US["$label"]=$mock_us
    local database_us=""
    if [ -n "$database_before" ]; then database_us="; PostgreSQL $(database_per_notification "$database_before") µs"; fi
    echo "$label: broadcast of $COUNT: $rate/s, peak RSS $(hwm "$first") MiB, CPU $us µs per notification (this process; the mock $mock_us µs$database_us; all cores $machine % busy)"
    BROADCAST_RATE=$rate
    direct "after $label"
    DIRECTS["$label"]=$(python3 -c "print('%.0f' % (($direct_rate + $DIRECT_RATE) / 2))")
    DIRECT_CPU["$label"]=$(python3 -c "print('%.2f' % (($direct_us + $DIRECT_US) / 2))")
    if [ -z "$second" ] && [ "${APP:-bench}" = bench ]; then
        read -r p50 p99 post99 < <(drive "$API_PORT" "$KEY" latency "$RATE")
        echo "$label: single token at $RATE/s for 10 s: stored to answered p50 ${p50} ms, p99 ${p99} ms; POST answered p99 ${post99} ms"
    fi
    stop_gateway "$first" "$second"
}

stop_gateway() {  # FIRST-PID SECOND ("yes": the second process is $SERVE_PID)
    kill "$1" ${2:+$SERVE_PID} 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    if [ -n "$2" ]; then wait "$SERVE_PID" 2>/dev/null || true; fi
}

# Order matters on PostgreSQL: the second run of a pair comes after the first's writes (its
# checkpoints, its dead rows). An A/A run of one build measured the second 19 % (2 processes) and
# 25 % (skewed) lower. Run the comparison again with HERALD and HERALD_BEFORE swapped before
# believing a difference of that size.
# Each case with HERALD_BEFORE (another build of herald, e.g. the commit before a change) too,
# right before it, on a database of its own (a fresh one on PostgreSQL; POSTGRES_BEFORE with
# REUSE_POSTGRES=1): "before" and "after" side by side in one run. Prints each case's rate and its ratio to the direct send.
declare -A RATES DIRECTS DIRECT_CPU
case_() {  # LABEL DATABASE BEFORE-DATABASE [second process: yes]
    if [ -n "${HERALD_BEFORE:-}" ]; then
        local after=$HERALD
        HERALD=$HERALD_BEFORE
        fresh "${3:-$2}"
        run_gateway "before: $1" "$FRESH_URL" "${4:-}"
        RATES["before: $1"]=$BROADCAST_RATE
        HERALD=$after
        forget_fresh
    fi
    fresh "$2"
    run_gateway "$1" "$FRESH_URL" "${4:-}"
    RATES["$1"]=$BROADCAST_RATE
    forget_fresh
}


# `herald bench` straight to the mock; sets DIRECT_RATE and DIRECT_US and prints them as WHEN.
direct() {  # WHEN
    local before_mock machine result
    before_mock=$(ticks "$MOCK_PID")
    machine=$(busy)
    # Each notification to a device of its own, as the broadcast's are (a build older than
    # --devices sends to 1,024 in turn; the rate and CPU were the same either way here).
    local devices=()
    if "$HERALD" bench client --help 2>/dev/null | grep -q -- --devices; then devices=(--devices "$COUNT"); fi
    result=$("$HERALD" bench client --host "https://127.0.0.1:$MOCK_PORT" --ca-file "$WORK/ca.pem" --count "$COUNT" "${devices[@]}" \
        --auth-key "$WORK/AuthKey_BENCHKEY01.p8" --key-id BENCHKEY01 --team-id BENCHTEAM1 --output json)
    # The rate, the CPU per notification, and (THREADS=1, a build that reports them) the context
    # switches and the CPU by thread, as the gateway's.
    local switches threads
    IFS=$'\t' read -r DIRECT_RATE DIRECT_US switches threads < <(printf '%s' "$result" | python3 -c "
import json, sys
d = json.load(sys.stdin)
threads = '${THREADS:-}' != ''
switches = ', %.1f context switches per 1000' % (d['context_switches'] * 1000 / $COUNT) if threads and 'context_switches' in d else ''
by_thread = '; by thread: ' + ', '.join('%s %.2f' % (name, seconds * 1e6 / $COUNT) for name, seconds in sorted(d['cpu_seconds_by_thread'].items(), key=lambda x: -x[1]) if seconds > 0) if threads and 'cpu_seconds_by_thread' in d else ''
print('%.0f\t%.1f\t%s\t%s' % (d['rate'], d['cpu_seconds'] * 1e6 / $COUNT, switches, by_thread))")
    echo "herald bench, straight to the mock ($1): $DIRECT_RATE/s, CPU $DIRECT_US µs per notification$switches$threads (the mock $(per_notification "$MOCK_PID" "$before_mock") µs; all cores $(busy_percent "$machine") % busy)"
}

# ROUNDS=N: every case N times over (each PostgreSQL round on fresh databases), rounds after
# one another, and a summary of each case's ratios with their median. On this machine one case
# fell 20 % in a run and not in the next (the whole machine ran slow for its broadcast): one
# round decides nothing near a goal.
ROUNDS=${ROUNDS:-1}
for round in $(seq 1 "$ROUNDS"); do
    tag=""
    if [ "$ROUNDS" -gt 1 ]; then tag=" [round $round]"; fi
    if [ -z "${ONLY_POSTGRES:-}" ]; then
        case_ "serve (SQLite)$tag" "sqlite:$WORK/herald-$round.db" "sqlite:$WORK/before-$round.db"
        # The skewed registry in a database file of its own, as each PostgreSQL case has: in the
        # uniform case's file it would also carry that case's 300,000 devices and delivered
        # notifications, and measure them with the skew.
        [ -n "${SKIP_SKEWED:-}" ] || APP=skewed case_ "serve (SQLite, skewed tokens)$tag" "sqlite:$WORK/skewed-$round.db" "sqlite:$WORK/before-skewed-$round.db"
    fi
    if [ -n "${POSTGRES:-}" ]; then
        case_ "serve (PostgreSQL, 1 process)$tag" "$POSTGRES" "${POSTGRES_BEFORE:-}"
        case_ "serve (PostgreSQL, 2 processes)$tag" "$POSTGRES" "${POSTGRES_BEFORE:-}" yes
        APP=skewed case_ "serve (PostgreSQL, 1 process, skewed tokens)$tag" "$POSTGRES" "${POSTGRES_BEFORE:-}"
    fi
done

# Lines "LABEL [round N]: VALUE" on standard input: each label's median over its rounds, and the
# rounds' values, each printed with FORMAT and followed by UNIT.
medians() {  # FORMAT UNIT
    python3 -c '
import re, statistics, sys
form, unit = sys.argv[1], sys.argv[2]
rows = {}
for line in sys.stdin:
    label, value = line.rstrip().rsplit(": ", 1)
    rows.setdefault(re.sub(r" \[round [0-9]+\]", "", label), []).append(float(value))
for label, values in rows.items():
    print("median of %d rounds, %s: %s%s (%s)" % (len(values), label, form % statistics.median(values), unit, ", ".join(form % v for v in values)))
' "$1" "$2"
}

for label in "${!IMPORTS[@]}"; do echo "import rate, $label: ${IMPORTS[$label]}"; done | sort | tee "$WORK/import-rates.txt"
if [ -n "${ONLY_IMPORT:-}" ]; then
    if [ "$ROUNDS" -gt 1 ]; then medians '%.0f' '/s' <"$WORK/import-rates.txt"; fi
    exit 0
fi
for label in "${!CPU_US[@]}"; do
    python3 -c "print('CPU per notification, %s ÷ herald bench: %.2f' % ('$label', ${CPU_US[$label]} / ${DIRECT_CPU[$label]}))"
done | sort | tee "$WORK/cpu-ratios.txt"
for label in "${!RATES[@]}"; do
    python3 -c "print('ratio %s / bench: %.2f' % ('$label', ${RATES[$label]} / ${DIRECTS[$label]}))"
done | sort | tee "$WORK/rate-ratios.txt"
# The gateway's CPU ÷ the mock's over the same broadcast: the machine's speed divides out (in one
# run here the mock's own CPU per notification moved from 4.4 to 8.5 µs, and every rate with it),
# so a change to the gateway of a few percent shows here first. Two processes: the first's CPU only.
for label in "${!MOCK_US[@]}"; do
    python3 -c "print('gateway CPU ÷ the mock CPU, %s: %.2f' % ('$label', ${CPU_US[$label]} / max(${MOCK_US[$label]}, 0.1)))"
done | sort | tee "$WORK/mock-ratios.txt"
if [ "$ROUNDS" -gt 1 ]; then cat "$WORK/cpu-ratios.txt" "$WORK/rate-ratios.txt" "$WORK/mock-ratios.txt" | medians '%.2f' ''; fi
