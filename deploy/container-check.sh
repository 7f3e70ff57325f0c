#!/usr/bin/env bash
# Builds the Dockerfile's `from-archive` image from a release archive with Podman and checks the
# container: it starts as user herald, its HEALTHCHECK passes, the API answers on 127.0.0.1, a
# notification reaches a mock APNs, the database survives a new container on the same volume,
# and `podman stop` (SIGTERM) ends it with status 0.
#
# Usage (as root): deploy/container-check.sh ARCHIVE [PORT]
#
#   ARCHIVE  dist/herald-<version>-linux-<arch>.tar.gz, inside the repository (the build context)
#   PORT     where the container's API is reached (default 8080: it runs on the host's network,
#            so the container reaches the mock on 127.0.0.1 and the port must be free)
#
# PODMAN_FLAGS overrides how podman is called. The default suits a machine without a Docker
# engine or systemd, with cgroups v1 and no CAP_SYS_RESOURCE (this project's sandbox): vfs
# storage, cgroupfs, runc, file events, and ulimits below the hard limits. The base image
# (debian:bookworm-slim) must be local or pullable (--pull=missing).
set -euo pipefail

cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: deploy/container-check.sh ARCHIVE [PORT]" >&2; exit 2; }
archive=$(realpath --relative-to=. "$1")
port=${2:-8080}
[ -f "$archive" ] || { echo "container-check.sh: no archive at $1" >&2; exit 2; }
case "$archive" in ../*|/*) echo "container-check.sh: the archive must be inside the repository (the build context)" >&2; exit 2 ;; esac
read -r -a podman <<< "${PODMAN_FLAGS:-podman --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc}"
limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
tag=localhost/herald:check
name=herald-check-$$
volume=herald-check-data-$$

fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/herald-container-check.XXXXXX")
mock_pid=""
cleanup() {
    "${podman[@]}" rm -f "$name" >/dev/null 2>&1 || true
    "${podman[@]}" volume rm -f "$volume" >/dev/null 2>&1 || true
    if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "== podman build --target from-archive ($archive)"
"${podman[@]}" build --pull=missing --format docker --network host "${limits[@]}" \
    --target from-archive --build-arg ARCHIVE="$archive" -t "$tag" . > "$work/build.log" 2>&1 \
    || { tail -n 20 "$work/build.log" >&2; fail "podman build"; }
tail -n 1 "$work/build.log"

# A mock APNs on the host, from the same archive, and the configuration the container mounts.
tar -xzf "$archive" -C "$work"
herald=$(ls -d "$work"/herald-*/bin/herald)
mock_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -m 0755 "$work/config"
"$herald" mock --port "$mock_port" --write-ca "$work/config/mock-ca.pem" > "$work/mock.log" 2>&1 &
mock_pid=$!
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/config/AuthKey_CHECK12345.p8"
"$herald" api-key --name check --app shop > "$work/api-key.txt"
key=$(sed -n 's/^key: //p' "$work/api-key.txt")
entry=$(grep -m 1 '^{' "$work/api-key.txt")
cat > "$work/config/herald.json" <<END
{ "listen": "127.0.0.1:1", "database": "sqlite:/nonexistent/overridden.db",
  "apps": [ { "id": "shop",
              "apns": { "topic": "com.example.shop", "environment": "https://127.0.0.1:$mock_port", "caFile": "mock-ca.pem",
                        "authKey": { "file": "AuthKey_CHECK12345.p8", "keyID": "CHECK12345", "teamID": "TEAM123456" } } } ],
  "apiKeys": [ $entry ] }
END
chmod 0644 "$work/config/"*   # a throwaway key; readable by uid 10001 in the container
for i in $(seq 1 40); do [ -s "$work/config/mock-ca.pem" ] && break; sleep 0.25; done

start() {
    "${podman[@]}" run -d --name "$name" --pull=never --network host --stop-timeout 30 "${limits[@]}" \
        -v "$work/config:/etc/herald:ro" -v "$volume:/var/lib/herald" "$tag" \
        --config /etc/herald/herald.json --listen "0.0.0.0:$port" > /dev/null 2> "$work/run.err" \
        || { cat "$work/run.err" >&2; fail "podman run"; }
    local i
    for i in $(seq 1 60); do
        curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && return 0
        sleep 0.5
    done
    "${podman[@]}" logs "$name" 2>&1 | tail -n 5 >&2
    fail "the container's /readyz did not answer"
}
api() { curl -sS -m 10 -H "Authorization: Bearer $key" "$@"; }

echo "== podman run (port $port)"
[ "$port" = 8080 ] || echo "note: the image's HEALTHCHECK asks port 8080; on another port it fails by design"
start
echo "GET /readyz: $(curl -sS "http://127.0.0.1:$port/readyz")"
echo "user: $("${podman[@]}" exec "$name" id)"
# Without systemd, podman runs no health check timer: run it once by hand.
"${podman[@]}" healthcheck run "$name" && echo "healthcheck: $("${podman[@]}" inspect "$name" --format '{{.State.Health.Status}}')" \
    || echo "healthcheck: failed"

echo "== a notification through the container"
token=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
echo "PUT device: $(api -o /dev/null -w '%{http_code}' -X PUT "http://127.0.0.1:$port/v1/apps/shop/devices/$token" -d '{"user": "u1"}')"
sent=$(api "http://127.0.0.1:$port/v1/apps/shop/notifications" -d '{"to": {"users": ["u1"]}, "payload": {"aps": {"alert": "container-check"}}}')
id=$(echo "$sent" | grep -o '"id":"[^"]*"' | cut -d'"' -f4)
[ -n "$id" ] || fail "the notification was refused: $sent"
for i in $(seq 1 40); do
    status=$(api "http://127.0.0.1:$port/v1/notifications/$id")
    echo "$status" | grep -q '"status":"done"' && break
    sleep 0.5
done
echo "GET notification: $(echo "$status" | grep -o '"status":"[a-z]*"\|"accepted":[0-9]*' | head -n 2 | tr '\n' ' ')"
echo "$status" | grep -q '"accepted":1' || { "${podman[@]}" logs "$name" 2>&1 | grep -i warning | tail -n 2 >&2; fail "the mock did not accept it"; }

echo "== podman stop (SIGTERM), then a new container on the same volume"
started=$(date +%s)
"${podman[@]}" stop "$name" > /dev/null 2>&1
echo "stopped in $(( $(date +%s) - started )) s, exit status $("${podman[@]}" inspect "$name" --format '{{.State.ExitCode}}')"
"${podman[@]}" rm "$name" > /dev/null 2>&1
start
echo "the notification after a new container: $(api "http://127.0.0.1:$port/v1/notifications/$id" | grep -o '"status":"[a-z]*"\|"accepted":[0-9]*' | head -n 2 | tr '\n' ' ')"
"${podman[@]}" stop "$name" > /dev/null 2>&1
echo
echo "PASS: $archive in a container"
