"""What Herald's browser tests (console_test.py and receipts_test.py, in this directory) share.

Checks and bounded waits; the child processes a run starts (`herald mock`, `herald serve`) and stops by
PID; the gateway's API over HTTP; a push service of the test's own (TLS, HTTP/1.1, RFC 8291 decryption
and, given the app's VAPID key, RFC 8292 checks) whose CA the app trusts; headless Chromium and what a
page must not do in it; and a run's frame: numbered steps, a temporary directory, a deadline, FAIL or
PASS. Each script runs as `python3 Tests/Browser/<name>.py`, so this directory is on sys.path.
"""

import base64
import collections
import contextlib
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

# The bound of one wait inside a run.
WAIT_SECONDS = 15


# MARK: Checks and waits

class Failure(Exception):
    """A step that did not hold: the run fails at it."""


def check(condition, message):
    """Fails the run with message unless condition holds."""
    if not condition:
        raise Failure(message)


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


def b64url(data):
    """data in unpadded base64url, as Web Push writes keys."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    """The bytes of unpadded base64url text."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# MARK: Child processes

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
        """Keeps each line the process prints, waking whoever waits for one."""
        for line in self.popen.stdout:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, pattern, timeout):
        """The match of the first line printed so far or within timeout seconds with pattern; fails if it exits first."""
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
        """Its last count lines, indented for a failure's report."""
        return "\n".join(f"  | {line}" for line in self.lines[-count:])

    def stop(self):
        """Terminates it (SIGTERM to its PID), killing it if it has not exited within 10 s."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)


# MARK: The gateway's API

def request(url, key, method="GET", body=None, headers=None):
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


def call(base, key, method, path, body=None, headers=None):
    """One API request, JSON unless headers say otherwise; (status, its answer as JSON, as text if not JSON, None if empty, headers)."""
    status, raw, answer_headers = request(base + path, key, method, body, dict({"Content-Type": "application/json"}, **(headers or {})))
    try:
        return status, json.loads(raw) if raw else None, answer_headers
    except ValueError:
        return status, raw.decode(errors="replace"), answer_headers


def wait_done(base, key, notification, timeout=20):
    """The notification (GET /v1/notifications/{id}) once its status is done; fails with its last answer after timeout seconds."""
    deadline = time.monotonic() + timeout
    answer = None
    while time.monotonic() < deadline:
        _, answer, _ = call(base, key, "GET", f"/v1/notifications/{notification}")
        if answer and answer.get("status") == "done":
            return answer
        time.sleep(0.1)
    raise Failure(f"notification {notification} not done within {timeout} s: {answer}")


def api_key_entry(name, key, apps):
    """The configuration's entry for an API key: its SHA-256 (never the key) and the apps it may use."""
    return {"name": name, "sha256": hashlib.sha256(key.encode()).hexdigest(), "apps": apps}


def write_configuration_file(directory, configuration):
    """configuration as herald.json in directory (for `herald serve --config`); its path."""
    path = os.path.join(directory, "herald.json")
    with open(path, "w") as file:
        json.dump(configuration, file, indent=2)
    return path


def write_vapid_key(directory):
    """A VAPID key (P-256, PKCS#8 PEM) and its public key as a page passes it to subscribe()."""
    key = ec.generate_private_key(ec.SECP256R1())
    path = os.path.join(directory, "vapid.pem")
    with open(path, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return path, b64url(key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))


# MARK: A push service of the test's own (RFC 8030), which is also the browser: it holds each subscription's keys

PushTLS = collections.namedtuple("PushTLS", "ca certificate key")


def _certificate(subject, issuer, public_key, signing_key, now, extensions):
    """An X.509 certificate valid from an hour ago for a day, with these (extension, critical) pairs."""
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=1)))
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(signing_key, hashes.SHA256())


