#!/usr/bin/env python3
"""Herald's browser kit (/sdk/herald-sw.js and /sdk/herald-page.js) in headless Chromium, against a real `herald serve`.

Starts `herald serve` with a browser-only app (Web Push, VAPID) in a temporary directory, a push
service of its own and a team's site of its own (a page, its service worker and a backend route,
on another origin than the gateway), then in Chromium: the page subscribes with
HeraldPage.subscribe, its backend registers the subscription with the gateway; a notification
sent through the API reaches the push service, which decrypts it as the browser would; that
exact message is delivered to the service worker with the DevTools protocol; the kit shows it
and reports `received`, a click `clicked` and a close `dismissed` to POST /v1/receipts
(cross-origin, so through the gateway's CORS), which the notification's counts and funnel show.
A second delivery is not counted twice, a forged receipt is refused, markup stays text.

The push service is the test's own (Python, RFC 8291 and 8292): `herald mock`'s Web Push
service decrypts each message too, but keeps it in its own process, with no route to read it
back. Headless Chromium has no push service to subscribe at, so the page's PushManager is
stood in for (add_init_script) by one that returns the push service's subscription; everything
after it, the kit and the gateway, is real. Everything it starts it stops, by PID.

    python3 Tests/Browser/receipts_test.py --herald .build/debug/herald
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import http.server
import ipaddress
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

# The whole run, set-up to clean-up; each wait inside has its own, shorter, bound.
RUN_SECONDS = 170
WAIT_SECONDS = 15

APP = "shop"
USER = "wendy"
KEY = "hk_receipts-test-" + os.urandom(8).hex()
XSS = "<img src=x onerror=alert(1)>"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SDK = os.path.join(ROOT, "Sources", "HeraldGateway", "SDK")
TOKEN = re.compile(r"^[A-Za-z0-9_-]{48}$")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def eventually(probe, what, timeout=WAIT_SECONDS, every=0.1):
    """probe()'s first truthy value within timeout seconds; fails saying what was awaited and the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise Failure(f"{what}: not within {timeout} s (last: {value!r})")


class Process:
    """A child process; its output is read by a thread, so waiting for a line has a deadline."""

    def __init__(self, name, args, cwd):
        self.name = name
        # The database is the configuration file's: a URL in the environment would win over it.
        environment = {name: value for name, value in os.environ.items() if name not in ("HERALD_DATABASE_URL", "PGPASSWORD")}
        self.popen = subprocess.Popen(args, cwd=cwd, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1)
        self.lines = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.popen.stdout:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for line in self.lines:
                    match = re.search(pattern, line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                if self.popen.poll() is not None:
                    raise Failure(f"{self.name} exited ({self.popen.returncode}) before printing /{pattern}/:\n{self.tail()}")
                if left <= 0:
                    raise Failure(f"{self.name} printed no /{pattern}/ within {timeout} s:\n{self.tail()}")
                self.changed.wait(min(left, 0.5))

    def tail(self, count=30):
        return "\n".join(f"  | {line}" for line in self.lines[-count:])

    def stop(self):
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)


def request(url, method="GET", body=None, headers=None, key=KEY):
    """One HTTP request; (status, raw body, headers). No Authorization header when key is None."""
    data = body.encode() if isinstance(body, str) else body
    headers = dict(headers or {})
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=15) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def call(base, method, path, body=None, key=KEY, headers=None):
    """One API request; (status, JSON answer or None, headers)."""
    status, raw, answer_headers = request(base + path, method, body, dict({"Content-Type": "application/json"}, **(headers or {})), key)
    try:
        return status, json.loads(raw) if raw else None, answer_headers
    except ValueError:
        return status, raw.decode(errors="replace"), answer_headers


# MARK: The push service (RFC 8030), which is also the browser: it holds each subscription's keys.

