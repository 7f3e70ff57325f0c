#!/usr/bin/env python3
"""The client side of scripts/bench-receipts.sh (read that script first).

Modes (each prints one line of JSON, or the table):
  import PORT KEY APP COUNT PATH
  broadcast PORT KEY APP COUNT SERVE_PID MOCK_PID
  ingest PORT KEY NOTIFICATION APP DATABASE COUNT BATCHED SINGLE PACED TARGET CONCURRENCY SERVE_PID
  hostile PORT KEY APP_B COUNT NOTIFICATION APP_A DATABASE CONCURRENCY SERVE_PID MOCK_PID RECEIVED WORK
  flood PORT CONCURRENCY POOL_FILE MAX_SECONDS        (started by hostile; stops on SIGTERM)
  table RESULT_FILE...

Receipts are made here from docs/receipts.md's layout alone (not with the gateway's code): byte 0
version 1 and the key's slot, byte 1 the token kind (high 4 bits, 0 alert) and platform (low 4
bits, 0 APNs), 2..17 the notification's UUID, 18..21 the time, 22..27 the device's reference (FNV-1a
64 of the ID's UTF-8, MurmurHash3's fmix64, its top 48 bits), 28..35 the first 8 bytes of
HMAC-SHA256(secret, "herald-receipt-v1" + app + NUL + bytes 0..27). The secret is read from the
database (`receipt_keys`).

The load generator is one process with CONCURRENCY HTTP/1.1 keep-alive connections on raw
non-blocking sockets and epoll: each connection sends a request, reads its whole answer, sends
the next (no pipelining). Requests are built before the clock starts. Its own CPU is reported
with every pass, so a pass it bounds shows as ~100 % of one core.
"""
import base64, collections, hashlib, hmac, http.client, json, os, random, resource, select, signal, socket, subprocess, sys, threading, time, uuid

HZ = os.sysconf("SC_CLK_TCK")
DOMAIN = b"herald-receipt-v1"
FNV_BASIS, FNV_PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def token(n):
    return hashlib.sha256(b"bench receipts device %d" % n).hexdigest()


# --- receipts, from the spec --------------------------------------------------------------------

def fmix_top48(h):
    """The top 48 bits: the device's reference (its row is found by the top 32 of these)."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    h ^= h >> 33
    return h >> 16


def device_hash(device):
    h = FNV_BASIS
    for byte in device.encode():
        h = ((h ^ byte) * FNV_PRIME) & MASK
    return fmix_top48(h)


def device_hashes(devices):
    """device_hash of each; with numpy (when installed) 64 FNV steps over all of them at once,
    checked against the plain loop on the first few."""
    try:
        import numpy as np
    except ImportError:
        return [device_hash(d) for d in devices]
    by_length = collections.defaultdict(list)
    for index, d in enumerate(devices):
        by_length[len(d.encode())].append(index)
    out = [0] * len(devices)
    for length, indices in by_length.items():
        raw = np.frombuffer(b"".join(devices[i].encode() for i in indices), dtype=np.uint8).reshape(len(indices), length)
        h = np.full(len(indices), FNV_BASIS, dtype=np.uint64)
        prime = np.uint64(FNV_PRIME)
        with np.errstate(over="ignore"):
            for column in range(length):
                h ^= raw[:, column].astype(np.uint64)
                h *= prime
        for i, value in zip(indices, h.tolist()):
            out[i] = fmix_top48(value)
    for i in range(min(16, len(devices))):
        assert out[i] == device_hash(devices[i]), "numpy FNV differs from the plain one"
    return out


def read_key(database, app):
    """(slot, secret bytes) of the app's newest receipt key (expires_at IS NULL)."""
    query = "SELECT slot, secret FROM receipt_keys WHERE app = '%s' AND expires_at IS NULL" % app.replace("'", "''")
    if database.startswith("sqlite:"):
        import sqlite3
        db = sqlite3.connect("file:%s?mode=ro" % database[len("sqlite:"):], uri=True, timeout=30)
        rows = db.execute(query).fetchall()
        db.close()
    else:
        out = subprocess.run(["psql", "-X", "-At", "-F", "|", database, "-c", query], check=True, capture_output=True, text=True).stdout
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
    assert len(rows) == 1, "expected one signing key for %s, found %r" % (app, rows)
    slot, secret = int(rows[0][0]), bytes.fromhex(rows[0][1])
    assert len(secret) == 32, "the secret is %d bytes" % len(secret)
    return slot, secret


