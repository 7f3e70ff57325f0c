#!/usr/bin/env bash
# `herald serve` with many apps against the same app alone, side by side in one run on this
# machine, on SQLite. For each number of apps (APPS, default "1 1000 10000"; each app with its
# own provider key file, all sending to one `herald mock`):
#   1. ready: from starting the process to /readyz answering 200;
#   2. idle memory: VmRSS a second after ready, nothing sent;
#   3. reload: one app's topic changed in the file and SIGHUP sent, to the log's
#      "configuration reloaded" (wall time, and the gateway's own "ms"), and VmRSS after it;
#   4. send rate: DEVICES devices (default 100,000) imported for one app among them (`bench`, in
#      the middle of the list) and one notification to all of them, from the POST to `done`;
#   5. the clients made: the APNs connections the mock accepted (1 app sends, so 1 client).
# The line for 1 app is the baseline: the ratios are each case's ÷ it.
# Usage: scripts/bench-tenants.sh. Needs python3 with `cryptography`, and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

APPS=${APPS:-"1 1000 10000"}
DEVICES=${DEVICES:-100000}
MOCK_PORT=18644
API_PORT=18680

. scripts/bench-common.sh  # $HERALD, $WORK, PIDS and their cleanup, wait_for_port, start_mock_and_key

start_mock_and_key "$MOCK_PORT"  # $KEY, $DIGEST, $WORK/ca.pem

cat >"$WORK/tenants.py" <<'EOF'
import hashlib, http.client, json, os, re, signal, subprocess, sys, time
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

herald, work, mock_port, api_port, digest, key = sys.argv[1:7]
counts = [int(n) for n in sys.argv[7].split()]
devices = int(sys.argv[8])
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}

def keys(n):
    os.makedirs(work + "/keys", exist_ok=True)
    for i in range(n):
        path = "%s/keys/AuthKey_%d.p8" % (work, i)
        if os.path.exists(path): continue
        pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        with open(path, "wb") as f: f.write(pem)

def configuration(n, database, changed=None):
    apps = []
    for i in range(n):
        ident = "bench" if i == n // 2 else "app%d" % i
        topic = "com.example.%s%s" % (ident, ".changed" if i == changed else "")
        apps.append({"id": ident, "apns": {"topic": topic, "environment": "https://127.0.0.1:%s" % mock_port, "caFile": work + "/ca.pem",
                     "authKey": {"file": "%s/keys/AuthKey_%d.p8" % (work, i), "keyID": "K%09d" % i, "teamID": "BENCHTEAM1"}}})
    return {"listen": "127.0.0.1:%s" % api_port, "database": database, "apps": apps,
            "apiKeys": [{"name": "bench", "sha256": digest, "apps": ["bench"]}]}

def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024

def call(c, method, path, body=None, extra={}):
    c.request(method, path, body=body, headers={**headers, **extra})
    r = c.getresponse(); data = r.read()
    return r.status, (json.loads(data) if data else None)

def token(n): return hashlib.sha256(b"tenant device %d" % n).hexdigest()

def case(n):
    keys(n)
    database = "sqlite:%s/tenants-%d.db" % (work, n)
    config = "%s/tenants-%d.json" % (work, n)
    with open(config, "w") as f: json.dump(configuration(n, database), f)
    log = open("%s/serve-%d.log" % (work, n), "w")
    start = time.monotonic()
    process = subprocess.Popen([herald, "serve", "--config", config, "--log-format", "json", "--log-level", "info"], stdout=log, stderr=log)
    try:
        ready = None
        for _ in range(60000):
            try:
                c = http.client.HTTPConnection("127.0.0.1", int(api_port), timeout=5)
                c.request("GET", "/readyz"); r = c.getresponse(); r.read()
                if r.status == 200: ready = time.monotonic() - start; break
            except OSError:
                pass
            if process.poll() is not None:
                sys.exit("herald serve with %d apps stopped: %s" % (n, open("%s/serve-%d.log" % (work, n)).read()[-2000:]))
            time.sleep(0.005)
        assert ready is not None, "not ready within 300 s"
        time.sleep(1)
        idle = rss(process.pid)
        # Reload: one app's topic changed (not the one that sends).
        with open(config, "w") as f: json.dump(configuration(n, database, changed=0 if n > 1 else None), f)
        path = "%s/serve-%d.log" % (work, n)
        seen = open(path).read().count("configuration reloaded")
        sent = time.monotonic()
        process.send_signal(signal.SIGHUP)
        reload_wall = None
        for _ in range(60000):
            text = open(path).read()
            if text.count("configuration reloaded") > seen:
                reload_wall = time.monotonic() - sent
                line = [l for l in text.splitlines() if "configuration reloaded" in l][-1]
                # The gateway's own time for it (builds before it logged one: "-").
                reload_ms = json.loads(line).get("ms", "-")
                break
            time.sleep(0.002)
        assert reload_wall is not None, "no reload logged"
        time.sleep(0.5)
        after_reload = rss(process.pid)
        # One app among them sends.
        c = http.client.HTTPConnection("127.0.0.1", int(api_port), timeout=600)
        body = "".join('{"token":"%s"}\n' % token(i) for i in range(devices))
        status, report = call(c, "POST", "/v1/apps/bench/devices", body, {"Content-Type": "application/x-ndjson"})
        assert status == 200 and report["upserted"] == devices, report
        t0 = time.monotonic()
        status, queued = call(c, "POST", "/v1/apps/bench/notifications", json.dumps({"to": {"all": True}, "payload": {"aps": {"alert": "Herald tenants benchmark"}}}))
        assert status == 202, queued
        while True:
            _, note = call(c, "GET", "/v1/notifications/" + queued["id"])
            if note["status"] == "done": break
            time.sleep(0.05)
        rate = note["accepted"] / (time.monotonic() - t0)
        assert note["accepted"] == devices, note
        busy = rss(process.pid)
        clients = open(path).read().count('"APNs client"')
        return dict(apps=n, ready=ready, idle=idle, reload=reload_wall * 1000, reload_ms=reload_ms, after_reload=after_reload, rate=rate, busy=busy, clients=clients)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)

results = [case(n) for n in counts]
base = results[0]
print("%7s %9s %10s %11s %10s %12s %10s %11s %8s %9s" % ("apps", "ready s", "idle MiB", "KiB/app", "reload ms", "(gateway ms)", "sends/s", "÷ 1st case", "clients", "busy MiB"))
for r in results:
    per_app = (r["idle"] - base["idle"]) * 1024 / max(1, r["apps"] - base["apps"]) if r["apps"] > base["apps"] else 0
    print("%7d %9.2f %10.1f %11.1f %10.0f %12s %10.0f %11.2f %8d %9.1f" % (
        r["apps"], r["ready"], r["idle"], per_app, r["reload"], r["reload_ms"], r["rate"], r["rate"] / base["rate"], r["clients"], r["busy"]))
EOF

python3 "$WORK/tenants.py" "$HERALD" "$WORK" "$MOCK_PORT" "$API_PORT" "$DIGEST" "$KEY" "$APPS" "$DEVICES"