def write_tls(directory):
    """A CA (its PEM is the app's webPush.caFile) and a certificate it issued for 127.0.0.1."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "receipts test push service CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, name) for name in ("push-ca.pem", "push-cert.pem", "push-key.pem")}
    with open(paths["push-ca.pem"], "wb") as file:
        file.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["push-cert.pem"], "wb") as file:
        file.write(leaf.public_bytes(serialization.Encoding.PEM))
    with open(paths["push-key.pem"], "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


def hkdf_sha256(salt, secret, info, length):
    """HKDF (RFC 5869) with one block, as RFC 8291 uses it."""
    prk = hmac.new(salt, secret, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()[:length]


def decrypt(body, private_key, auth_secret):
    """An aes128gcm message (RFC 8188) for this subscription, as a browser decrypts it (RFC 8291 §3.4)."""
    check(len(body) > 86, f"a message of {len(body)} bytes")
    salt, record_size, id_length = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    check(id_length == 65, f"key ID of {id_length} bytes, not an uncompressed P-256 key")
    sender = body[21:86]
    ciphertext = body[86:]
    check(len(ciphertext) <= record_size, "more than one record")
    receiver = private_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    shared = private_key.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sender))
    ikm = hkdf_sha256(auth_secret, shared, b"WebPush: info\x00" + receiver + sender, 32)
    key = hkdf_sha256(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf_sha256(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    padded = AESGCM(key).decrypt(nonce, ciphertext, None).rstrip(b"\x00")
    check(padded.endswith(b"\x02"), "the record does not end with the last-record delimiter 0x02")
    return padded[:-1]


def verify_vapid(authorization, origin, application_server_key):
    """RFC 8292: `vapid t=<ES256 JWT>, k=<key>`, the key the subscription was made with, aud the origin, exp within 24 h, a sub."""
    fields = dict(re.findall(r"\b([tk])=([A-Za-z0-9_.-]+)", authorization or ""))
    check((authorization or "").startswith("vapid ") and set(fields) == {"t", "k"}, f"Authorization: {authorization!r}")
    check(fields["k"] == application_server_key, "k is not the applicationServerKey the subscription was made with")
    header, claims, signature = fields["t"].split(".")
    raw = unb64url(signature)
    check(len(raw) == 64, "the JWT's signature is not 64 bytes (r ‖ s)")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(fields["k"]))
    try:
        public.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                      f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Failure("the VAPID JWT's signature does not verify with k")
    check(json.loads(unb64url(header)) == {"typ": "JWT", "alg": "ES256"}, f"JWT header {unb64url(header)!r}")
    claims = json.loads(unb64url(claims))
    check(claims.get("aud") == origin, f"aud {claims.get('aud')!r}, not {origin}")
    check(time.time() < claims.get("exp", 0) <= time.time() + 86400 + 60, f"exp {claims.get('exp')}")
    check(str(claims.get("sub", "")).startswith(("mailto:", "https:")), f"sub {claims.get('sub')!r}")


class TLSServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server whose TLS handshake runs in each connection's thread."""
    daemon_threads = True

    def __init__(self, handler, context):
        super().__init__(("127.0.0.1", 0), handler)
        self.context = context

    def finish_request(self, request, client_address):
        request.settimeout(10)
        try:
            connection = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            self.RequestHandlerClass(connection, client_address, self)
        finally:
            connection.close()


class PushService:
    """POST /push/{id}: checks VAPID and the headers, decrypts with the subscription's keys and keeps the plaintext."""

    def __init__(self, tls, application_server_key):
        self.application_server_key = application_server_key
        self.subscriptions = {}  # id -> (private key, auth secret)
        self.messages = {}  # id -> [plaintext bytes]
        self.problems = []
        self.lock = threading.Lock()
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def answer(self, status, body=b"", headers=()):
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                match = re.fullmatch(r"/push/([A-Za-z0-9_-]+)", self.path)
                keys = service.subscriptions.get(match.group(1)) if match else None
                if keys is None:
                    return self.answer(404, b'{"reason":"NotFound"}', [("Content-Type", "application/json")])
                try:
                    check(self.headers.get("TTL", "").isdigit(), f"TTL {self.headers.get('TTL')!r}")
                    check(self.headers.get("Content-Encoding") == "aes128gcm", f"Content-Encoding {self.headers.get('Content-Encoding')!r}")
                    verify_vapid(self.headers.get("Authorization"), service.origin, service.application_server_key)
                    plaintext = decrypt(body, *keys)
                except (Failure, ValueError) as error:
                    with service.lock:
                        service.problems.append(f"POST {self.path}: {error}")
                    return self.answer(400, json.dumps({"reason": str(error)[:200]}).encode(), [("Content-Type", "application/json")])
                with service.lock:
                    service.messages.setdefault(match.group(1), []).append(plaintext)
                self.answer(201, headers=[("Location", f"/message/{uuid.uuid4()}")])

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls["push-cert.pem"], tls["push-key.pem"])
        # HTTP/1.1 only: Herald's client falls back to it when a service refuses h2 by ALPN.
        context.set_alpn_protocols(["http/1.1"])
        self.server = TLSServer(Handler, context)
        self.origin = f"https://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def subscribe(self):
        """A new subscription, as subscription.toJSON() gives it; its keys stay here."""
        identifier = b64url(os.urandom(16))
        private_key = ec.generate_private_key(ec.SECP256R1())
        auth_secret = os.urandom(16)
        self.subscriptions[identifier] = (private_key, auth_secret)
        public = private_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return identifier, {"endpoint": f"{self.origin}/push/{identifier}", "expirationTime": None,
                            "keys": {"p256dh": b64url(public), "auth": b64url(auth_secret)}}

    def received(self, identifier):
        with self.lock:
            return list(self.messages.get(identifier, []))

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