def make_receipts(database, app, notification, indices, issued=None):
    """The receipt of each device `token(i)` for `notification` (APNs), keyed as the database says."""
    slot, secret = read_key(database, app)
    devices = [token(i) for i in indices]
    hashes = device_hashes(devices)
    head = bytes([0x10 | slot, 0]) + uuid.UUID(notification).bytes + int(issued or time.time()).to_bytes(4, "big")
    started = hmac.new(secret, DOMAIN + app.encode() + b"\0", hashlib.sha256)
    out = []
    for device, h in zip(devices, hashes):
        signed = head + h.to_bytes(6, "big")
        mac = started.copy()
        mac.update(signed)
        out.append(base64.urlsafe_b64encode(signed + mac.digest()[:8]).decode().rstrip("="))
    assert all(len(r) == 48 for r in out)
    return out


# --- HTTP ---------------------------------------------------------------------------------------

def connect(port):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=600)


def call(c, method, path, body=None, key=None, headers=None):
    h = {"Content-Type": "application/json"}
    if key: h["Authorization"] = "Bearer " + key
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    try:
        parsed = json.loads(data) if data else None
    except ValueError:
        parsed = data.decode(errors="replace")
    return r.status, parsed


def receipt_request(body):
    return b"POST /v1/receipts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def batch_body(receipts, event="received"):
    return json.dumps({"events": [{"receipt": r, "event": event} for r in receipts]}, separators=(",", ":")).encode()


def single_body(receipt, event="received"):
    return json.dumps({"receipt": receipt, "event": event}, separators=(",", ":")).encode()


class Conn:
    __slots__ = ("sock", "fd", "item", "sent", "buf", "t0", "total", "status")


# Devices report from many addresses: each ingestion connection comes from its own loopback
# address (127.0.0.2 ...), so the gateway's per-address limit (limits.receiptsPerSecondPerAddress)
# sees what many phones would. The flood comes from one address (127.0.0.1), as an attacker's.
SOURCES = int(os.environ.get("SOURCES", "64"))


def load(port, source, concurrency, on_response, max_seconds, ready=None, rate=None, spread=True):
    """Sends what `source()` gives ((request bytes, meta), or None: no more) over `concurrency`
    keep-alive connections, one request in flight on each, until it gives None and every answer
    is in; `on_response(status, body, meta)` for each answer. With `rate` (requests/s), request
    i is due at start + i / rate and is sent then, or as soon as a connection is free after it;
    its latency counts from when it was due (no coordinated omission). Returns the seconds, the
    latencies (s) and how many connections were opened again (the server closed one)."""
    ep = select.epoll()
    conns, latencies, reopened, idle = {}, [], [0], []
    deadline = time.monotonic() + max_seconds
    perf = time.perf_counter
    paced = {"next": 0, "start": 0.0, "item": None, "done": False}

    opened = [0]

    def open_conn():
        address = ("127.0.0.%d" % (2 + opened[0] % SOURCES), 0) if spread else None
        opened[0] += 1
        s = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=address)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        c = Conn()
        c.sock, c.fd, c.item, c.buf, c.total = s, s.fileno(), None, b"", -1
        conns[c.fd] = c
        ep.register(c.fd, select.EPOLLIN)
        return c

    def close(c):
        try:
            ep.unregister(c.fd)
        except (OSError, ValueError):
            pass
        c.sock.close()
        conns.pop(c.fd, None)

    def reopen(c):  # the server closed it: the request again on a new connection
        close(c)
        reopened[0] += 1
        if reopened[0] > 1000: raise SystemExit("load: the server closed over 1000 connections")
        n = open_conn()
        n.item, n.sent, n.buf, n.total, n.t0 = c.item, 0, b"", -1, c.t0
        send(n)

    def send(c):
        try:
            n = c.sock.send(c.item[0][c.sent:])
        except BlockingIOError:
            n = 0
        except ConnectionError:
            reopen(c)
            return
        c.sent += n
        if c.sent < len(c.item[0]):
            ep.modify(c.fd, select.EPOLLIN | select.EPOLLOUT)

    def start(c):
        if rate:
            if paced["item"] is None and not paced["done"]:
                paced["item"] = source()
                paced["done"] = paced["item"] is None
            if paced["done"]:
                close(c)
                return
            due = paced["start"] + paced["next"] / rate
            if perf() < due:
                idle.append(c)
                return
            item, paced["item"] = paced["item"], None
            paced["next"] += 1
            c.t0 = due
        else:
            item = source()
            if item is None:
                close(c)
                return
            c.t0 = perf()
        c.item, c.sent, c.buf, c.total = item, 0, b"", -1
        send(c)

    opened = [open_conn() for _ in range(concurrency)]
    if ready: ready()
    t0 = time.monotonic()
    paced["start"] = perf()
    for c in opened: start(c)
    while conns:
        if time.monotonic() > deadline:
            raise SystemExit("load: still running after %d s" % max_seconds)
        timeout = 1.0
        if idle:
            waiting, idle[:] = list(idle), []
            for c in waiting: start(c)
            if idle: timeout = max(0.0, paced["start"] + paced["next"] / rate - perf())
        for fd, mask in ep.poll(timeout):
            c = conns.get(fd)
            if c is None: continue
            if mask & select.EPOLLOUT:
                send(c)
                if fd in conns and c.sent >= len(c.item[0]): ep.modify(fd, select.EPOLLIN)
                if fd not in conns: continue
            if not mask & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR): continue
            try:
                data = c.sock.recv(262144)
            except BlockingIOError:
                continue
            except ConnectionError:
                data = b""
            if not data:
                reopen(c)
                continue
            buf = c.buf + data
            if c.total < 0:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    c.buf = buf
                    continue
                head = buf[:end].lower()
                c.status = int(head[9:12])
                at = head.find(b"\r\ncontent-length:")
                if at < 0: raise SystemExit("load: an answer without Content-Length: %r" % buf[:end])
                eol = head.find(b"\r\n", at + 2)
                c.total = end + 4 + int(head[at + 17:eol if eol > 0 else len(head)])
            if len(buf) < c.total:
                c.buf = buf
                continue
            latencies.append(perf() - c.t0)
            on_response(c.status, buf[buf.find(b"\r\n\r\n") + 4:c.total], c.item[1])
            start(c)
    elapsed = time.monotonic() - t0
    ep.close()
    return elapsed, latencies, reopened[0]


