#!/usr/bin/env bash
# Proves a release archive runs without Swift: unpacks it and runs the archived `herald` with
# Swift's libraries out of reach, then checks it answers.
#
# Usage: scripts/check-release.sh [--chroot ROOTFS] [--user UID] ARCHIVE
#
#   (default)       as root: in a mount namespace of its own with an empty tmpfs over the Swift
#                   toolchain's directory (/opt/swift here), and a minimal environment (env -i);
#                   not root: only env -i (the ldd and memory-map checks still hold).
#   --chroot DIR    inside a Debian root that has no Swift at all, as made by
#                   `debootstrap --variant=minbase bookworm DIR` (the strongest proof: only what
#                   that root holds is there to load). Needs root.
#   --user UID      as root, the binaries run as this user without capabilities, as a service
#                   does (default 65534, nobody); `--user 0` keeps root and its capabilities.
#
# What it checks, failing at the first miss:
#   1. the archive's .sha256 beside it, if there is one;
#   2. `ldd bin/herald` lists no Swift library and nothing "not found" (printed whole);
#   3. `herald mock` (an APNs mock) and `herald serve` (SQLite) start, /readyz answers 200;
#   4. no file of Swift's is mapped into the running gateway (/proc/PID/maps);
#   5. a device registered and a notification sent through the API are accepted by the mock;
#   6. SIGHUP reloads and the gateway stays ready; SIGTERM stops it with status 0.
# Uses curl and openssl from this machine (for the client side and a throwaway .p8 key).
set -euo pipefail

rootfs=""
run_uid=65534
while [ $# -gt 0 ]; do
    case "$1" in
        --chroot) rootfs=${2:?--chroot needs a directory}; shift 2 ;;
        --user) run_uid=${2:?--user needs a uid}; shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "check-release.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "usage: scripts/check-release.sh [--chroot ROOTFS] ARCHIVE" >&2; exit 2; }
archive=$(readlink -f "$1")
[ -f "$archive" ] || { echo "check-release.sh: no archive at $1" >&2; exit 2; }
for tool in curl openssl tar; do
    command -v "$tool" >/dev/null || { echo "check-release.sh: needs $tool" >&2; exit 2; }
done

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo; echo "== $*"; }

# 1. The checksum.
if [ -f "$archive.sha256" ]; then
    step "checksum"
    (cd "$(dirname "$archive")" && sha256sum -c "$(basename "$archive").sha256") || fail "checksum does not match"
fi

