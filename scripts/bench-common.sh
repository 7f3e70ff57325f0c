# Sourced by the bench scripts: a release build of `herald` in $HERALD, a scratch directory in
# $WORK, and the processes the script starts (add their PIDs to PIDS) ended, and $WORK removed,
# however the script exits.

# HERALD=PATH: another build instead (e.g. to swap it with HERALD_BEFORE).
if [ -z "${HERALD:-}" ]; then
    echo "building herald (release)..."
    swift build -c release --product herald >/dev/null
    HERALD=$(swift build -c release --show-bin-path)/herald
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap 'forget_fresh; cleanup' EXIT  # forget_fresh: below

# Waits (at most TENTHS tenths of a second, default 100) until 127.0.0.1:PORT accepts connections.
wait_for_port() {  # PORT [TENTHS]
    for _ in $(seq "${2:-100}"); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done
    return 1
}

# Starts nginx on 127.0.0.1:PORT as an HTTP/2 TLS sink (one worker, pinned to core CORE when
# given), with a throwaway certificate in $WORK/cert.pem and the `location` lines LOCATIONS
# (e.g. "location /3/device/ { return 200; }").
start_nginx_sink() {  # PORT LOCATIONS [CORE]
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
        -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
    cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$1 ssl http2;
        http2_max_concurrent_streams 1000;
        keepalive_requests 100000000;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
        $2
    }
}
CONF
    if [ -n "${3:-}" ]; then taskset -c "$3" nginx -c "$WORK/nginx.conf" -p "$WORK" & else nginx -c "$WORK/nginx.conf" -p "$WORK" & fi
    PIDS+=($!)
}

# Starts `herald mock` on MOCK_PORT (its CA in $WORK/ca.pem) with a fresh provider key in
# $WORK/AuthKey_BENCHKEY01.p8, and makes an API key: $KEY, and $DIGEST for the configuration.
start_mock_and_key() {  # MOCK_PORT
    openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$WORK/AuthKey_BENCHKEY01.p8"
    "$HERALD" mock --port "$1" --write-ca "$WORK/ca.pem" >"$WORK/mock.log" 2>&1 &
    MOCK_PID=$!
    PIDS+=($MOCK_PID)
    wait_for_port "$1"
    KEY="hk_bench-$(openssl rand -hex 16)"
    DIGEST=$(printf '%s' "$KEY" | openssl dgst -sha256 -r | cut -d' ' -f1)
}

# Sets FRESH_URL: a new, empty database on the server of the PostgreSQL URL given (any other URL
# as it is), its name in place of the URL's; forget_fresh drops it (and the exit, if it has not).
FRESH=()
FRESH_NUMBER=0
fresh() {  # URL
    FRESH_URL=$1
    case $1 in postgres*) ;; *) return ;; esac
    if [ -n "${REUSE_POSTGRES:-}" ]; then return; fi
    FRESH_NUMBER=$((FRESH_NUMBER + 1))
    local name="herald_bench_$$_$FRESH_NUMBER"
    FRESH_URL=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$1" "$name")
    psql -q -X "$1" -c "CREATE DATABASE $name"
    FRESH+=("$1 $name")
}
forget_fresh() {
    local entry
    for entry in "${FRESH[@]}"; do
        set -- $entry
        psql -q -X "$1" -c "DROP DATABASE IF EXISTS $2 WITH (FORCE)" || true
    done
    FRESH=()
}