def pick(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def ticks(pid):
    with open("/proc/%s/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def database_ticks():
    """PostgreSQL's processes on this machine (none on SQLite): PID -> utime + stime."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                text = f.read()
        except OSError:
            continue
        if "(postgres)" not in text: continue
        fields = text.rsplit(")", 1)[1].split()
        out[pid] = int(fields[11]) + int(fields[12])
    return out


def machine():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6], v[3] + v[4]


class Meter:
    """CPU over a span, per unit (µs) and in cores: the gateway, PostgreSQL's processes, this
    process (the generator), the mock and any `extra` PIDs; how busy the machine was, and the
    cores of everything else on it (a build running beside the benchmark shows there)."""
    def __init__(self, serve_pid, postgres, mock_pid=None, extra=()):
        self.serve_pid, self.postgres, self.mock_pid, self.extra = serve_pid, postgres, mock_pid, list(extra)
        self.g, self.d, self.s, self.m = ticks(serve_pid), database_ticks(), cpu_self(), machine()
        self.k = ticks(mock_pid) if mock_pid else 0
        self.x = {pid: ticks(pid) for pid in self.extra}
        self.t = time.monotonic()

    def done(self, units, elapsed=None):
        elapsed = elapsed or time.monotonic() - self.t
        wall = time.monotonic() - self.t
        g = (ticks(self.serve_pid) - self.g) / HZ
        after = database_ticks()
        d = sum(t - self.d.get(pid, 0) for pid, t in after.items()) / HZ
        s = cpu_self() - self.s
        k = (ticks(self.mock_pid) - self.k) / HZ if self.mock_pid else 0.0
        x = 0.0
        for pid, before in self.x.items():
            try:
                x += (ticks(pid) - before) / HZ
            except OSError:
                pass
        busy, idle = machine()
        b, i = busy - self.m[0], idle - self.m[1]
        return {"gateway_us": g * 1e6 / max(1, units), "database_us": d * 1e6 / max(1, units) if self.postgres else None,
                "gateway_cores": g / elapsed, "database_cores": d / elapsed, "generator_us": s * 1e6 / max(1, units), "generator_cores": s / elapsed,
                "mock_us": k * 1e6 / max(1, units), "busy": 100.0 * b / max(1, b + i), "extra_cores": x / elapsed,
                "others_cores": max(0.0, b / HZ - g - d - s - k - x) / wall}


# --- modes --------------------------------------------------------------------------------------

def do_import(port, key, app, count, path):
    if not os.path.exists(path):
        with open(path + ".part", "w") as f:
            for start in range(0, count, 10000):
                f.write("".join('{"token":"%s"}\n' % token(n) for n in range(start, min(count, start + 10000))))
        os.rename(path + ".part", path)

    def chunks():
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk: return
                yield chunk
    c = connect(port)
    start = time.monotonic()
    c.request("POST", "/v1/apps/%s/devices" % app, body=chunks(), headers={"Authorization": "Bearer " + key, "Content-Type": "application/x-ndjson", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    r = c.getresponse()
    report = json.loads(r.read())
    elapsed = time.monotonic() - start
    assert r.status == 200 and report["upserted"] == count, report
    return {"seconds": elapsed, "rate": count / elapsed}


def broadcast(port, key, app, count, serve_pid, mock_pid, extra=(), profile=None):
    with Recorder(profile, serve_pid):
        return broadcast_once(port, key, app, count, serve_pid, mock_pid, extra)


def broadcast_once(port, key, app, count, serve_pid, mock_pid, extra):
    c = connect(port)
    body = json.dumps({"to": {"all": True}, "payload": {"aps": {"alert": "Herald benchmark: a short alert body of about one hundred bytes."}}})
    meter, start = Meter(serve_pid, False, mock_pid, extra), time.monotonic()
    status, queued = call(c, "POST", "/v1/apps/%s/notifications" % app, body, key)
    assert status == 202, (status, queued)
    deadline = start + float(os.environ.get("BROADCAST_TIMEOUT", "900"))
    while True:
        status, n = call(c, "GET", "/v1/notifications/" + queued["id"], key=key)
        assert status == 200, (status, n)
        if n["status"] in ("done", "cancelled") or time.monotonic() > deadline: break
        time.sleep(0.02)
    elapsed = time.monotonic() - start
    cpu = meter.done(max(1, n["targeted"]), elapsed)
    rejected = sum(n["rejected"].values()) if isinstance(n["rejected"], dict) else n["rejected"]
    problems = []
    if n["status"] != "done": problems.append("status %s after %.0f s" % (n["status"], elapsed))
    if n["targeted"] != count: problems.append("targeted %d" % n["targeted"])
    if n["accepted"] != count: problems.append("accepted %d" % n["accepted"])
    for field in ("pending", "failed", "optedOut", "capped", "digested"):
        if n.get(field, 0): problems.append("%s %d" % (field, n[field]))
    if rejected: problems.append("rejected %s" % n["rejected"])
    return {"app": app, "id": queued["id"], "seconds": elapsed, "rate": n["targeted"] / elapsed, "cpu_us": cpu["gateway_us"],
            "mock_us": cpu["mock_us"], "busy": cpu["busy"], "others_cores": cpu["others_cores"], "database_cores": cpu["database_cores"],
            "gateway_cores": cpu["gateway_cores"], "extra_cores": cpu["extra_cores"],
            "accepted": n["accepted"], "pending": n.get("pending", 0), "failed": n.get("failed", 0), "rejected": rejected, "problems": problems}


def receipts_of(port, key, notification):
    status, n = call(connect(port), "GET", "/v1/notifications/" + notification, key=key)
    assert status == 200, (status, n)
    return n["receipts"]


class Recorder:
    """`perf record -g` of the gateway while in use, to `path` (nothing when `path` is empty)."""
    def __init__(self, path, pid):
        self.path, self.pid, self.process = path, pid, None

    def __enter__(self):
        if self.path:
            self.process = subprocess.Popen(["perf", "record", "-g", "-o", self.path, "-p", str(self.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        return self

    def __exit__(self, *_):
        if self.process:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()


def ingest_pass(port, bodies, concurrency, serve_pid, postgres, label, rate=None, profile=None):
    """Each body (JSON bytes, with its number of events) once, as fast as the connections go or
    at `rate` events/s; every answer must be 202 with all taken. `profile`: a perf.data path,
    the gateway recorded (perf record -g) over the pass."""
    requests = [(receipt_request(b), n) for b, n in bodies]
    events = sum(n for _, n in bodies)
    statuses, bad, bad_count = collections.Counter(), [], [0]
    expected = {n: b'{"taken":%d,"refused":[]}' % n for n in set(n for _, n in bodies)}

    def on_response(status, body, n):
        statuses[status] += 1
        if status != 202 or body != expected[n]:
            try:
                answer = json.loads(body)
            except ValueError:
                answer = body[:200]
            if not (status == 202 and isinstance(answer, dict) and answer.get("taken") == n and not answer.get("refused")):
                if len(bad) < 5: bad.append((status, answer))
                bad_count[0] += 1
    it = iter(requests)
    per_request = events / max(1, len(requests))
    with Recorder(profile, serve_pid):
        meter = Meter(serve_pid, postgres)
        elapsed, latencies, reopened = load(port, lambda: next(it, None), concurrency, on_response, max_seconds=600,
                                            rate=rate / per_request if rate else None)
    result = {"pass": label, "events": events, "requests": len(requests), "seconds": elapsed, "rate": events / elapsed, "paced": rate,
              "request_rate": len(requests) / elapsed, "p50": pick(latencies, 0.5), "p95": pick(latencies, 0.95), "p99": pick(latencies, 0.99),
              "max": pick(latencies, 1.0), "statuses": dict(statuses), "reopened": reopened, "bad": bad_count[0], "bad_examples": bad}
    result.update(meter.done(events, elapsed))
    print("  %s: %.0f events/s, p50 %.1f ms, p99 %.1f ms; gateway %.2f cores, generator %.2f cores, other %.2f cores"
          % (label, result["rate"], result["p50"], result["p99"], result["gateway_cores"], result["generator_cores"], result["others_cores"]), file=sys.stderr, flush=True)
    return result


def batches(receipts):
    return [(batch_body(receipts[i:i + 100]), len(receipts[i:i + 100])) for i in range(0, len(receipts), 100)]


def do_ingest(port, key, notification, app, database, count, batched, single, paced, target, concurrency, serve_pid):
    postgres = not database.startswith("sqlite:")
    handful = 5
    total = handful + batched + single + 2 * paced
    assert total <= count, "5 + BATCHED + SINGLE + 2 PACED must be at most the devices"
    t = time.monotonic()
    receipts = make_receipts(database, app, notification, range(total))
    made = time.monotonic() - t
    print("  made %d receipts in Python in %.1f s" % (len(receipts), made), file=sys.stderr, flush=True)
    out = {"made_seconds": made, "passes": []}
    # 1. The handful: proves the receipts made here are the gateway's.
    c = connect(port)
    status, answer = call(c, "POST", "/v1/receipts", batch_body(receipts[:handful]))
    assert status == 202 and answer == {"taken": handful, "refused": []}, ("the handful", status, answer)
    status, answer = call(c, "POST", "/v1/receipts", single_body(receipts[0]))  # a replay, alone
    assert status == 202 and answer == {"taken": 1, "refused": []}, ("a replay", status, answer)
    got = receipts_of(port, key, notification)["received"]
    assert got == handful, "received %d after the handful of %d" % (got, handful)
    out["handful"] = "%d of %d taken, a replay taken, received %d" % (handful, handful, got)
    print("  handful: %d receipts made here taken (202), notification received = %d" % (handful, got), file=sys.stderr, flush=True)
    at = handful
    part = lambda n: receipts[at:at + n]
    # 2. As fast as CONCURRENCY connections go: batches of 100, then single events; distinct devices.
    out["passes"].append(ingest_pass(port, batches(part(batched)), concurrency, serve_pid, postgres, "batches of 100"))
    at += batched
    out["passes"].append(ingest_pass(port, [(single_body(r), 1) for r in part(single)], concurrency, serve_pid, postgres, "single events",
                                     profile=os.environ.get("PERF_DATA")))
    at += single
    # 3. At the target rate (latency from when each request was due).
    if paced:
        out["passes"].append(ingest_pass(port, batches(part(paced)), concurrency, serve_pid, postgres, "batches of 100 at %d/s" % target, rate=target))
        at += paced
        out["passes"].append(ingest_pass(port, [(single_body(r), 1) for r in part(paced)], concurrency, serve_pid, postgres, "single events at %d/s" % target, rate=target))
        at += paced
    received_before_replay = receipts_of(port, key, notification)["received"]
    # 4. Replays of every receipt of 2 and 3, in batches of 100: taken, counted no more.
    out["passes"].append(ingest_pass(port, batches(receipts[handful:total]), concurrency, serve_pid, postgres, "replays, batches of 100"))
    received = receipts_of(port, key, notification)
    expected = total
    out.update({"expected_received": expected, "received_before_replay": received_before_replay, "received": received["received"],
                "other_events": {k: v for k, v in received.items() if k != "received"}})
    problems = []
    if received_before_replay != expected: problems.append("received %d before the replays, expected %d" % (received_before_replay, expected))
    if received["received"] != expected: problems.append("received %d after the replays, expected %d" % (received["received"], expected))
    if any(received.get(k) for k in ("opened", "dismissed", "clicked")): problems.append("other events counted: %s" % received)
    for p in out["passes"]:
        if p["bad"]: problems.append("%s: %d answers not 202 with all taken, e.g. %s" % (p["pass"], p["bad"], p["bad_examples"][:2]))
    out["problems"] = problems
    return out


def flood_pool(database, app, notification, count, path):
    """Requests of forged receipts: random 48-character base64url ones, and receipts made for real
    devices with one bit of bytes 2..35 flipped; batches of 100 (half each) and single ones."""
    rng = random.Random(45)
    valid = make_receipts(database, app, notification, rng.sample(range(count), min(count, 2000)))
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    def forged_random():
        return "".join(rng.choice(alphabet) for _ in range(48))

    def altered():
        raw = bytearray(base64.urlsafe_b64decode(rng.choice(valid)))
        raw[rng.randrange(2, 36)] ^= 1 << rng.randrange(8)
        return base64.urlsafe_b64encode(bytes(raw)).decode()
    events = ["received", "opened", "dismissed"]
    with open(path, "wb") as f:
        for n in range(2000):
            kind = n % 4
            if kind in (0, 2):
                body = json.dumps({"events": [{"receipt": forged_random() if i % 2 else altered(), "event": rng.choice(events)} for i in range(100)]}, separators=(",", ":")).encode()
                size = 100
            elif kind == 1:
                body, size = single_body(forged_random(), rng.choice(events)), 1
            else:
                body, size = single_body(altered(), rng.choice(events)), 1
            f.write(b"%d %d\n" % (size, len(body)) + body + b"\n")


def do_flood(port, concurrency, pool_path, max_seconds):
    pool = []
    with open(pool_path, "rb") as f:
        while True:
            line = f.readline()
            if not line: break
            size, length = map(int, line.split())
            body = f.read(length)
            f.readline()
            pool.append((receipt_request(body), size))
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    statuses, counted = collections.Counter(), [0, 0]
    n = [0]
    started = time.monotonic()

    def source():
        if stop[0] or time.monotonic() - started > max_seconds: return None
        n[0] += 1
        return pool[n[0] % len(pool)]

    def on_response(status, body, size):
        statuses[status] += 1
        counted[0] += 1
        counted[1] += size
    cpu0 = cpu_self()
    elapsed, latencies, reopened = load(port, source, concurrency, on_response, max_seconds + 60,
                                        ready=lambda: (print("ready", flush=True)), spread=False)
    print(json.dumps({"seconds": elapsed, "requests": counted[0], "events": counted[1], "statuses": {str(k): v for k, v in statuses.items()},
                      "p50": pick(latencies, 0.5), "p99": pick(latencies, 0.99), "reopened": reopened,
                      "cpu_cores": (cpu_self() - cpu0) / elapsed}), flush=True)


def summary_latencies(port, key, app, n=200):
    c = connect(port)
    lat, bad = [], 0
    for _ in range(n):
        t = time.perf_counter()
        status, answer = call(c, "GET", "/v1/apps/%s/summary" % app, key=key)
        lat.append(time.perf_counter() - t)
        if status != 200: bad += 1
        time.sleep(0.005)
    return {"p50": pick(lat, 0.5), "p99": pick(lat, 0.99), "failed": bad, "devices": answer["devices"]["total"] if status == 200 else None}


def refused_metrics(port):
    status, text = 0, ""
    c = connect(port)
    c.request("GET", "/metrics")
    r = c.getresponse()
    text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("herald_receipts_refused_total{"):
            labels, value = line.rsplit(" ", 1)
            out[labels[labels.find('reason="') + 8:].split('"')[0]] = int(float(value))
    return out


def do_hostile(port, key, app_b, count, notification, app_a, database, concurrency, serve_pid, mock_pid, received, work):
    out = {}
    # B's broadcast alone, right before the flooded one and right after it.
    print("  broadcast of %s, no flood" % app_b, file=sys.stderr, flush=True)
    out["quiet"] = broadcast(port, key, app_b, count, serve_pid, mock_pid)
    out["summary_quiet"] = summary_latencies(port, key, app_b)
    # B's broadcast under a flood of forged receipts, in a process of its own.
    pool = os.path.join(work, "flood-pool")
    flood_pool(database, app_a, notification, count, pool)
    metrics0 = refused_metrics(port)
    flood = subprocess.Popen([sys.executable, __file__, "flood", str(port), str(concurrency), pool, "600"], stdout=subprocess.PIPE, text=True)
    try:
        assert flood.stdout.readline().strip() == "ready", "the flood did not start"
        time.sleep(1.0)  # at full speed before the broadcast starts
        print("  broadcast of %s under the flood" % app_b, file=sys.stderr, flush=True)
        during0 = refused_metrics(port)
        out["flooded"] = broadcast(port, key, app_b, count, serve_pid, mock_pid, extra=[flood.pid])
        during1 = refused_metrics(port)
        out["flooded"]["refused_per_second"] = sum(during1.values()) - sum(during0.values())
        out["flooded"]["refused_per_second"] /= out["flooded"]["seconds"]
        out["summary_flood"] = summary_latencies(port, key, app_b)
    finally:
        flood.send_signal(signal.SIGTERM)
        try:
            line = flood.stdout.readline()
            flood.wait(timeout=120)
        except subprocess.TimeoutExpired:
            flood.kill()
            raise
    out["flood"] = json.loads(line)
    metrics1 = refused_metrics(port)
    print("  broadcast of %s, no flood, again" % app_b, file=sys.stderr, flush=True)
    out["quiet_after"] = broadcast(port, key, app_b, count, serve_pid, mock_pid)
    out["refused_by_reason"] = {k: metrics1.get(k, 0) - metrics0.get(k, 0) for k in sorted(set(metrics0) | set(metrics1))}
    # The bounds, once each.
    c = connect(port)
    too_many = batch_body(make_receipts(database, app_a, notification, range(101)))
    status, answer = call(c, "POST", "/v1/receipts", too_many)
    out["oversized_batch"] = [status, (answer or {}).get("error", {}).get("code") if isinstance(answer, dict) else answer]
    big = b'{"receipt": "' + b"A" * 48 + b'", "event": "received"' + b" " * (33 * 1024) + b"}"
    c = connect(port)
    status, answer = call(c, "POST", "/v1/receipts", big)
    out["oversized_body"] = [status, (answer or {}).get("error", {}).get("code") if isinstance(answer, dict) else answer]
    after = receipts_of(port, key, notification)["received"]
    problems = []
    for name in ("quiet", "flooded", "quiet_after"):
        if out[name]["problems"]: problems.append("%s broadcast: %s" % (name, "; ".join(out[name]["problems"])))
    bad = {k: v for k, v in out["flood"]["statuses"].items() if k not in ("403", "429")}
    if bad: problems.append("flood answers other than 403/429: %s" % bad)
    if out["oversized_batch"][0] != 400: problems.append("101 events: %s" % out["oversized_batch"])
    if out["oversized_body"][0] != 413: problems.append("a body over 32 KiB: %s" % out["oversized_body"])
    if after != received: problems.append("received %d after the flood, %d before" % (after, received))
    for name in ("summary_quiet", "summary_flood"):
        if out[name]["failed"]: problems.append("%s: %d summaries failed" % (name, out[name]["failed"]))
    out["received_after"] = after
    out["problems"] = problems
    return out


# --- the table ----------------------------------------------------------------------------------

def table(paths):
    cases = [json.load(open(p)) for p in paths]
    missed = []
    failures = sum(len(case.get("problems", [])) for case in cases)
    mean = lambda xs, f: sum(x[f] for x in xs) / len(xs)
    first = cases[0]
    print()
    print("Receipts benchmark: %d devices per app, %d round(s), %d connections; %d cores; 'other c' = cores busy outside the gateway, mock, PostgreSQL and generator"
          % (first["devices"], first["rounds"], first["concurrency"], os.cpu_count()))
    print()
    print("1. Broadcast to all devices, receipts on vs off (one gateway; apps `on` and `off` identical but for receipts.enabled)")
    print("%-22s %-2s %-4s %8s %10s %11s %11s %6s %7s  %s" % ("case", "#", "app", "seconds", "devices/s", "gw µs/dev", "mock µs/dev", "busy%", "other c", "check"))
    for case in cases:
        for i, b in enumerate(case["broadcasts"], 1):
            print("%-22s %-2d %-4s %8.2f %10.0f %11.2f %11.2f %6.0f %7.2f  %s" % (
                case["label"], i, b["app"], b["seconds"], b["rate"], b["cpu_us"], b["mock_us"], b["busy"], b["others_cores"],
                "ok: accepted %d, pending %d, failed %d, rejected %d" % (b["accepted"], b["pending"], b["failed"], b["rejected"]) if not b["problems"] else "FAILED: " + "; ".join(b["problems"])))
    print("%-22s %10s %10s %12s %10s %10s %10s  %s" % ("case", "on dev/s", "off dev/s", "ratio on÷off", "on µs/dev", "off µs/dev", "CPU on÷off", "mock's count"))
    for case in cases:
        on = [b for b in case["broadcasts"] if b["app"] == "on"]
        off = [b for b in case["broadcasts"] if b["app"] == "off"]
        ratio = mean(on, "rate") / mean(off, "rate")
        print("%-22s %10.0f %10.0f %12.3f %10.2f %10.2f %10.3f  %s" % (case["label"], mean(on, "rate"), mean(off, "rate"), ratio, mean(on, "cpu_us"), mean(off, "cpu_us"),
                                                                      mean(on, "cpu_us") / mean(off, "cpu_us"), case["mock_check"]))
        if ratio < 0.95: missed.append("%s: broadcast rate on÷off %.3f < 0.95" % (case["label"], ratio))
    print()
    print("2. Receipt ingestion, POST /v1/receipts, %d keep-alive connections, no key; receipts made in Python from the spec; latency per request" % first["concurrency"])
    print("%-22s %-28s %7s %8s %9s %7s %6s %6s %6s %8s %8s %6s %6s %6s  %s" % (
        "case", "pass", "events", "requests", "events/s", "req/s", "p50ms", "p95ms", "p99ms", "gw µs/ev", "db µs/ev", "gw c", "gen c", "other c", "answers"))
    for case in cases:
        ing = case["ingest"]
        for p in ing["passes"]:
            print("%-22s %-28s %7d %8d %9.0f %7.0f %6.1f %6.1f %6.1f %8.1f %8s %6.2f %6.2f %6.2f  %s" % (
                case["label"], p["pass"], p["events"], p["requests"], p["rate"], p["request_rate"], p["p50"], p["p95"], p["p99"], p["gateway_us"],
                "%.1f" % p["database_us"] if p["database_us"] is not None else "-", p["gateway_cores"], p["generator_cores"], p["others_cores"],
                ", ".join("%s×%d" % kv for kv in sorted(p["statuses"].items())) + (" (%d bad)" % p["bad"] if p["bad"] else "")))
            if p["pass"].startswith("replays"): continue
            if not p.get("paced") and p["rate"] < 20000: missed.append("%s, %s: %.0f events/s < 20,000" % (case["label"], p["pass"], p["rate"]))
            if p.get("paced") and p["rate"] < 0.95 * p["paced"]: missed.append("%s, %s: only %.0f events/s" % (case["label"], p["pass"], p["rate"]))
            if p["p99"] > 50: missed.append("%s, %s: p99 %.1f ms > 50" % (case["label"], p["pass"], p["p99"]))
        print("%-22s receipts.received: %d after the handful, the passes and the paced ones (expected %d); %d after the replays; %s; receipts made in %.1f s"
              % (case["label"], ing["received_before_replay"], ing["expected_received"], ing["received"], ing["handful"], ing["made_seconds"]))
    print()
    print("3. Hostile: app `off`'s broadcast alone and under a flood of forged receipts (random 48-char base64url, and real ones with a bit flipped;")
    print("   batches of 100 and single) from %d connections (its process's CPU: flood c); B alone right before and right after; ratio = flooded ÷ their mean;" % first["concurrency"])
    print("   gw µs/d = the gateway's CPU per device of B (under the flood, the flood's handling included); keyed GET /v1/apps/off/summary ×200 (ms) alone, then under the flood")
    print("%-22s %9s %9s %9s %6s %8s %8s %8s %8s %10s %12s %13s" % ("case", "B alone/s", "B flood/s", "B alone/s", "ratio", "gw µs/d", "flooded", "flood c", "other c", "refused/s", "summary 50/99", "under flood"))
    for case in cases:
        h = case["hostile"]
        f = h["flood"]
        q, fl, qa = h["quiet"], h["flooded"], h["quiet_after"]
        quiet = (q["rate"] + qa["rate"]) / 2
        print("%-22s %9.0f %9.0f %9.0f %6.3f %8.2f %8.2f %8.2f %8.2f %10.0f %5.1f/%-6.1f %5.1f/%-6.1f" % (
            case["label"], q["rate"], fl["rate"], qa["rate"], fl["rate"] / quiet, (q["cpu_us"] + qa["cpu_us"]) / 2, fl["cpu_us"], fl["extra_cores"], fl["others_cores"],
            fl["refused_per_second"], h["summary_quiet"]["p50"], h["summary_quiet"]["p99"], h["summary_flood"]["p50"], h["summary_flood"]["p99"]))
        print("%-22s flood: %d requests (%d receipts) in %.1f s, answers %s, answered p50 %.1f ms p99 %.1f ms; refused by reason (metrics): %s"
              % (case["label"], f["requests"], f["events"], f["seconds"], ", ".join("%s×%d" % kv for kv in sorted(f["statuses"].items())), f["p50"], f["p99"],
                 ", ".join("%s %d" % kv for kv in h["refused_by_reason"].items())))
        print("%-22s 101 events -> %s %s; a body over 32 KiB -> %s %s; receipts.received after the flood %d (before %d)"
              % (case["label"], h["oversized_batch"][0], h["oversized_batch"][1], h["oversized_body"][0], h["oversized_body"][1], h["received_after"], case["ingest"]["received"]))
    print()
    for case in cases:
        for p in case.get("problems", []): print("CHECK FAILED, %s: %s" % (case["label"], p))
    for m in missed: print("TARGET MISSED, %s" % m)
    if not missed: print("all targets met")
    print("all checks ok" if not failures else "%d check(s) FAILED" % failures)
    return 1 if failures else 0


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "import":
        print(json.dumps(do_import(int(args[0]), args[1], args[2], int(args[3]), args[4])))
    elif mode == "broadcast":
        print(json.dumps(broadcast(int(args[0]), args[1], args[2], int(args[3]), args[4], args[5], profile=os.environ.get("PERF_DATA"))))
    elif mode == "ingest":
        print(json.dumps(do_ingest(int(args[0]), args[1], args[2], args[3], args[4], int(args[5]), int(args[6]), int(args[7]), int(args[8]), int(args[9]), int(args[10]), args[11])))
    elif mode == "hostile":
        print(json.dumps(do_hostile(int(args[0]), args[1], args[2], int(args[3]), args[4], args[5], args[6], int(args[7]), args[8], args[9], int(args[10]), args[11])))
    elif mode == "flood":
        do_flood(int(args[0]), int(args[1]), args[2], float(args[3]))
    elif mode == "table":
        sys.exit(table(args))
    else:
        sys.exit("unknown mode %s" % mode)


if __name__ == "__main__":
    main()
