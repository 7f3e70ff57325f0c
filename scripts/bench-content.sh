#!/usr/bin/env bash
# A templated, screened broadcast against a plain one, side by side in one run of `herald serve`:
# COUNT devices imported over HTTP (one NDJSON request), each with a user `u<n>` and a locale
# cycling through ten languages (en de fr es pt it nl sv pl ja; one device in five of a language
# in a regional form: en-GB, de-AT, fr_CA, pt_BR…), and 1 % of the users (u0, u100, u200…)
# opted out of the app's commercial category `marketing` (PUT …/users/{user}/preferences, at most
# OPTOUT_CONCURRENCY (16) requests at a time). Then, alternating on the same gateway:
#   plain, content, plain, content, plain   (ROUNDS content broadcasts, default 2, between ROUNDS+1 plain)
#   plain:   {"to": {"all": true}, "payload": {"aps": {"alert": "plain"}}}
#   content: {"to": {"all": true}, "template": "promo", "data": {"offer": "20% off"}, "category": "marketing"}
#            (a 10-language template; `marketing` has two caps, 10 per 10 minutes and 50 a day:
#            high enough that nobody is capped in a run, but counted for every user; CAPS='[…]'
#            sets others, CAPS='[]' none)
# each timed from the POST to `done`, with the serve process's CPU (utime + stime) over it.
# Per broadcast: devices/s (targeted devices, opted-out ones included, ÷ seconds) and gateway CPU
# µs per device; per content broadcast, its ratio to the mean of the plain ones right before and
# after it (rate and CPU). Each content broadcast is checked: accepted + optedOut = COUNT,
# optedOut = the users opted out, capped = 0, nothing pending, failed or rejected; a plain one:
# accepted = COUNT.
# The mock keeps no per-text statistics: what it received is checked by its count of accepted
# notifications (printed when it stops, at the end of each case: it must equal the sum of every
# broadcast's `accepted`), and the rendered texts by the template's preview route for a few
# locales (the gateway's own renderer, not the mock's view of the wire).
# On SQLite by default; with POSTGRES=postgres://USER@HOST:PORT/DB also on PostgreSQL with one
# process, on a database made for the case and dropped after it (see bench-common.sh: `fresh`).
# ONLY_POSTGRES=1 skips SQLite. WORKERS and BATCH as in bench-gateway.sh.
# PERF=PREFIX: after the rounds, one more content broadcast (not in the table) recorded with
# `perf record -g` on the serve process for its whole length: PREFIX-1.data, PREFIX-2.data… per case,
# and the top PERF_TOP (15) symbols by self time printed.
# Usage: scripts/bench-content.sh [COUNT]. Needs python3 and openssl (and psql for PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-300000}
ROUNDS=${ROUNDS:-2}
DEFAULT_CAPS='[ { "count": 10, "windowSeconds": 600 }, { "count": 50, "windowSeconds": 86400 } ]'
CAPS_JSON=${CAPS:-$DEFAULT_CAPS}
OPTOUT_CONCURRENCY=${OPTOUT_CONCURRENCY:-16}
MOCK_PORT=18744
API_PORT=18780

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port, start_mock_and_key, fresh

# PIDs ended on purpose leave PIDS: the cleanup kills only processes still ours.
forget_pid() {  # PID
    local kept=() pid
    for pid in "${PIDS[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
    PIDS=("${kept[@]}")
}