# MARK: The team's site: a page, its service worker and its backend, on an origin of its own.

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>A team's site</title>
<script src="{gateway}/sdk/herald-page.js"></script>
<p>Herald's browser kit, under test.</p>
"""

# Before the kit: the test's instrumentation (not part of the kit), what the kit showed and how
# the gateway answered each of its reports, for the test to wait on. Reading getNotifications()
# while a notification is being shown can miss that one in Chromium, so the test reads it only
# after showNotification() resolved.
SERVICE_WORKER = """self.shown = [];
self.reports = [];
const realShow = ServiceWorkerRegistration.prototype.showNotification;
ServiceWorkerRegistration.prototype.showNotification = function (title, options) {{
  return realShow.call(this, title, options).then((value) => {{
    self.shown.push({{ title, herald: options && options.data ? options.data.herald : undefined }});
    return value;
  }});
}};
const realFetch = self.fetch.bind(self);
self.fetch = (url, init) => realFetch(url, init).then(
  (response) => {{
    response.clone().text().then((text) => self.reports.push({{ url: String(url), body: init && init.body, status: response.status, answer: text }}));
    return response;
  }},
  (error) => {{ self.reports.push({{ url: String(url), body: init && init.body, status: String(error) }}); throw error; }});

importScripts('{gateway}/sdk/herald-sw.js');
HeraldSW.init({{ gateway: '{gateway}' }});

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
"""

# Headless Chromium subscribes nowhere ("Registration failed"): PushManager stood in for by one
# that hands out the push service's subscription, and remembers how it was asked.
STAND_IN_PUSH_MANAGER = """(() => {{
  const made = {subscription};
  let current = null;
  window.pushCalls = [];
  PushManager.prototype.getSubscription = function () {{
    window.pushCalls.push({{ call: 'getSubscription' }});
    return Promise.resolve(current);
  }};
  PushManager.prototype.subscribe = function (options) {{
    const key = new Uint8Array(options.applicationServerKey);
    window.pushCalls.push({{ call: 'subscribe', userVisibleOnly: options.userVisibleOnly, applicationServerKey: Array.from(key) }});
    current = {{
      endpoint: made.endpoint, expirationTime: null, options: {{ userVisibleOnly: true, applicationServerKey: key.buffer }},
      toJSON: () => JSON.parse(JSON.stringify(made)),
      unsubscribe: () => {{ current = null; return Promise.resolve(true); }},
    }};
    return Promise.resolve(current);
  }};
}})();"""


class Site:
    """The team's site on 127.0.0.1 (another origin than the gateway's): its backend forwards a subscription with its API key."""

    def __init__(self, gateway):
        self.forwarded = []  # (what the page posted, the gateway's status, its answer)
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def answer(self, status, text, content_type):
                body = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/":
                    return self.answer(200, PAGE.format(gateway=gateway), "text/html; charset=utf-8")
                if self.path == "/sw.js":
                    return self.answer(200, SERVICE_WORKER.format(gateway=gateway), "text/javascript; charset=utf-8")
                self.answer(404, "not here", "text/plain")

            def do_POST(self):
                text = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.path != "/push/subscriptions":
                    return self.answer(404, "{}", "application/json")
                # What a team's backend does: the user is its signed-in user; the API key is its own.
                status, answer, _ = call(gateway, "POST", f"/v1/apps/{APP}/webpush/subscriptions", text)
                site.forwarded.append((json.loads(text), status, answer))
                self.answer(status, json.dumps(answer), "application/json")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


# MARK: The gateway

def write_vapid_key(directory):
    """A VAPID key (P-256, PKCS#8 PEM) and its public key as a page passes it to subscribe()."""
    key = ec.generate_private_key(ec.SECP256R1())
    path = os.path.join(directory, "vapid.pem")
    with open(path, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return path, b64url(key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))


def write_configuration(directory, vapid, push_ca):
    # A browser-only app: Web Push and no APNs credentials (docs/webpush.md).
    configuration = {
        "listen": "127.0.0.1:0",
        "database": "sqlite:" + os.path.join(directory, "herald.db"),
        "apps": [{"id": APP, "webPush": {"vapidKeyFile": vapid, "subject": "mailto:ops@example.com",
                                         "defaultURL": "https://shop.example.com/", "caFile": push_ca,
                                         # The push service is on 127.0.0.1.
                                         "allowPrivateAddresses": True}}],
        "apiKeys": [{"name": "receipts-test", "sha256": hashlib.sha256(KEY.encode()).hexdigest(), "apps": [APP]}],
    }
    path = os.path.join(directory, "herald.json")
    with open(path, "w") as file:
        json.dump(configuration, file, indent=2)
    return path


def error_code(answer):
    """An error answer's code: the API's {"error": {"code": …, "message": …}}, or {"error": "…"}."""
    error = answer.get("error") if isinstance(answer, dict) else None
    return error.get("code") if isinstance(error, dict) else error


def forge(token):
    """The token with one character of its MAC (its last 10 bytes) changed: well-formed, not genuine."""
    index = 44
    return token[:index] + ("B" if token[index] != "B" else "C") + token[index + 1:]


class Run:
    def __init__(self, herald):
        self.herald = os.path.abspath(herald)
        self.processes = []
        self.number = 0
        self.problems = []  # dialogs, script errors, console errors: reported at the end
        self.push = None
        self.site = None

    def step(self, text):
        self.number += 1
        print(f"[{self.number:2d}] {text}", flush=True)

    def run(self):
        directory = tempfile.mkdtemp(prefix="herald-receipts-test-")
        try:
            self.start(directory)
            self.check_routes()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"], headless=True)
                try:
                    self.browse(browser)
                finally:
                    browser.close()
            check(not self.problems, "the page or its service worker misbehaved:\n  " + "\n  ".join(self.problems))
            check(not self.push.problems, "the push service refused a message:\n  " + "\n  ".join(self.push.problems))
        except BaseException:
            for process in self.processes:
                if process.lines:
                    print(f"--- last output of {process.name}:\n{process.tail(15)}", file=sys.stderr)
            raise
        finally:
            for process in reversed(self.processes):
                process.stop()
            for server in (self.site, self.push):
                if server:
                    server.stop()
            shutil.rmtree(directory, ignore_errors=True)

    def start(self, directory):
        self.step("start a push service (TLS, VAPID checked, messages decrypted), herald serve with a browser-only app, the team's site")
        vapid, self.application_server_key = write_vapid_key(directory)
        tls = write_tls(directory)
        self.push = PushService(tls, self.application_server_key)
        configuration = write_configuration(directory, vapid, tls["push-ca.pem"])
        serve = Process("herald serve", [self.herald, "serve", "--config", configuration], directory)
        self.processes.append(serve)
        self.base = serve.wait_for(r"listening on (http://127\.0\.0\.1:\d+)", 60).group(1)
        self.site = Site(self.base)
        check(self.site.origin != self.base, "the site and the gateway share an origin")
        print(f"     gateway {self.base}, push service {self.push.origin}, site {self.site.origin}", flush=True)

    def check_routes(self):
        self.step("GET /sdk/herald-sw.js and /sdk/herald-page.js without a key: the repository's files, as text/javascript")
        for name in ("herald-sw.js", "herald-page.js"):
            status, body, headers = request(f"{self.base}/sdk/{name}", key=None)
            check(status == 200, f"/sdk/{name}: {status} {body[:200]!r}")
            check(headers.get("Content-Type", "").replace(" ", "").lower() == "text/javascript;charset=utf-8",
                  f"/sdk/{name} Content-Type: {headers.get('Content-Type')}")
            with open(os.path.join(SDK, name), "rb") as file:
                check(body == file.read(), f"/sdk/{name} is not {os.path.join(SDK, name)} (a build older than the file?)")

        self.step("POST /v1/receipts without a key: CORS preflight answered, malformed 400, a made-up receipt 403 receiptRefused")
        status, _, headers = request(f"{self.base}/v1/receipts", "OPTIONS", key=None, headers={
            "Origin": self.site.origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
        check(200 <= status < 300 and headers.get("Access-Control-Allow-Origin") == "*", f"preflight: {status} {dict(headers)}")
        check("POST" in headers.get("Access-Control-Allow-Methods", "POST").upper(), f"preflight methods: {headers.get('Access-Control-Allow-Methods')}")
        status, answer, headers = call(self.base, "POST", "/v1/receipts", "{not json", key=None, headers={"Origin": self.site.origin})
        check(status == 400 and headers.get("Access-Control-Allow-Origin") == "*", f"malformed: {status} {answer} {headers.get('Access-Control-Allow-Origin')}")
        made_up = b64url(bytes([0x10, 0]) + os.urandom(34))
        status, answer, headers = call(self.base, "POST", "/v1/receipts", json.dumps({"receipt": made_up, "event": "received"}),
                                       key=None, headers={"Content-Type": "text/plain;charset=UTF-8", "Origin": self.site.origin})
        check(status == 403 and error_code(answer) == "receiptRefused", f"a made-up receipt: {status} {answer}")
        check(headers.get("Access-Control-Allow-Origin") == "*", "403 without Access-Control-Allow-Origin")

    # MARK: In the browser

    def watch(self, context, page):
        def on_dialog(dialog):
            self.problems.append(f"a {dialog.type} dialog opened: {dialog.message!r}")
            dialog.dismiss()

        def on_console(message):
            # The browser logs each 4xx answer; the test provokes them (a forged receipt).
            if message.type == "error" and not message.text.startswith("Failed to load resource: the server responded with a status of 4"):
                self.problems.append(f"console error: {message.text}")
            if message.type == "warning" and "HeraldSW" in message.text:
                self.problems.append(f"the kit warned: {message.text}")

        page.on("dialog", on_dialog)
        page.on("pageerror", lambda error: self.problems.append(f"script error: {error}"))
        context.on("console", on_console)

    def browse(self, browser):
        context = browser.new_context()
        # Notifications: showNotification needs them. Background sync: Chrome allows it by
        # default, Playwright's fresh context does not.
        context.grant_permissions(["notifications", "background-sync"], origin=self.site.origin)
        self.push_id, subscription = self.push.subscribe()
        context.add_init_script(STAND_IN_PUSH_MANAGER.format(subscription=json.dumps(subscription)))
        page = self.page = context.new_page()
        page.set_default_timeout(WAIT_SECONDS * 1000)
        self.watch(context, page)
        cdp = self.devtools = context.new_cdp_session(page)
        registrations = {}

        def on_registration(event):
            for registration in event["registrations"]:
                if not registration["isDeleted"]:
                    registrations[registration["scopeURL"]] = registration["registrationId"]

        cdp.on("ServiceWorker.workerRegistrationUpdated", on_registration)
        cdp.send("ServiceWorker.enable")

        self.step("the page (another origin) loads herald-page.js from the gateway; HeraldPage.subscribe registers /sw.js, "
                  "subscribes with the VAPID key, and its backend registers the subscription with the gateway for user wendy")
        response = page.goto(self.site.origin + "/")
        check(response.status == 200, f"the page: {response.status}")
        check(page.evaluate("typeof HeraldPage.subscribe") == "function", "HeraldPage is not loaded from the gateway")
        endpoint = page.evaluate("""(key) => HeraldPage.subscribe({ vapidPublicKey: key, serviceWorker: '/sw.js',
            backend: '/push/subscriptions', user: 'wendy' }).then((subscription) => subscription.endpoint)""", self.application_server_key)
        check(endpoint == subscription["endpoint"], f"subscribe() gave {endpoint}")
        calls = page.evaluate("window.pushCalls")
        check([call["call"] for call in calls] == ["getSubscription", "subscribe"], f"PushManager calls: {calls}")
        check(calls[1]["userVisibleOnly"] is True and bytes(calls[1]["applicationServerKey"]) == unb64url(self.application_server_key),
              f"subscribe() was asked {calls[1]}")
        check(len(self.site.forwarded) == 1, f"the backend was posted {len(self.site.forwarded)} times")
        posted, status, answer = self.site.forwarded[0]
        check(posted == dict(subscription, user=USER), f"the page posted {posted}")
        check(status == 201 and answer.get("platform") == "webpush", f"the gateway registered it: {status} {answer}")
        self.device = answer["token"]
        scope = self.site.origin + "/"
        self.registration = eventually(lambda: registrations.get(scope), "the service worker's registration ID")
        workers = eventually(lambda: [worker for worker in context.service_workers if worker.url == scope + "sw.js"], "the service worker")
        self.worker = workers[0]
        check(self.worker.evaluate("typeof HeraldSW.report") == "function", "HeraldSW is not loaded in the service worker")
        check(page.evaluate("navigator.serviceWorker.getRegistration().then((r) => r.active.state)") == "activated", "not activated")

        self.step("send a notification to wendy through the API: accepted by the push service; the message decrypts to "
                  "WebKit's declarative JSON with a 48-character receipt under \"herald\"")
        notification, message = self.send({"to": {"users": [USER]},
                                           "payload": {"aps": {"alert": {"title": "Your order shipped", "body": "Arrives Tuesday"}}, "order": 42},
                                           "webPush": {"navigate": "https://shop.example.com/orders/42"}})
        parsed = json.loads(message)
        token = parsed.get("herald")
        check(isinstance(token, str) and TOKEN.match(token), f"the message has no receipt: {message!r}")
        check(parsed.get("web_push") == 8030 and parsed["notification"] == {"title": "Your order shipped", "body": "Arrives Tuesday",
              "navigate": "https://shop.example.com/orders/42", "data": {"order": 42}}, f"the message: {message!r}")

        self.step("deliver that exact message to the service worker (DevTools' ServiceWorker.deliverPushMessage): the notification "
                  "is shown, the kit reports received cross-origin, the gateway counts it")
        self.deliver(message)
        self.wait_shown(token, 1)
        shown = self.notifications()
        check(len(shown) == 1 and shown[0]["title"] == "Your order shipped" and shown[0]["body"] == "Arrives Tuesday", f"shown: {shown}")
        check(shown[0]["data"] == {"order": 42, "herald": token, "url": "https://shop.example.com/orders/42"}, f"its data: {shown[0]['data']}")
        answer = self.wait_reports(token, "received", 1)[-1]
        check(answer["status"] == 202, f"the gateway answered the report {answer}")
        check(json.loads(answer["body"]) == {"receipt": token, "event": "received"}, f"the report: {answer['body']}")
        self.wait_counts(notification, received=1, clicked=0, dismissed=0)
        funnel = self.funnel(notification)
        check(funnel.get("sent") == 1 and funnel.get("accepted") == 1 and funnel.get("received") == 1, f"the funnel's webpush: {funnel}")

        self.step("click it (a notificationclick dispatched in the worker): closed, clicked reported and counted")
        self.worker.evaluate("""async () => {
            const [notification] = await self.registration.getNotifications();
            self.dispatchEvent(new NotificationEvent('notificationclick', { notification, action: '' }));
        }""")
        answer = self.wait_reports(token, "clicked", 1)[-1]
        check(answer["status"] == 202 and json.loads(answer["body"]) == {"receipt": token, "event": "clicked"}, f"the click's report: {answer}")
        self.wait_counts(notification, received=1, clicked=1, dismissed=0)
        check(self.notifications() == [], "the notification is still shown after the click")

        self.step("the same message delivered again: shown again and reported, received still 1; closing it: dismissed 1")
        self.deliver(message)
        self.wait_shown(token, 2)
        answer = self.wait_reports(token, "received", 2)[-1]
        check(answer["status"] in (200, 202), f"the gateway answered a repeated receipt {answer}")
        self.worker.evaluate("""async () => {
            const [notification] = await self.registration.getNotifications();
            notification.close();
            self.dispatchEvent(new NotificationEvent('notificationclose', { notification }));
        }""")
        self.wait_reports(token, "dismissed", 1)
        self.wait_counts(notification, received=1, clicked=1, dismissed=1)
        time.sleep(1)
        self.wait_counts(notification, received=1, clicked=1, dismissed=1, timeout=1)
        funnel = self.funnel(notification)
        check((funnel.get("received"), funnel.get("clicked"), funnel.get("dismissed")) == (1, 1, 1), f"the funnel's webpush: {funnel}")

        self.step("the message with its receipt forged (one character of its MAC changed): shown, reported, refused 403 "
                  "receiptRefused and dropped (not kept to retry); the counts stay")
        forged = forge(token)
        self.deliver(message.replace(token, forged))
        self.wait_shown(forged, 1)
        answer = self.wait_reports(forged, "received", 1)[-1]
        check(answer["status"] == 403 and error_code(json.loads(answer["answer"])) == "receiptRefused", f"the forged report: {answer}")
        check(self.outbox() == [], f"a refused receipt is kept: {self.outbox()}")
        self.wait_counts(notification, received=1, clicked=1, dismissed=1, timeout=1)
        self.close_all()

        self.step("a title and body of markup: shown as the same text, no dialog; its receipt counted on its own notification")
        markup, message = self.send({"to": {"users": [USER]}, "payload": {"aps": {"alert": {"title": XSS, "body": XSS + " &amp; <b>"}}}})
        markup_token = json.loads(message)["herald"]
        self.deliver(message)
        self.wait_shown(markup_token, 1)
        shown = self.notifications()
        check([(n["title"], n["body"]) for n in shown] == [(XSS, XSS + " &amp; <b>")], f"shown: {shown}")
        self.wait_reports(markup_token, "received", 1)
        self.wait_counts(markup, received=1, clicked=0, dismissed=0)
        self.close_all()

        self.step("a message given whole (webPush.payload, the classic shape): the receipt is added to it; the kit shows its "
                  "title, body and url and reports it")
        classic, message = self.send({"to": {"users": [USER]}, "payload": {"aps": {"alert": "unused"}},
                                      "webPush": {"payload": {"title": "Classic", "body": "Given whole", "url": "https://shop.example.com/c",
                                                              "data": {"k": 1}}}})
        parsed = json.loads(message)
        classic_token = parsed.pop("herald", None)
        check(isinstance(classic_token, str) and TOKEN.match(classic_token), f"no receipt in a message given whole: {message!r}")
        check(parsed == {"title": "Classic", "body": "Given whole", "url": "https://shop.example.com/c", "data": {"k": 1}}, f"the message: {message!r}")
        self.deliver(message)
        self.wait_shown(classic_token, 1)
        shown = self.notifications()
        check(len(shown) == 1 and shown[0]["title"] == "Classic" and shown[0]["body"] == "Given whole"
              and shown[0]["data"] == {"k": 1, "herald": classic_token, "url": "https://shop.example.com/c"}, f"shown: {shown}")
        self.wait_reports(classic_token, "received", 1)
        self.wait_counts(classic, received=1, clicked=0, dismissed=0)
        check(self.outbox() == [], f"receipts left in the outbox: {self.outbox()}")
        check(self.worker.evaluate("self.reports.filter((r) => typeof r.status !== 'number').length") == 0,
              f"a report failed in the browser (CORS?): {self.worker.evaluate('self.reports')}")
        context.close()

    # MARK: Helpers

    def send(self, body):
        """Sends through the API, waits until the push service accepted it; (its ID, the plaintext the browser gets)."""
        before = len(self.push.received(self.push_id))
        status, answer, _ = call(self.base, "POST", f"/v1/apps/{APP}/notifications", json.dumps(body))
        check(status == 202, f"send: {status} {answer}")
        notification = answer["id"]

        def done():
            _, answer, _ = call(self.base, "GET", f"/v1/notifications/{notification}")
            return answer if answer and answer.get("status") == "done" else None

        answer = eventually(done, f"notification {notification} done")
        check(answer.get("accepted") == 1, f"notification {notification}: {answer}")
        messages = eventually(lambda: self.push.received(self.push_id)[before:], "the push service's message")
        check(len(messages) == 1, f"{len(messages)} messages for one notification")
        return notification, messages[0].decode()

    def deliver(self, message):
        print(f"     deliverPushMessage: {len(message)} bytes", flush=True)
        self.devtools.send("ServiceWorker.deliverPushMessage", {"origin": self.site.origin, "registrationId": self.registration, "data": message})

    def wait_shown(self, token, count):
        eventually(lambda: self.worker.evaluate("(t) => self.shown.filter((s) => s.herald === t).length", token) >= count,
                   f"{count} notification(s) shown with receipt {token[:8]}…")

    def wait_reports(self, token, event, count):
        """The gateway's answers to the kit's reports of this receipt and event, once there are count of them."""
        def answered():
            reports = self.worker.evaluate("() => self.reports")
            found = []
            for report in reports:
                try:
                    body = json.loads(report.get("body") or "")
                except ValueError:
                    continue
                if body.get("receipt") == token and body.get("event") == event:
                    found.append(report)
            return found if len(found) >= count else None
        return eventually(answered, f"{count} {event} report(s) of {token[:8]}… answered")

    def notifications(self):
        return self.page.evaluate("""() => navigator.serviceWorker.getRegistration().then((r) => r.getNotifications())
            .then((all) => all.map((n) => ({ title: n.title, body: n.body, data: n.data })))""")

    def close_all(self):
        self.page.evaluate("() => navigator.serviceWorker.getRegistration().then((r) => r.getNotifications()).then((all) => all.forEach((n) => n.close()))")

    def outbox(self):
        return self.worker.evaluate("""() => new Promise((resolve, reject) => {
            const request = indexedDB.open('herald', 1);
            request.onupgradeneeded = () => request.result.createObjectStore('outbox', { autoIncrement: true });
            request.onerror = () => reject(request.error);
            request.onsuccess = () => {
                const all = request.result.transaction('outbox').objectStore('outbox').getAll();
                all.onsuccess = () => { request.result.close(); resolve(all.result); };
            };
        })""")

    def wait_counts(self, notification, timeout=WAIT_SECONDS, **expected):
        """The notification's receipts (GET /v1/notifications/{id}) at these counts within timeout; after it, still at them."""
        def counts():
            status, answer, _ = call(self.base, "GET", f"/v1/notifications/{notification}")
            check(status == 200, f"GET notification: {status} {answer}")
            receipts = answer.get("receipts") or {}
            return receipts if all(receipts.get(name) == value for name, value in expected.items()) else None
        try:
            return eventually(counts, f"receipts {expected}", timeout=timeout)
        finally:
            _, answer, _ = call(self.base, "GET", f"/v1/notifications/{notification}")
            print(f"     receipts {answer.get('receipts') if answer else None}", flush=True)

    def funnel(self, notification):
        status, answer, _ = call(self.base, "GET", f"/v1/notifications/{notification}/funnel")
        check(status == 200 and answer.get("notification") == notification, f"funnel: {status} {answer}")
        platforms = [entry for entry in answer.get("platforms", []) if entry.get("platform") == "webpush"]
        check(len(platforms) == 1, f"funnel platforms: {answer.get('platforms')}")
        return platforms[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--herald", required=True, help="the herald binary (with /v1/receipts and /sdk)")
    arguments = parser.parse_args()
    if not os.access(arguments.herald, os.X_OK):
        print(f"FAIL: {arguments.herald} is not an executable", file=sys.stderr)
        return 2

    def out_of_time(signum, frame):
        raise Failure(f"the run took longer than {RUN_SECONDS} s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(RUN_SECONDS)
    run = Run(arguments.herald)
    started = time.monotonic()
    try:
        run.run()
    except (Failure, AssertionError, PlaywrightError) as error:
        print(f"FAIL at step {run.number}: {error}", file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
    print(f"PASS: {run.number} steps in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