# Where it runs: $work is the directory on this machine, $inner the same directory as the
# archived binary sees it.
pids=()
mounted_proc=""
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [ -n "$mounted_proc" ]; then umount "$mounted_proc" 2>/dev/null || true; fi
    if [ -n "${work:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

swift_dir=""
if command -v swift >/dev/null; then
    swift_dir=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")   # /opt/swift
fi
if [ -n "$rootfs" ]; then
    [ "$(id -u)" = 0 ] || fail "--chroot needs root"
    rootfs=$(readlink -f "$rootfs")
    [ -x "$rootfs/usr/bin/env" ] || fail "$rootfs is not a Debian root (no /usr/bin/env); make one with: debootstrap --variant=minbase bookworm $rootfs"
    found=$(find "$rootfs" -xdev \( -name 'libswift*' -o -name '*.swiftmodule' -o -name 'libFoundation*' -o -name 'libdispatch*' \
        -o -name 'libBlocksRuntime*' -o -name swift -o -name swiftc \) -print 2>/dev/null | awk 'NR <= 5')
    [ -z "$found" ] || fail "$rootfs holds Swift files, so it proves nothing: $found"
    work=$(mktemp -d "$rootfs/tmp/herald-check.XXXXXX")
    inner=${work#"$rootfs"}
    if ! mountpoint -q "$rootfs/proc"; then
        mount -t proc proc "$rootfs/proc"
        mounted_proc="$rootfs/proc"
    fi
    mode="chroot $rootfs (no Swift in it), env -i"
    isolated() { exec chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent "${drop[@]}" "$@"; }
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/herald-check.XXXXXX")
    inner=$work
    if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && [ -n "$swift_dir" ] && [ -d "$swift_dir" ]; then
        mode="mount namespace with an empty tmpfs over $swift_dir, env -i"
        isolated() {
            exec unshare --mount --propagation private /bin/sh -c 'mount -t tmpfs -o ro,size=4k none "$0" && exec "$@"' "$swift_dir" \
                /usr/bin/env -i PATH=/usr/bin:/bin HOME=/nonexistent "${drop[@]}" "$@"
        }
    else
        mode="env -i only (not root, or no Swift toolchain here to hide)"
        isolated() { exec env -i PATH=/usr/bin:/bin HOME=/nonexistent "${drop[@]}" "$@"; }
    fi
fi
# `isolated` execs (unshare, sh, chroot and env each exec the next), so it runs in a subshell,
# and the PID of `isolated … &` is the binary's own.
# As root, the binaries run as an unprivileged user with no capabilities (setpriv is in
# util-linux, in every Debian root), which is how systemd and the container run them.
drop=()
if [ "$(id -u)" = 0 ] && [ "$run_uid" != 0 ]; then
    drop=(setpriv --reuid="$run_uid" --regid="$run_uid" --clear-groups --inh-caps=-all --no-new-privs)
    chmod 0755 "$work"
    chown "$run_uid:$run_uid" "$work"
    mode="$mode, as uid $run_uid without capabilities"
elif [ "$(id -u)" = 0 ]; then
    mode="$mode, as root"
fi
echo "isolation: $mode"

tar -xzf "$archive" -C "$work"
top=$(tar -tzf "$archive" | awk -F/ 'NR == 1 {print $1}')
[ -x "$work/$top/bin/herald" ] || fail "the archive has no $top/bin/herald"
herald="$inner/$top/bin/herald"
file "$work/$top/bin/herald" 2>/dev/null || true

# 2. What the binary loads.
step "ldd bin/herald"
if [ -n "$rootfs" ]; then
    deps=$(chroot "$rootfs" /usr/bin/env -i PATH=/usr/bin:/bin ldd "$herald" 2>&1) || true
else
    deps=$(ldd "$work/$top/bin/herald" 2>&1) || true
fi
echo "$deps"
if echo "$deps" | grep -qiE 'swift|libFoundation|libdispatch|libBlocksRuntime'; then fail "ldd lists Swift libraries: $(echo "$deps" | grep -i swift | tr '\n' ' ')"; fi
if echo "$deps" | grep -q "not found"; then fail "ldd finds no $(echo "$deps" | grep 'not found' | tr '\n' ' ')"; fi
runpath=$(readelf -d "$work/$top/bin/herald" | grep -E 'R(UN)?PATH' || true)
echo "RUNPATH/RPATH: ${runpath:-none}"

# 3. A mock APNs and the gateway, each started through `isolated`.
free_port() {
    if command -v python3 >/dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    else
        echo $((20000 + RANDOM % 20000))
    fi
}
wait_for_port() {   # port, pid, what: at most 60 s
    local i
    for i in $(seq 1 120); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

mock_port=$(free_port)
api_port=$(free_port)
[ "$mock_port" != "$api_port" ] || api_port=$((mock_port + 1))
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/AuthKey_CHECK12345.p8"

step "herald mock on 127.0.0.1:$mock_port"
isolated "$herald" mock --port "$mock_port" --write-ca "$inner/mock-ca.pem" > "$work/mock.log" 2>&1 &
mock_pid=$!
pids+=("$mock_pid")
wait_for_port "$mock_port" "$mock_pid" || { cat "$work/mock.log" >&2; fail "herald mock did not start"; }
head -n 3 "$work/mock.log"

step "herald api-key"
(isolated "$herald" api-key --name check --app shop) > "$work/api-key.txt" 2>&1 || { cat "$work/api-key.txt" >&2; fail "herald api-key failed"; }
key=$(sed -n 's/^key: //p' "$work/api-key.txt")
entry=$(grep -m 1 '^{' "$work/api-key.txt" || true)
[ -n "$key" ] && [ -n "$entry" ] || fail "herald api-key printed no key and entry"
echo "made a key (not shown) and its entry: $(echo "$entry" | sed 's/"sha256" *: *"[0-9a-f]*"/"sha256": "…"/')"
cat > "$work/herald.json" <<END
{ "listen": "127.0.0.1:$api_port", "database": "sqlite:$inner/herald.db",
  "apps": [ { "id": "shop",
              "apns": { "topic": "com.example.shop", "environment": "https://127.0.0.1:$mock_port", "caFile": "mock-ca.pem",
                        "authKey": { "file": "AuthKey_CHECK12345.p8", "keyID": "CHECK12345", "teamID": "TEAM123456" } } } ],
  "apiKeys": [ $entry ] }
END

if [ ${#drop[@]} -gt 0 ]; then chown -R "$run_uid:$run_uid" "$work"; fi

step "herald serve on 127.0.0.1:$api_port (sqlite)"
isolated "$herald" serve --config "$inner/herald.json" --database "sqlite:$inner/herald.db" --listen "127.0.0.1:$api_port" > "$work/serve.log" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")
wait_for_port "$api_port" "$serve_pid" || { cat "$work/serve.log" >&2; fail "herald serve did not start"; }
ready=""
for i in $(seq 1 60); do
    ready=$(curl -sS -m 5 -o "$work/readyz" -w '%{http_code}' "http://127.0.0.1:$api_port/readyz" 2>/dev/null || true)
    [ "$ready" = 200 ] && break
    sleep 0.5
done
echo "GET /readyz: $ready $(cat "$work/readyz" 2>/dev/null)"
[ "$ready" = 200 ] || { cat "$work/serve.log" >&2; fail "/readyz did not answer 200"; }

# 4. Nothing of Swift's in the process.
step "files mapped into herald serve (pid $serve_pid)"
awk '$6 ~ /^\// {print $6}' "/proc/$serve_pid/maps" | sort -u | sed "s|^$work|<work>|"
swift_files='libswift|\.swiftmodule|/swift/|libFoundation|libdispatch|libBlocksRuntime|_FoundationICU'
if grep -qE "$swift_files" "/proc/$serve_pid/maps"; then
    fail "a Swift file is mapped into the gateway: $(grep -E "$swift_files" "/proc/$serve_pid/maps" | awk '{print $6}' | sort -u | tr '\n' ' ')"
fi

# 5. One notification through the API, TLS and HTTP/2 to the mock.
step "a device and a notification through the API"
token=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
api() { curl -sS -m 10 -H "Authorization: Bearer $key" -H 'Content-Type: application/json' "$@"; }
echo "PUT device: $(api -o /dev/null -w '%{http_code}' -X PUT "http://127.0.0.1:$api_port/v1/apps/shop/devices/$token" -d '{"user": "u1"}')"
sent=$(api "http://127.0.0.1:$api_port/v1/apps/shop/notifications" -d '{"to": {"users": ["u1"]}, "payload": {"aps": {"alert": "check-release"}}}')
echo "POST notification: $sent"
id=$(echo "$sent" | grep -o '"id" *: *"[^"]*"' | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
[ -n "$id" ] || fail "the notification was not accepted"
status=""
for i in $(seq 1 60); do
    status=$(api "http://127.0.0.1:$api_port/v1/notifications/$id")
    echo "$status" | grep -q '"status" *: *"done"' && break
    sleep 0.5
done
echo "GET notification: $status"
if ! echo "$status" | grep -q '"accepted" *: *1[,}]'; then
    grep -iE 'warning|error' "$work/serve.log" | tail -n 3 >&2
    fail "the mock did not accept the notification"
fi

# 6. Reload and stop.
step "SIGHUP, then SIGTERM"
kill -HUP "$serve_pid"
sleep 1
kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; fail "herald serve died on SIGHUP"; }
echo "after SIGHUP, GET /readyz: $(curl -sS -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/readyz")"
kill -TERM "$serve_pid"
code=""
for i in $(seq 1 60); do
    if ! kill -0 "$serve_pid" 2>/dev/null; then
        wait "$serve_pid" && code=0 || code=$?
        break
    fi
    sleep 0.5
done
echo "herald serve exited with ${code:-"(still running after 30 s)"}"
tail -n 3 "$work/serve.log"
[ "$code" = 0 ] || fail "herald serve did not stop cleanly"

echo
echo "PASS: $(basename "$archive") runs without Swift ($mode)"
