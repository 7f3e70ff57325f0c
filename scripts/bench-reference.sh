#!/usr/bin/env bash
# Herald against the reference HTTP/2 tools, side by side in one run on this machine:
#   1. client: h2load and `herald bench` against the same nginx HTTP/2 TLS sink (1 and 4 connections)
#   2. memory: `herald bench` sending 1,000,000 notifications (peak RSS)
#   3. server: h2load against Herald's mock and against nginx (1 and 4 connections)
# It prints each rate and the ratios. Run as root on a fresh machine (it installs nginx and
# nghttp2-client from Debian when missing). Usage: scripts/bench-reference.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-200000}
STREAMS=100          # concurrent streams per connection, for h2load and Herald alike
NGINX_PORT=18443
MOCK_PORT=18444
TOKEN=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef

if ! command -v nginx >/dev/null || ! command -v h2load >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx nghttp2-client
fi
command -v openssl >/dev/null || { apt-get update -q; apt-get install -y -q openssl; }

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port

# The sink: nginx on 127.0.0.1, TLS with a throwaway certificate, HTTP/2, answering 200 to
# POST /3/device/*. One worker: the client under test gets the other core, as h2load does.
start_nginx_sink "$NGINX_PORT" "location /3/device/ { return 200; }"

# Herald's mock. Without registered keys it takes any well-formed ES256 provider token, so a
# token with a dummy signature serves h2load.
"$HERALD" mock --port "$MOCK_PORT" --write-ca "$WORK/mock-ca.pem" >"$WORK/mock.log" 2>&1 &
PIDS+=($!)
wait_for_port "$NGINX_PORT"
wait_for_port "$MOCK_PORT"
JWT=$(python3 - <<'EOF'
import base64, json, time
b64 = lambda d: base64.urlsafe_b64encode(json.dumps(d, separators=(",", ":")).encode()).rstrip(b"=").decode()
print(b64({"alg": "ES256", "kid": "BENCHKEY01"}) + "." + b64({"iss": "BENCHTEAM1", "iat": int(time.time())}) + "." + "A" * 86)
EOF
)

# About 100 bytes, like a typical alert.
printf '{"aps":{"alert":"Herald benchmark: a short alert body of about one hundred bytes."}}' >"$WORK/payload.json"
HEADERS=(-H "apns-topic: com.example.herald" -H "apns-push-type: alert" -H "authorization: bearer $JWT")

h2load_rate() {  # URL CONNECTIONS
    h2load -n "$COUNT" -c "$2" -m "$STREAMS" -d "$WORK/payload.json" "${HEADERS[@]}" "$1/3/device/$TOKEN" 2>&1 \
        | awk '/finished in/ { for (i = 1; i <= NF; i++) if ($i == "req/s,") print $(i-1) }'
}
herald_bench() {  # CONNECTIONS COUNT FIELD
    "$HERALD" bench --host "https://127.0.0.1:$NGINX_PORT" --ca-file "$WORK/cert.pem" --count "$2" \
        --connections "$1" --concurrency $(( $1 * STREAMS )) --payload "$WORK/payload.json" --output json \
        | python3 -c "import json, sys; print(json.load(sys.stdin)['$3'])"
}
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

echo
echo "client: notifications/s against the nginx sink, $COUNT per run, $STREAMS streams per connection"
for connections in 1 4; do
    reference=$(h2load_rate "https://127.0.0.1:$NGINX_PORT" "$connections")
    herald=$(herald_bench "$connections" "$COUNT" rate)
    printf '  %d connection(s): h2load %8.0f   herald %8.0f   ratio %s (target >= 0.80)\n' \
        "$connections" "$reference" "$herald" "$(ratio "$herald" "$reference")"
done

echo
echo "memory: herald bench sending 1,000,000 notifications over 4 connections"
peak=$(herald_bench 4 1000000 peak_memory_bytes)
printf '  peak RSS %.1f MiB (target < 64 MiB)\n' "$(python3 -c "print($peak / 1048576)")"

echo
echo "server: h2load requests/s, Herald's mock against nginx, $COUNT per run"
for connections in 1 4; do
    mock=$(h2load_rate "https://127.0.0.1:$MOCK_PORT" "$connections")
    nginx=$(h2load_rate "https://127.0.0.1:$NGINX_PORT" "$connections")
    printf '  %d connection(s): mock %8.0f   nginx %8.0f   ratio %s (target >= 0.50)\n' \
        "$connections" "$mock" "$nginx" "$(ratio "$mock" "$nginx")"
done
