#!/usr/bin/env bash
# A mixed broadcast through `herald serve`, a third each of APNs tokens, browsers (Web Push
# subscriptions) and Android devices (FCM registration tokens), against the three clients sending
# the same numbers straight to the same mocks at the same time (`herald bench client`, `herald
# bench webpush` and `herald bench fcm`), side by side in one run on this machine, on SQLite. The
# mocks run in one `herald mock` process (APNs, Web Push checking VAPID and headers but not
# decrypting: --webpush-no-decrypt, and FCM). PLATFORMS=2 leaves FCM out (halves instead).
# Usage: scripts/bench-platforms-gateway.sh [COUNT]. Needs python3 and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-30000}
PLATFORMS=${PLATFORMS:-3}
PART=$((COUNT / PLATFORMS))
MOCK_PORT=18644
WEBPUSH_PORT=18645
FCM_PORT=18646
API_PORT=18680

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port

openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$WORK/AuthKey_BENCHKEY01.p8"
"$HERALD" webpush keygen --out "$WORK/vapid.pem" >"$WORK/keygen.log"
VAPID_PUBLIC=$(sed -n 's/^public key (applicationServerKey): //p' "$WORK/keygen.log")
"$HERALD" mock --port "$MOCK_PORT" --webpush-port "$WEBPUSH_PORT" --fcm-port "$FCM_PORT" --fcm-write-service-account "$WORK/sa.json" \
    --write-ca "$WORK/ca.pem" --webpush-no-decrypt --record-limit 0 >"$WORK/mock.log" 2>&1 &
PIDS+=($!)
wait_for_port "$MOCK_PORT" && wait_for_port "$WEBPUSH_PORT" && wait_for_port "$FCM_PORT"
FCM_FIELD=""
if [ "$PLATFORMS" = 3 ]; then
    FCM_FIELD=", \"fcm\": { \"serviceAccountFile\": \"$WORK/sa.json\", \"endpoint\": \"https://127.0.0.1:$FCM_PORT\", \"caFile\": \"$WORK/ca.pem\" }"
fi
KEY="hk_bench-$(openssl rand -hex 16)"
DIGEST=$(printf '%s' "$KEY" | openssl dgst -sha256 -r | cut -d' ' -f1)

cat >"$WORK/herald.json" <<EOF
{ "listen": "127.0.0.1:$API_PORT", "database": "sqlite:$WORK/bench.db", "workers": { "count": ${WORKERS:-4} },
  "apps": [ { "id": "bench", "topic": "com.example.herald", "environment": "https://127.0.0.1:$MOCK_PORT", "caFile": "$WORK/ca.pem",
              "authKey": { "file": "$WORK/AuthKey_BENCHKEY01.p8", "keyID": "BENCHKEY01", "teamID": "BENCHTEAM1" },
              "webPush": { "vapidKeyFile": "$WORK/vapid.pem", "subject": "mailto:bench@example.com", "defaultURL": "https://example.com/", "caFile": "$WORK/ca.pem", "allowPrivateAddresses": true }$FCM_FIELD } ],
  "apiKeys": [ { "name": "bench", "sha256": "$DIGEST", "apps": ["bench"] } ] }
EOF
"$HERALD" serve --config "$WORK/herald.json" --log-level warning >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
PIDS+=($SERVE_PID)
wait_for_port "$API_PORT" 300 || { echo "herald serve did not start:"; cat "$WORK/serve.log"; exit 1; }

# Registers PART APNs tokens (one import), PART browsers (each subscribed at the mock, then
# registered with the gateway) and, with 3 platforms, PART Android devices (one import), then
# broadcasts and prints the rate.
cat >"$WORK/drive.py" <<'EOF'
import hashlib, http.client, json, ssl, sys, time
api_port, web_port, key, half, ca, vapid, platforms = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6], int(sys.argv[7])
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
api = http.client.HTTPConnection("127.0.0.1", api_port, timeout=600)
context = ssl.create_default_context(cafile=ca)
web = http.client.HTTPSConnection("127.0.0.1", web_port, context=context, timeout=60)
def call(c, method, path, body=None, extra={}):
    c.request(method, path, body=body, headers={**headers, **extra})
    r = c.getresponse(); data = r.read()
    return r.status, (json.loads(data) if data else None)
