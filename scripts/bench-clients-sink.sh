#!/usr/bin/env bash
# The three clients' own cost, against one sink that costs next to nothing: nginx on 127.0.0.1
# (TLS, HTTP/2, one worker on one core), answering APNs's POST /3/device/* with 200, FCM's
# messages:send with 200 and a message name, and Web Push's POST /push/* with 201. The mocks
# check what they receive, and two of them (Web Push's and FCM's, on Hummingbird) cost more per
# message than the clients: against them the clients' rates are the mocks'. Here each client
# runs pinned to the other core, one after another, and prints its rate and CPU per message;
# FCM's access token still comes from `herald mock --fcm-port` (once).
# Usage: scripts/bench-clients-sink.sh [COUNT]. Runs as root on a fresh machine (it installs
# nginx); needs python3 and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-50000}
NGINX_PORT=18543
MOCK_PORT=18547
FCM_PORT=18548
WEBPUSH_PORT=18549

if ! command -v nginx >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx
fi

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port

start_nginx_sink "$NGINX_PORT" "location /3/device/ { return 200; }
        location /v1/projects/ { default_type application/json; return 200 '{\"name\": \"projects/herald-mock/messages/0:1\"}'; }
        location /push/ { return 201; }" 1
# The mocks, for what a sink cannot do: FCM's access token, and the Web Push CA file the bench reads.
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$WORK/AuthKey_BENCHKEY01.p8"
"$HERALD" mock --port "$MOCK_PORT" --fcm-port "$FCM_PORT" --fcm-write-service-account "$WORK/sa.json" --webpush-port "$WEBPUSH_PORT" \
    --write-ca "$WORK/mock-ca.pem" --record-limit 0 >"$WORK/mock.log" 2>&1 &
PIDS+=($!)
wait_for_port "$NGINX_PORT" && wait_for_port "$FCM_PORT" && wait_for_port "$WEBPUSH_PORT"
cat "$WORK/cert.pem" "$WORK/mock-ca.pem" >"$WORK/trust.pem"

echo "each client on core 0, the sink (nginx, one worker) on core 1; $COUNT messages each"
taskset -c 0 "$HERALD" bench client --host "https://127.0.0.1:$NGINX_PORT" --ca-file "$WORK/cert.pem" --count "$COUNT" \
    --auth-key "$WORK/AuthKey_BENCHKEY01.p8" --key-id BENCHKEY01 --team-id BENCHTEAM1 >"$WORK/apns.log" 2>&1
APNS=$(awk '/^rate/ { print $2 }' "$WORK/apns.log")
echo "apns:     $APNS/s, $(awk -v n="$COUNT" '/^cpu/ && / s \(/ { printf "%.1f", $2 * 1e6 / n }' "$WORK/apns.log") µs per notification"
taskset -c 0 "$HERALD" bench fcm --mock "https://127.0.0.1:$FCM_PORT" --sink "https://127.0.0.1:$NGINX_PORT" --ca-file "$WORK/trust.pem" \
    --service-account "$WORK/sa.json" --count "$COUNT" --firebase-admin-count 0 --fcm-only >"$WORK/fcm.log" 2>&1
FCM=$(awk '/^fcm/ { print $4 }' "$WORK/fcm.log")
echo "fcm:      $FCM/s, $(awk '/^fcm/ { for (i = 1; i <= NF; i++) if ($i == "µs") print $(i - 1) }' "$WORK/fcm.log") µs per message"
taskset -c 0 "$HERALD" bench webpush --mock "https://127.0.0.1:$WEBPUSH_PORT" --sink "https://127.0.0.1:$NGINX_PORT" --ca-file "$WORK/trust.pem" \
    --count "$COUNT" --pywebpush-count 0 >"$WORK/webpush.log" 2>&1
WEBPUSH=$(awk '/^rate/ { print $2 }' "$WORK/webpush.log")
echo "web push: $WEBPUSH/s, $(awk '/^cpu/ && /µs/ { print $2 }' "$WORK/webpush.log") µs per message"
python3 -c "print('ratio fcm / apns: %.2f' % ($FCM / $APNS))"
for log in apns fcm webpush; do
    if grep -Eq "failed [1-9]" "$WORK/$log.log"; then echo "$log:"; cat "$WORK/$log.log"; fi
done
