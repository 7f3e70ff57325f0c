#!/usr/bin/env bash
# `herald serve` (SQLite) under hostile clients and a growing database, side by side in one run:
#   1. slowloris: SLOW connections from 127.0.0.2, each holding half a request head; how many the
#      gateway keeps (limits.maximumConnectionsPerAddress), how many it has closed after
#      requestHeadTimeout, and /healthz from 127.0.0.3 meanwhile (p50, p99, failures).
#   2. /metrics under a scrape flood: COUNT devices, one broadcast to all of them timed without
#      scrapes, then another with 200 scrapes a second throughout. Ratio.
#   3. retention: NOTES single-token notifications, finished, then purged once they pass
#      retentionSeconds (60 s, the least the file allows); rows purged per second and the longest
#      purge transaction, from the gateway's own log.
# Usage: scripts/bench-hostile.sh [COUNT] [SLOW] [NOTES]. Needs python3 and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-300000}
SLOW=${2:-530}
NOTES=${3:-20000}
MOCK_PORT=18644
API_PORT=18680

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port, start_mock_and_key
ulimit -n 4096 2>/dev/null || true

start_mock_and_key "$MOCK_PORT"  # $KEY, $DIGEST, $WORK/ca.pem, $WORK/AuthKey_BENCHKEY01.p8
cat >"$WORK/herald.json" <<EOF
{ "listen": "127.0.0.1:$API_PORT", "database": "sqlite:$WORK/herald.db",
  "apps": [ { "id": "bench", "topic": "com.example.herald", "environment": "https://127.0.0.1:$MOCK_PORT", "caFile": "$WORK/ca.pem",
              "authKey": { "file": "$WORK/AuthKey_BENCHKEY01.p8", "keyID": "BENCHKEY01", "teamID": "BENCHTEAM1" } } ],
  "apiKeys": [ { "name": "bench", "sha256": "$DIGEST", "apps": ["bench"] } ],
  "queue": { "retentionSeconds": 60 },
  "limits": { "requestsPerSecondPerKey": 1000000, "requestBurstPerKey": 1000000 },
  "housekeeping": { "purgeIntervalSeconds": 5 } }
EOF
"$HERALD" serve --config "$WORK/herald.json" --log-level info >"$WORK/serve.log" 2>&1 &
PIDS+=($!)
wait_for_port "$API_PORT" 300

cat >"$WORK/drive.py" <<'EOF'
import hashlib, http.client, json, socket, sys, threading, time
port, key, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
def connect(source="127.0.0.1"): return http.client.HTTPConnection("127.0.0.1", port, timeout=600, source_address=(source, 0))
def call(c, method, path, body=None, extra={}):
    c.request(method, path, body=body, headers={**headers, **extra})
    r = c.getresponse(); data = r.read()
    return r.status, (json.loads(data) if data else None)
def token(n): return hashlib.sha256(b"bench device %d" % n).hexdigest()
pick = lambda values, q: sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000
if mode == "slowloris":
    count = int(sys.argv[4])
    held = []
    for _ in range(count):
        s = socket.socket(); s.bind(("127.0.0.2", 0)); s.settimeout(5)
        try:
            s.connect(("127.0.0.1", port)); s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            held.append(s)
        except OSError:
            s.close()
    time.sleep(1)
    def alive(s):
        s.setblocking(False)
        try:
            return s.recv(1) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False
    kept = sum(1 for s in held if alive(s))
    latencies, failures = [], 0
    c = connect("127.0.0.3")
    for _ in range(200):
        start = time.monotonic()
        try:
            status, _ = call(c, "GET", "/healthz")
            if status != 200: failures += 1
        except Exception:
            failures += 1; c = connect("127.0.0.3")
        latencies.append(time.monotonic() - start)
    time.sleep(31)  # past requestHeadTimeout
    left = sum(1 for s in held if alive(s))
    print("%d %d %d %.1f %.1f %d" % (count, kept, left, pick(latencies, 0.5), pick(latencies, 0.99), failures))
elif mode == "import":
    count = int(sys.argv[4])
    def lines():
        for start in range(0, count, 10000):
            yield "".join('{"token":"%s"}\n' % token(n) for n in range(start, min(count, start + 10000))).encode()
    c = connect()
    c.request("POST", "/v1/apps/bench/devices", body=lines(), headers={**headers, "Content-Type": "application/x-ndjson", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    r = c.getresponse(); report = json.loads(r.read())
    assert r.status == 200 and report["upserted"] == count, report
elif mode == "broadcast":
    flood = sys.argv[4] == "flood"
    done, scrapes = threading.Event(), [0]
    def scraper():
        s = connect(); t0 = time.monotonic()
        while not done.is_set():
            s.request("GET", "/metrics"); s.getresponse().read(); scrapes[0] += 1
            while time.monotonic() < t0 + scrapes[0] / 200 and not done.is_set(): time.sleep(0.001)
    if flood: threading.Thread(target=scraper, daemon=True).start()
    c = connect(); start = time.monotonic()
    status, queued = call(c, "POST", "/v1/apps/bench/notifications", json.dumps({"to": {"all": True}, "payload": {"aps": {"alert": "Herald benchmark: a short alert body."}}}))
    assert status == 202, queued
    while True:
        _, n = call(c, "GET", "/v1/notifications/" + queued["id"])
        if n["status"] == "done": break
        time.sleep(0.05)
    elapsed = time.monotonic() - start; done.set()
    print("%.0f %.0f" % (n["accepted"] / elapsed, scrapes[0] / elapsed))
elif mode == "notes":
    count = int(sys.argv[4]); c = connect()
    for i in range(count):
        status, queued = call(c, "POST", "/v1/apps/bench/notifications", json.dumps({"to": {"tokens": [token(i % 1000)]}, "payload": {"aps": {"alert": "n"}}}))
        assert status == 202, queued
EOF
drive() { python3 "$WORK/drive.py" "$API_PORT" "$KEY" "$@"; }

read -r slow kept left p50 p99 failed < <(drive slowloris "$SLOW")
echo "slowloris: $slow half-sent heads from one address: $kept held after 1 s, $left after 31 s; /healthz from another address meanwhile p50 ${p50} ms, p99 ${p99} ms, $failed of 200 failed"

drive import "$COUNT"
read -r quiet _ < <(drive broadcast quiet)
read -r flooded scraped < <(drive broadcast flood)
echo "broadcast of $COUNT: $quiet/s without scrapes, $flooded/s with $scraped scrapes/s of /metrics"
python3 -c "print('ratio with / without the scrape flood: %.2f' % ($flooded / $quiet))"

started=$SECONDS
drive notes "$NOTES"
echo "queued $NOTES single-token notifications in $((SECONDS - started)) s; waiting for retention (60 s) and the purge"
for _ in $(seq 60); do
    sleep 5
    rows=$(grep 'purged' "$WORK/serve.log" | grep -o 'rows=[0-9]*' | awk -F= '{ s += $2 } END { print s + 0 }')
    [ "$rows" -ge $((2 * NOTES)) ] && break
done
grep 'purged' "$WORK/serve.log" | tail -5