BATCH_FIELD=${BATCH:+, \"batchSize\": $BATCH}
config() {  # DATABASE PORT
    cat <<EOF
{ "listen": "127.0.0.1:$2", "database": "$1", "workers": { "count": ${WORKERS:-4}$BATCH_FIELD },
  "limits": { "requestsPerSecondPerKey": 100000, "requestBurstPerKey": 100000 },
  "apps": [ { "id": "bench", "topic": "com.example.herald", "environment": "https://127.0.0.1:$MOCK_PORT", "caFile": "$WORK/ca.pem",
              "authKey": { "file": "$WORK/AuthKey_BENCHKEY01.p8", "keyID": "BENCHKEY01", "teamID": "BENCHTEAM1" },
              "defaultLanguage": "en",
              "categories": { "marketing": { "commercial": true,
                                             "caps": $CAPS_JSON } } } ],
  "apiKeys": [ { "name": "bench", "sha256": "$DIGEST", "apps": ["bench"] } ] }
EOF
}

serve() {  # DATABASE; sets SERVE_PID
    config "$1" "$API_PORT" >"$WORK/herald.json"
    "$HERALD" serve --config "$WORK/herald.json" --log-level warning >"$WORK/serve.log" 2>&1 &
    SERVE_PID=$!
    PIDS+=($SERVE_PID)
    wait_for_port "$API_PORT" 300 || { echo "herald serve did not start:"; cat "$WORK/serve.log"; exit 1; }
}

cat >"$WORK/drive.py" <<'EOF'
import concurrent.futures, hashlib, http.client, json, os, sys, time, urllib.parse
port, key, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
HZ = os.sysconf("SC_CLK_TCK")
LANGUAGES = ["en", "de", "fr", "es", "pt", "it", "nl", "sv", "pl", "ja"]
REGIONAL = {"en": "en-GB", "de": "de-AT", "fr": "fr_CA", "es": "es-MX", "pt": "pt_BR",
            "it": "it-CH", "nl": "nl_BE", "sv": "sv-FI", "pl": "pl-PL", "ja": "ja_JP"}
def connect(): return http.client.HTTPConnection("127.0.0.1", port, timeout=600)
def call(c, method, path, body=None):
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse(); data = r.read()
    return r.status, (json.loads(data) if data else None)
def token(n): return hashlib.sha256(b"bench content device %d" % n).hexdigest()
def locale(n):
    language = LANGUAGES[n % 10]
    return REGIONAL[language] if (n // 10) % 5 == 0 else language   # evenly spread; 1 in 5 regional
def opted_out(n): return n % 100 == 0
def ticks(pid):
    with open("/proc/%s/stat" % pid) as f: fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime + stime

c = connect()
if mode == "import":
    count, path = int(sys.argv[4]), sys.argv[5]
    if not os.path.exists(path):
        with open(path + ".part", "w") as f:
            for start in range(0, count, 10000):
                f.write("".join('{"token":"%s","user":"u%d","locale":"%s"}\n' % (token(n), n, locale(n)) for n in range(start, min(count, start + 10000))))
        os.rename(path + ".part", path)
    def chunks():
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk: return
                yield chunk
    start = time.monotonic()
    c.request("POST", "/v1/apps/bench/devices", body=chunks(), headers={**headers, "Content-Type": "application/x-ndjson", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    r = c.getresponse(); report = json.loads(r.read())
    elapsed = time.monotonic() - start
    assert r.status == 200 and report["upserted"] == count, report
    print("%.2f %.0f" % (elapsed, count / elapsed))
elif mode == "optout":
    count, concurrency = int(sys.argv[4]), int(sys.argv[5])
    users = ["u%d" % n for n in range(count) if opted_out(n)]
    body = json.dumps({"categories": {"marketing": False}})
    def worker(part):
        own = connect()
        for user in part:
            for attempt in range(20):   # a 429 (the key's rate limit) is waited out, a few times
                status, answer = call(own, "PUT", "/v1/apps/bench/users/%s/preferences" % urllib.parse.quote(user, safe=""), body)
                if status != 429: break
                time.sleep(0.2)
            assert status == 200 and answer["categories"] == {"marketing": False}, (user, status, answer)
        return len(part)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        done = sum(pool.map(worker, [users[i::concurrency] for i in range(concurrency)]))
    elapsed = time.monotonic() - start
    status, check = call(c, "GET", "/v1/apps/bench/users/u0/preferences")
    assert status == 200 and check["categories"] == {"marketing": False}, check
    print("%d %.2f" % (done, elapsed))
elif mode == "template":
    def variant(title, body): return {"title": title, "body": body}
    template = {"defaultLanguage": "en", "data": {"offer": "{{offer}}"}, "variants": {
        "en": variant('Hi {{name | default: "there"}}, a deal for you', "Today only: {{offer}} on everything."),
        "de": variant('Hallo {{name | default: "du"}}, ein Angebot für dich', "Nur heute: {{offer}} auf alles."),
        "fr": variant('Bonjour {{name | default: "à vous"}}, une offre pour vous', "Aujourd'hui seulement : {{offer}} sur tout."),
        "es": variant('Hola {{name | default: "amigo"}}, una oferta para ti', "Solo hoy: {{offer}} en todo."),
        "pt": variant('Olá {{name | default: "você"}}, uma oferta para você', "Só hoje: {{offer}} em tudo."),
        "it": variant('Ciao {{name | default: "a te"}}, un\'offerta per te', "Solo oggi: {{offer}} su tutto."),
        "nl": variant('Hoi {{name | default: "daar"}}, een aanbieding voor jou', "Alleen vandaag: {{offer}} op alles."),
        "sv": variant('Hej {{name | default: "du"}}, ett erbjudande till dig', "Bara idag: {{offer}} på allt."),
        "pl": variant('Cześć {{name | default: "tobie"}}, oferta dla ciebie', "Tylko dziś: {{offer}} na wszystko."),
        "ja": variant('{{name | default: "お客様"}}へ特別オファー', "本日限り：全品{{offer}}"),
    }}
    # The route may still be being written: a 404 or 405 is retried (bounded) until it answers.
    for attempt in range(int(os.environ.get("TEMPLATE_TRIES", "60"))):
        status, answer = call(c, "PUT", "/v1/apps/bench/templates/promo", json.dumps(template))
        if status not in (404, 405): break
        print("PUT template: %d, retrying in 10 s" % status, file=sys.stderr); time.sleep(10)
    assert status == 200, (status, answer)
    print("version %s, languages %s" % (answer["version"], ",".join(answer["languages"])))
    for loc in ("en", "de-AT", "pt_BR", "ja", "ko"):
        status, preview = call(c, "POST", "/v1/apps/bench/templates/promo/preview", json.dumps({"locale": loc, "data": {"offer": "20% off"}}))
        assert status == 200, (status, preview)
        print("  preview %-6s -> %s: %s" % (loc, preview["language"], json.dumps(preview["payload"], ensure_ascii=False)))
elif mode == "broadcast":
    # KIND SERVE-PID MOCK-PID EXPECTED-OPTOUTS: one line of JSON with the timing, CPU and counts.
    kind, pid, mock, expected_out = sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7])
    body = {"to": {"all": True}, "payload": {"aps": {"alert": "plain"}}} if kind == "plain" else \
           {"to": {"all": True}, "template": "promo", "data": {"offer": "20% off"}, "category": "marketing"}
    ticks0, mock0, start = ticks(pid), ticks(mock), time.monotonic()
    status, queued = call(c, "POST", "/v1/apps/bench/notifications", json.dumps(body))
    assert status == 202, (status, queued)
    deadline = start + float(os.environ.get("BROADCAST_TIMEOUT", "1800"))
    while True:
        _, n = call(c, "GET", "/v1/notifications/" + queued["id"])
        if n["status"] in ("done", "cancelled") or time.monotonic() > deadline: break
        time.sleep(0.02)
    elapsed = time.monotonic() - start
    cpu, mock_cpu = (ticks(pid) - ticks0) / HZ, (ticks(mock) - mock0) / HZ
    targeted = n["targeted"]
    rejected = sum(n["rejected"].values())
    problems = []
    if n["status"] != "done": problems.append("status %s after %.0f s" % (n["status"], elapsed))
    if targeted != int(os.environ["COUNT"]): problems.append("targeted %d" % targeted)
    for field in ("pending", "failed", "capped", "digested"):
        if n.get(field, 0): problems.append("%s %d" % (field, n[field]))
    if rejected: problems.append("rejected %s" % n["rejected"])
    if kind == "content":
        if n["accepted"] + n["optedOut"] != int(os.environ["COUNT"]): problems.append("accepted + optedOut = %d" % (n["accepted"] + n["optedOut"]))
        if n["optedOut"] != expected_out: problems.append("optedOut %d, expected %d" % (n["optedOut"], expected_out))
    elif n["accepted"] != int(os.environ["COUNT"]) or n["optedOut"]: problems.append("accepted %d, optedOut %d" % (n["accepted"], n["optedOut"]))
    print(json.dumps({"seconds": elapsed, "rate": targeted / elapsed, "cpu_us": cpu * 1e6 / max(1, targeted), "mock_us": mock_cpu * 1e6 / max(1, n["accepted"]),
                      "accepted": n["accepted"], "optedOut": n["optedOut"], "capped": n["capped"], "pending": n["pending"],
                      "failed": n["failed"], "rejected": rejected, "status": n["status"], "problems": problems}))
EOF
drive() { python3 "$WORK/drive.py" "$API_PORT" "$KEY" "$@"; }
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

EXPECTED_OUT=$(python3 -c "print(len(range(0, $COUNT, 100)))")
SUMMARY=()
PROBLEMS=0
CASE_NUMBER=0

run_case() {  # LABEL DATABASE
    local label=$1 database=$2
    CASE_NUMBER=$((CASE_NUMBER + 1))
    start_mock_and_key "$MOCK_PORT"  # a mock per case: its accepted count is the case's
    serve "$database"
    # Each step's output taken whole first: a failed step ends the script (set -e).
    local out import_seconds import_rate optouts optout_seconds
    out=$(drive import "$COUNT" "$WORK/import-$COUNT.ndjson")
    read -r import_seconds import_rate <<<"$out"
    echo "$label: import of $COUNT devices (user, locale; NDJSON, one request): $import_seconds s, $import_rate/s"
    out=$(drive optout "$COUNT" "$OPTOUT_CONCURRENCY")
    read -r optouts optout_seconds <<<"$out"
    echo "$label: $optouts users opted out of marketing ($OPTOUT_CONCURRENCY requests at a time): $optout_seconds s"
    out=$(drive template)
    echo "$label: template promo stored, $out"

    local kinds=(plain) i
    for i in $(seq 1 "$ROUNDS"); do kinds+=(content plain); done
    local rates=() cpus=() results=() accepted_total=0 n=0 kind result problems
    for kind in "${kinds[@]}"; do
        n=$((n + 1))
        result=$(COUNT=$COUNT drive broadcast "$kind" "$SERVE_PID" "$MOCK_PID" "$EXPECTED_OUT")
        results+=("$result")
        rates+=("$(field "$result" rate)")
        cpus+=("$(field "$result" cpu_us)")
        accepted_total=$((accepted_total + $(field "$result" accepted)))
        problems=$(python3 -c 'import json, sys; p = json.loads(sys.argv[1])["problems"]; print("; ".join(p))' "$result")
        python3 -c '
import json, sys
r = json.loads(sys.argv[1]); label, n, kind, problems = sys.argv[2:6]
print("%s: #%s %-7s %7.2f s  %8.0f devices/s  gateway CPU %6.2f µs/device  (mock %.2f µs/notification)  accepted %d optedOut %d capped %d pending %d failed %d rejected %d  %s"
      % (label, n, kind, r["seconds"], r["rate"], r["cpu_us"], r["mock_us"], r["accepted"], r["optedOut"], r["capped"], r["pending"], r["failed"], r["rejected"],
         "CHECK FAILED: " + problems if problems else "check ok"))' "$result" "$label" "$n" "$kind" "$problems"
        [ -z "$problems" ] || PROBLEMS=$((PROBLEMS + 1))
    done

    if [ -n "${PERF:-}" ]; then
        local perf_pid
        perf record -g -o "$PERF-$CASE_NUMBER.data" -p "$SERVE_PID" >"$WORK/perf.log" 2>&1 &
        perf_pid=$!
        sleep 1
        result=$(COUNT=$COUNT drive broadcast content "$SERVE_PID" "$MOCK_PID" "$EXPECTED_OUT")
        accepted_total=$((accepted_total + $(field "$result" accepted)))
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        echo "$label: profiled content broadcast (perf record -g, not in the table): $(field "$result" seconds | cut -c1-6) s, problems: $(field "$result" problems)"
        echo "$label: top ${PERF_TOP:-15} symbols by self time ($PERF-$CASE_NUMBER.data):"
        # awk, not head: every stage reads to the end (no SIGPIPE, which pipefail would make fatal).
        perf report -i "$PERF-$CASE_NUMBER.data" --no-children --fields overhead,sym --stdio -g none 2>/dev/null \
            | grep -E '^ +[0-9]' | awk -v n="${PERF_TOP:-15}" 'NR <= n' \
            | { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else cat; fi; } | cut -c1-160 || true
    fi

    # The mock's own count, printed as it stops: every broadcast's accepted notifications.
    kill "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
    forget_pid "$SERVE_PID"
    kill "$MOCK_PID" 2>/dev/null || true
    wait "$MOCK_PID" 2>/dev/null || true
    forget_pid "$MOCK_PID"
    local mock_line mock_accepted
    mock_line=$(grep -a "mock APNs stopped" "$WORK/mock.log" || echo "no stop line")
    mock_accepted=$(sed -nE 's/.*stopped: ([0-9]+) accepted.*/\1/p' <<<"$mock_line")
    if [ "${mock_accepted:-x}" = "$accepted_total" ]; then
        echo "$label: mock check ok: $mock_line (the gateway's accepted, summed: $accepted_total)"
    else
        echo "$label: mock CHECK FAILED: $mock_line, the gateway's accepted summed: $accepted_total"
        PROBLEMS=$((PROBLEMS + 1))
    fi

    # The table: each broadcast, content ones with their ratio to the mean of their neighbours.
    n=0
    for kind in "${kinds[@]}"; do
        if [ "$kind" = content ]; then
            SUMMARY+=("$(python3 -c '
label, n, rate, cpu, rb, ra, cb, ca = __import__("sys").argv[1:9]
rate, cpu, rb, ra, cb, ca = map(float, (rate, cpu, rb, ra, cb, ca))
print("%-22s %-3s %-8s %10.0f %10.2f %12.2f %12.2f" % (label, n, "content", rate, cpu, rate / ((rb + ra) / 2), cpu / max(1e-9, (cb + ca) / 2)))' \
                "$label" "$((n + 1))" "${rates[$n]}" "${cpus[$n]}" "${rates[$((n - 1))]}" "${rates[$((n + 1))]}" "${cpus[$((n - 1))]}" "${cpus[$((n + 1))]}")")
        else
            SUMMARY+=("$(printf '%-22s %-3s %-8s %10.0f %10.2f %12s %12s' "$label" "$((n + 1))" plain "${rates[$n]}" "${cpus[$n]}" - -)")
        fi
        n=$((n + 1))
    done
}

if [ -z "${ONLY_POSTGRES:-}" ]; then
    run_case "SQLite" "sqlite:$WORK/herald.db"
fi
if [ -n "${POSTGRES:-}" ]; then
    fresh "$POSTGRES"
    run_case "PostgreSQL, 1 process" "$FRESH_URL"
    forget_fresh
fi

echo
echo "summary: $COUNT devices, $EXPECTED_OUT users opted out; ratio = content ÷ mean(plain before, plain after)"
printf '%-22s %-3s %-8s %10s %10s %12s %12s\n' case "#" kind devices/s "CPU µs/dev" "rate ratio" "CPU ratio"
printf '%s\n' "${SUMMARY[@]}"
if [ "$PROBLEMS" -gt 0 ]; then echo "$PROBLEMS check(s) FAILED (see above)"; exit 1; fi
echo "all checks ok"