lines = "".join('{"token":"%s"}\n' % hashlib.sha256(b"bench device %d" % n).hexdigest() for n in range(half))
if platforms == 3:
    lines += "".join('{"token":"bench%d:APA91b-%s","platform":"fcm"}\n' % (n, hashlib.sha256(b"android %d" % n).hexdigest()) for n in range(half))
status, report = call(api, "POST", "/v1/apps/bench/devices", lines, {"Content-Type": "application/x-ndjson"})
assert status == 200 and report["upserted"] == half * (2 if platforms == 3 else 1), report
for n in range(half):
    web.request("POST", "/subscribe", body=json.dumps({"applicationServerKey": vapid}), headers={"Content-Type": "application/json"})
    r = web.getresponse(); subscription = json.loads(r.read())
    assert r.status == 201, subscription
    status, device = call(api, "POST", "/v1/apps/bench/webpush/subscriptions", json.dumps(subscription))
    assert status == 201, device
start = time.monotonic()
status, queued = call(api, "POST", "/v1/apps/bench/notifications", json.dumps({"to": {"all": True}, "payload": {"aps": {"alert": "Herald benchmark: a short alert body of about one hundred bytes."}}}))
assert status == 202, queued
while True:
    _, n = call(api, "GET", "/v1/notifications/" + queued["id"])
    if n["status"] == "done": break
    time.sleep(0.05)
elapsed = time.monotonic() - start
assert n["accepted"] == n["targeted"] == platforms * half, n
print("%.0f" % (n["accepted"] / elapsed))
EOF
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
before=$(ticks "$SERVE_PID")
GATEWAY=$(python3 "$WORK/drive.py" "$API_PORT" "$WEBPUSH_PORT" "$KEY" "$PART" "$WORK/ca.pem" "$VAPID_PUBLIC" "$PLATFORMS") || { echo "the broadcast failed; herald serve said:"; grep -E "Fatal error|Crash|^[0-9]+ .* in |at /work" "$WORK/serve.log" | head -40; exit 1; }
echo "gateway, mixed broadcast of $((PART * PLATFORMS)) ($PART APNs, $PART browsers$([ "$PLATFORMS" = 3 ] && echo ", $PART Android devices")): $GATEWAY/s (CPU of herald serve over setup and broadcast: $(( ($(ticks "$SERVE_PID") - before) * 1000 / $(getconf CLK_TCK) )) ms)"
kill "$SERVE_PID" 2>/dev/null || true

# The same numbers straight to the same mocks, the clients at once.
start=$(date +%s.%N)
"$HERALD" bench client --host "https://127.0.0.1:$MOCK_PORT" --ca-file "$WORK/ca.pem" --count "$PART" \
    --auth-key "$WORK/AuthKey_BENCHKEY01.p8" --key-id BENCHKEY01 --team-id BENCHTEAM1 >"$WORK/apns.log" 2>&1 &
APNS=$!
FCM_RUN=""
if [ "$PLATFORMS" = 3 ]; then
    "$HERALD" bench fcm --mock "https://127.0.0.1:$FCM_PORT" --ca-file "$WORK/ca.pem" --service-account "$WORK/sa.json" --count "$PART" \
        --firebase-admin-count 0 --fcm-only >"$WORK/fcm.log" 2>&1 &
    FCM_RUN=$!
fi
"$HERALD" bench webpush --mock "https://127.0.0.1:$WEBPUSH_PORT" --ca-file "$WORK/ca.pem" --count "$PART" --subscriptions 100 --pywebpush-count 0 >"$WORK/webpush.log" 2>&1
wait "$APNS"
if [ -n "$FCM_RUN" ]; then wait "$FCM_RUN"; fi
DIRECT=$(python3 -c "import time; print('%.0f' % ($((PART * PLATFORMS)) / ($(date +%s.%N) - $start)))")
echo "direct, the clients at once: $DIRECT/s (APNs: $(grep '^rate' "$WORK/apns.log" | awk '{print $2}')/s, Web Push: $(grep '^rate' "$WORK/webpush.log" | awk '{print $2}')/s$([ -n "$FCM_RUN" ] && echo ", FCM: $(grep '^fcm' "$WORK/fcm.log" | awk '{print $4}')/s"), each in its own process)"
python3 -c "print('ratio gateway / direct: %.2f' % ($GATEWAY / $DIRECT))"