def write_push_tls(directory, label):
    """A CA named "<label> push service CA" (its PEM goes in the app's webPush.caFile) and a certificate it issued
    for 127.0.0.1, as push-ca.pem, push-cert.pem and push-key.pem in directory; their paths, a PushTLS."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{label} push service CA")])
    ca = _certificate(ca_name, ca_name, ca_key.public_key(), ca_key, now, [
        (x509.BasicConstraints(ca=True, path_length=0), True),
        (x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                       encipher_only=False, decipher_only=False), True)])
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = _certificate(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]), ca_name, key.public_key(), ca_key, now, [
        (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False),
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        (x509.BasicConstraints(ca=False, path_length=None), True)])
    paths = PushTLS(*(os.path.join(directory, name) for name in ("push-ca.pem", "push-cert.pem", "push-key.pem")))
    for path, data in zip(paths, (ca.public_bytes(serialization.Encoding.PEM), leaf.public_bytes(serialization.Encoding.PEM),
                                  key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))):
        with open(path, "wb") as file:
            file.write(data)
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


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler speaking HTTP/1.1 (keep-alive) that logs nothing."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *arguments):
        pass

    def answer(self, status, body=b"", headers=()):
        """One answer: status, these (name, value) headers, Content-Length and body."""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class TLSServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server on 127.0.0.1 whose TLS handshake runs in each connection's thread."""
    daemon_threads = True

    def __init__(self, handler, context):
        super().__init__(("127.0.0.1", 0), handler)
        self.context = context

    def finish_request(self, request, client_address):
        """Wraps the connection in TLS (dropping it if the handshake fails), then answers it."""
        request.settimeout(10)
        try:
            connection = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            self.RequestHandlerClass(connection, client_address, self)
        finally:
            connection.close()


class Background:
    """A server answering from a thread of its own until stop()."""

    def serve(self, server):
        """Serves server in a daemon thread."""
        self.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self):
        """Stops serving and closes its socket."""
        self.server.shutdown()
        self.server.server_close()


class PushService(Background):
    """POST /push/{id} over TLS, HTTP/1.1 only (Herald's client falls back to it when a service refuses h2 by ALPN):
    decrypts with the subscription's keys and keeps the plaintext. Given the applicationServerKey, it also checks
    TTL, Content-Encoding and VAPID. A message it cannot take is answered 400 and kept in problems."""

    def __init__(self, tls, application_server_key=None):
        self.application_server_key = application_server_key
        self.subscriptions = {}  # id -> (private key, auth secret)
        self.messages = {}  # id -> [plaintext bytes]
        self.problems = []
        self.lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.certificate, tls.key)
        context.set_alpn_protocols(["http/1.1"])
        server = TLSServer(self._handler(), context)
        self.origin = f"https://127.0.0.1:{server.server_port}"
        self.serve(server)

    def _handler(self):
        """The request handler class, answering for this service."""
        service = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                match = re.fullmatch(r"/push/([A-Za-z0-9_-]+)", self.path)
                keys = service.subscriptions.get(match.group(1)) if match else None
                if keys is None:
                    return self.answer(404, b'{"reason":"NotFound"}', [("Content-Type", "application/json")])
                try:
                    plaintext = service.take(self.headers, body, keys)
                except (Failure, ValueError) as error:
                    with service.lock:
                        service.problems.append(f"POST {self.path}: {error}")
                    return self.answer(400, json.dumps({"reason": str(error)[:200]}).encode(), [("Content-Type", "application/json")])
                with service.lock:
                    service.messages.setdefault(match.group(1), []).append(plaintext)
                self.answer(201, headers=[("Location", f"/message/{uuid.uuid4()}")])

        return Handler

    def take(self, headers, body, keys):
        """The plaintext of one message, after its checks; fails saying what is wrong with it."""
        if self.application_server_key is not None:
            check(headers.get("TTL", "").isdigit(), f"TTL {headers.get('TTL')!r}")
            check(headers.get("Content-Encoding") == "aes128gcm", f"Content-Encoding {headers.get('Content-Encoding')!r}")
            verify_vapid(headers.get("Authorization"), self.origin, self.application_server_key)
        return decrypt(body, *keys)

    def subscribe(self):
        """A new subscription: (its ID, the subscription as subscription.toJSON() gives it); its keys stay here."""
        identifier = b64url(os.urandom(16))
        private_key = ec.generate_private_key(ec.SECP256R1())
        auth_secret = os.urandom(16)
        self.subscriptions[identifier] = (private_key, auth_secret)
        public = private_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return identifier, {"endpoint": f"{self.origin}/push/{identifier}", "expirationTime": None,
                            "keys": {"p256dh": b64url(public), "auth": b64url(auth_secret)}}

    def received(self, identifier):
        """Every message to this subscription so far, decrypted."""
        with self.lock:
            return list(self.messages.get(identifier, []))


# MARK: The browser

@contextlib.contextmanager
def chromium():
    """Debian's headless Chromium (/usr/bin/chromium) through Playwright; closed at the end."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"], headless=True)
        try:
            yield browser
        finally:
            browser.close()


def watch(page, console, problems):
    """Keeps in problems what a page must not do: open a dialog (dismissed), throw, or log an error to console's
    "console" events (the page's, or its context's to hear its workers too). The browser's log of a 4xx answer is
    no problem: the tests provoke those."""
    def on_dialog(dialog):
        problems.append(f"a {dialog.type} dialog opened: {dialog.message!r}")
        dialog.dismiss()

    def on_console(message):
        if message.type == "error" and not message.text.startswith("Failed to load resource: the server responded with a status of 4"):
            problems.append(f"console error: {message.text}")

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    console.on("console", on_console)


# MARK: A run

class BrowserRun:
    """A run's numbered steps, the processes and servers it started (stopped at its end) and what the page did wrong."""

    def __init__(self, herald):
        self.herald = os.path.abspath(herald)
        self.processes = []
        self.servers = []
        self.number = 0
        self.problems = []

    def step(self, text):
        """Prints the next step's number and what it checks."""
        self.number += 1
        print(f"[{self.number:2d}] {text}", flush=True)

    def start_process(self, name, args, directory):
        """A child process started in directory; stopped at the run's end."""
        process = Process(name, args, directory)
        self.processes.append(process)
        return process

    def keep(self, server):
        """server (with a stop()), stopped at the run's end after the processes; returned."""
        self.servers.append(server)
        return server

    @contextlib.contextmanager
    def directory(self, prefix):
        """A temporary directory for the run. On a failure, each process's last output goes to stderr; at the end,
        the processes (by PID) and servers are stopped, latest first, and the directory removed."""
        path = tempfile.mkdtemp(prefix=prefix)
        try:
            yield path
        except BaseException:
            for process in self.processes:
                if process.lines:
                    print(f"--- last output of {process.name}:\n{process.tail(15)}", file=sys.stderr)
            raise
        finally:
            for process in reversed(self.processes):
                process.stop()
            for server in reversed(self.servers):
                server.stop()
            shutil.rmtree(path, ignore_errors=True)


def is_executable(herald):
    """Whether herald is an executable; if not, says so (FAIL) on stderr."""
    if os.access(herald, os.X_OK):
        return True
    print(f"FAIL: {herald} is not an executable", file=sys.stderr)
    return False


def run_within(run, seconds):
    """run.run() under a deadline of seconds (SIGALRM): the seconds it took, or None once FAIL at its step is printed."""
    def out_of_time(signum, frame):
        raise Failure(f"the run took longer than {seconds} s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(seconds)
    started = time.monotonic()
    try:
        run.run()
    except (Failure, AssertionError, PlaywrightError) as error:
        print(f"FAIL at step {run.number}: {error}", file=sys.stderr)
        return None
    finally:
        signal.alarm(0)
    return time.monotonic() - started


def run_script(herald, run, seconds, note=""):
    """A script's exit code: 2 if herald (as given) is no executable, 1 if run failed or took longer than seconds,
    0 once "PASS: <steps> steps in <seconds> s<note>" is printed."""
    if not is_executable(herald):
        return 2
    took = run_within(run, seconds)
    if took is None:
        return 1
    print(f"PASS: {run.number} steps in {took:.1f} s{note}")
    return 0
