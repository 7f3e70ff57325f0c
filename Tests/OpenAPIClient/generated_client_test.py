#!/usr/bin/env python3
"""A Python client generated from the gateway's own OpenAPI document, used unmodified.

Starts `herald mock` (APNs and Web Push) and `herald serve` (one app, "shop", with an APNs
provider key and webPush) in a temporary directory, fetches GET /openapi.json from the running
gateway, checks it with openapi-spec-validator, generates a client with openapi-python-client,
imports it and, through it alone: registers an APNs device with a user and tags, bulk-imports
devices, registers a browser's Web Push subscription, sends a notification to the user, follows it
to done and reads its deliveries, schedules a broadcast for later and cancels it, and reads two
error answers. Each answer's typed fields are checked. Everything it starts it stops, by PID.

    python3 Tests/OpenAPIClient/generated_client_test.py --herald .build/debug/herald
"""

import argparse
import base64
import datetime
import hashlib
import importlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request
import uuid

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

# The whole run, set-up to clean-up; each wait inside has its own, shorter, bound.
RUN_SECONDS = 150
KEY_ID, TEAM_ID = "KEYID12345", "TEAM123456"
API_KEY = "hk_generated-client-test-" + os.urandom(8).hex()
PACKAGE = "herald_push_gateway_client"  # from the document's title, "Herald push gateway"
# What the generator may say about the document: it writes no client code for a request body of
# NDJSON (the import's streaming form; the client imports with the document's JSON-array form),
# and the event stream's NDJSON answer (read line by line; the generated client has no reader).
ALLOWED_WARNINGS = [r"Unsupported content type application/x-ndjson", r"GET /v1/apps/\{app\}/events[\s\S]*Unsupported content_type application/x-ndjson"]


def token(name):
    """A 32-byte token that looks like Apple's."""
    return hashlib.sha256(name.encode()).hexdigest()


ANN, BOB, CAROL = token("ann"), token("bob"), token("carol")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


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


def closed_port():
    """A loopback port nothing listens on (bound for a moment, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_credentials(directory):
    """An APNs provider key (.p8) for the gateway and its public key for the mock."""
    key = ec.generate_private_key(ec.SECP256R1())
    p8 = os.path.join(directory, f"AuthKey_{KEY_ID}.p8")
    with open(p8, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public = os.path.join(directory, "pub.pem")
    with open(public, "wb") as file:
        file.write(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return p8, public


def write_vapid_key(directory):
    """A VAPID key (P-256, PKCS#8 PEM) and its public key as a page passes it to subscribe()."""
    key = ec.generate_private_key(ec.SECP256R1())
    path = os.path.join(directory, "vapid.pem")
    with open(path, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return path, base64.urlsafe_b64encode(point).rstrip(b"=").decode()


def subscribe(web_push_url, ca, application_server_key):
    """A browser's subscription from the Web Push mock, as subscription.toJSON() gives it."""
    request = urllib.request.Request(web_push_url + "/subscribe", data=json.dumps({"applicationServerKey": application_server_key}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10, context=ssl.create_default_context(cafile=ca)) as response:
        return json.loads(response.read())


def write_configuration(directory, mock_url, p8, vapid):
    sandbox = f"https://127.0.0.1:{closed_port()}"
    shop = {
        "id": "shop", "topic": "com.example.shop", "environment": mock_url,
        "environments": {"production": mock_url, "sandbox": sandbox},
        "caFile": os.path.join(directory, "ca.pem"), "connections": 1,
        "authKey": {"file": p8, "keyID": KEY_ID, "teamID": TEAM_ID},
        "webPush": {"vapidKeyFile": vapid, "subject": "mailto:ops@example.com", "defaultURL": "https://shop.example.com/",
                    "caFile": os.path.join(directory, "webpush-ca.pem"),
                    # The mock push service is on 127.0.0.1.
                    "allowPrivateAddresses": True},
    }
    configuration = {
        "listen": "127.0.0.1:0",
        "database": "sqlite:" + os.path.join(directory, "herald.db"),
        "apps": [shop],
        "apiKeys": [{"name": "generated-client", "sha256": hashlib.sha256(API_KEY.encode()).hexdigest(), "apps": ["shop"]}],
    }
    path = os.path.join(directory, "herald.json")
    with open(path, "w") as file:
        json.dump(configuration, file, indent=2)
    return path


def generate(document_path, output):
    """openapi-python-client's client for the document; fails on a warning not in ALLOWED_WARNINGS."""
    environment = dict(os.environ)
    # The generator formats its output with ruff, installed beside it.
    environment["PATH"] = sysconfig.get_path("scripts") + os.pathsep + environment.get("PATH", "")
    result = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path", document_path, "--output-path", output],
                            env=environment, capture_output=True, text=True, timeout=90)
    text = result.stdout + result.stderr
    check(result.returncode == 0 and os.path.isdir(os.path.join(output, PACKAGE)),
          f"openapi-python-client failed ({result.returncode}):\n{text}")
    warnings = [block for block in re.split(r"\n(?=WARNING|ERROR)", text) if block.startswith(("WARNING", "ERROR"))]
    unexpected = [block for block in warnings if not any(re.search(allowed, block) for allowed in ALLOWED_WARNINGS)]
    check(not unexpected, "openapi-python-client warned about the document:\n" + "\n".join(unexpected))
    return len(warnings)


class Run:
    def __init__(self, herald):
        self.herald = os.path.abspath(herald)
        self.processes = []
        self.number = 0

    def step(self, text):
        self.number += 1
        print(f"[{self.number:2d}] {text}", flush=True)

    def start(self, directory):
        self.step("start herald mock (APNs and Web Push) and herald serve (app shop with APNs and webPush)")
        p8, public = write_credentials(directory)
        mock = Process("herald mock", [self.herald, "mock", "--port", "0", "--write-ca", "ca.pem",
                                       "--webpush-port", "0", "--webpush-write-ca", "webpush-ca.pem",
                                       "--auth-key-public", f"{KEY_ID}={public}", "--team-id", TEAM_ID], directory)
        self.processes.append(mock)
        mock_url = mock.wait_for(r"listening on (https://127\.0\.0\.1:\d+)", 30).group(1)
        mock.wait_for(r"trust its CA", 10)
        web_push_url = mock.wait_for(r"mock Web Push listening on (https://127\.0\.0\.1:\d+)", 10).group(1)
        mock.wait_for(r"trust the Web Push mock's CA", 10)
        vapid, application_server_key = write_vapid_key(directory)
        self.subscription = subscribe(web_push_url, os.path.join(directory, "webpush-ca.pem"), application_server_key)
        configuration = write_configuration(directory, mock_url, p8, vapid)
        serve = Process("herald serve", [self.herald, "serve", "--config", configuration], directory)
        self.processes.append(serve)
        self.base = serve.wait_for(r"listening on (http://127\.0\.0\.1:\d+)", 60).group(1)
        print(f"     mock {mock_url}, gateway {self.base}", flush=True)

    def run(self):
        directory = tempfile.mkdtemp(prefix="herald-generated-client-")
        try:
            self.start(directory)
            self.generate_client(directory)
            self.exercise()
        except BaseException:
            for process in self.processes:
                if process.lines:
                    print(f"--- last output of {process.name}:\n{process.tail(15)}", file=sys.stderr)
            raise
        finally:
            for process in reversed(self.processes):
                process.stop()
            shutil.rmtree(directory, ignore_errors=True)

    def generate_client(self, directory):
        self.step("GET /openapi.json from the gateway; openapi-spec-validator passes it")
        with urllib.request.urlopen(self.base + "/openapi.json", timeout=10) as response:
            raw = response.read()
        document = json.loads(raw)
        from openapi_spec_validator import validate
        validate(document)
        path = os.path.join(directory, "openapi.json")
        with open(path, "wb") as file:
            file.write(raw)

        self.step("openapi-python-client generates a client from it (no warning but the NDJSON body's)")
        output = os.path.join(directory, "client")
        warnings = generate(path, output)
        print(f"     generated {PACKAGE} ({warnings} allowed warning(s))", flush=True)
        sys.path.insert(0, output)
        self.client_module = importlib.import_module(PACKAGE)

    def exercise(self):
        api = lambda name: importlib.import_module(f"{PACKAGE}.api.default.{name}")
        models = importlib.import_module(f"{PACKAGE}.models")
        # Any status the document does not give for the operation raises UnexpectedStatus.
        client = self.client_module.AuthenticatedClient(base_url=self.base, token=API_KEY, raise_on_unexpected_status=True, timeout=15.0)

        self.step("registerDevice: an APNs device with a user and tags (201, then 200 for the same token)")
        answer = api("register_device").sync_detailed("shop", ANN.upper(), client=client, body=models.DeviceFields(user="ann", tags=["beta", "ios"]))
        check(answer.status_code == 201, f"registerDevice: {answer.status_code} {answer.content[:300]!r}")
        device = answer.parsed
        check(isinstance(device, models.Device), f"registerDevice parsed as {type(device).__name__}")
        check(device.token == ANN and device.user == "ann" and sorted(device.tags) == ["beta", "ios"], f"registerDevice: {device.to_dict()}")
        check(device.status == models.DeviceStatus.ACTIVE and device.platform == models.Platform.APNS and device.kind == models.TokenKind.ALERT,
              f"registerDevice enums: {device.status!r} {device.platform!r} {device.kind!r}")
        check(device.environment == models.Environment.PRODUCTION, f"registerDevice environment: {device.environment!r}")
        check(isinstance(device.created_at, datetime.datetime) and device.invalidated_at is None and device.reason is None,
              f"registerDevice times: {device.to_dict()}")
        again = api("register_device").sync_detailed("shop", ANN, client=client, body=models.DeviceFields(badge=3))
        check(again.status_code == 200 and again.parsed.user == "ann" and again.parsed.badge == 3, f"registerDevice again: {again.status_code} {again.content[:300]!r}")

        self.step("importDevices: a JSON array of token lines, one of them bad")
        lines = [models.DeviceImportToken(token=BOB, user="bob", tags=["beta"]),
                 models.DeviceImportToken(token=CAROL, user="carol", kind=models.TokenKind.VOIP, environment=models.Environment.SANDBOX),
                 models.DeviceImportToken(token="not-hex", user="nobody")]
        answer = api("import_devices").sync_detailed("shop", client=client, body=lines)
        check(answer.status_code == 200 and isinstance(answer.parsed, models.ImportResult), f"importDevices: {answer.status_code} {answer.content[:300]!r}")
        result = answer.parsed
        check(result.upserted == 2 and result.error_count == 1 and len(result.errors) == 1, f"importDevices: {result.to_dict()}")
        check(isinstance(result.errors[0], models.ImportLineError) and result.errors[0].line == 3, f"importDevices errors: {result.to_dict()}")
        carol = api("get_device").sync("shop", CAROL, client=client)
        check(isinstance(carol, models.Device) and carol.kind == models.TokenKind.VOIP and carol.environment == models.Environment.SANDBOX,
              f"getDevice carol: {carol.to_dict() if hasattr(carol, 'to_dict') else carol}")

        self.step("registerWebPushSubscription: a browser's subscription for the same user")
        keys = self.subscription["keys"]
        subscription = models.WebPushSubscription(endpoint=self.subscription["endpoint"], keys=models.WebPushKeys(p256dh=keys["p256dh"], auth=keys["auth"]),
                                                  expiration_time=None, user="ann", tags=["web"])
        answer = api("register_web_push_subscription").sync_detailed("shop", client=client, body=subscription)
        check(answer.status_code == 201 and isinstance(answer.parsed, models.Device), f"registerWebPushSubscription: {answer.status_code} {answer.content[:300]!r}")
        browser = answer.parsed
        check(browser.platform == models.Platform.WEBPUSH and re.fullmatch(r"wp_[a-z2-7]{32}", browser.token) and browser.user == "ann",
              f"registerWebPushSubscription: {browser.to_dict()}")
        check(isinstance(browser.push_service, str) and browser.push_service.startswith("https://127.0.0.1:"), f"pushService: {browser.push_service!r}")

        self.step("listDevices: ann's devices, one page")
        page = api("list_devices").sync("shop", client=client, user="ann")
        check(isinstance(page, models.DevicePage) and page.next_ is None, f"listDevices: {page}")
        check(sorted(device.token for device in page.devices) == sorted([ANN, browser.token]), f"listDevices: {page.to_dict()}")

        self.step("sendNotification: to user ann (her APNs device and her browser)")
        request = models.NotificationRequest(to=models.Audience(users=["ann"]),
                                             payload=models.JSONObject.from_dict({"aps": {"alert": {"title": "Hello", "body": "from a generated client"}}}),
                                             push_type=models.PushType.ALERT, priority=models.Priority.VALUE_10,
                                             idempotency_key="generated-client-" + uuid.uuid4().hex)
        answer = api("send_notification").sync_detailed("shop", client=client, body=request)
        check(answer.status_code == 202 and isinstance(answer.parsed, models.Queued), f"sendNotification: {answer.status_code} {answer.content[:300]!r}")
        queued = answer.parsed
        check(isinstance(queued.id, uuid.UUID) and queued.targeted == 2 and queued.status in (models.NotificationStatus.QUEUED, models.NotificationStatus.SENDING, models.NotificationStatus.DONE),
              f"sendNotification: {queued.to_dict()}")
        check(isinstance(queued.targeted_by_kind, models.Counts) and queued.targeted_by_kind.to_dict() == {"alert": 2}, f"targetedByKind: {queued.to_dict()}")

        self.step("getNotification: followed until done (at most 30 s)")
        notification = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            notification = api("get_notification").sync(queued.id, client=client)
            check(isinstance(notification, models.Notification), f"getNotification: {notification}")
            if notification.status == models.NotificationStatus.DONE:
                break
            time.sleep(0.2)
        check(notification.status == models.NotificationStatus.DONE, f"not done within 30 s: {notification.to_dict()}")
        check(notification.id == queued.id and notification.app == "shop" and notification.targeted == 2 and notification.accepted == 2
              and notification.failed == 0 and notification.pending == 0 and notification.rejected.to_dict() == {}, f"getNotification: {notification.to_dict()}")
        check(notification.push_type == models.PushType.ALERT, f"pushType: {notification.push_type!r}")
        check(notification.audience.type_ == models.AudienceType.USERS and notification.audience.sample == ["ann"] and notification.audience.count == 1,
              f"audience: {notification.audience.to_dict()}")
        platforms = notification.platforms
        check(isinstance(platforms.apns, models.PlatformCounts) and platforms.apns.accepted == 1 and platforms.webpush.accepted == 1 and platforms.fcm.accepted == 0,
              f"platforms: {platforms.to_dict()}")
        check(isinstance(notification.created_at, datetime.datetime) and isinstance(notification.finished_at, datetime.datetime), f"times: {notification.to_dict()}")

        self.step("listDeliveries: both devices accepted, each with its receipt")
        deliveries = api("list_deliveries").sync(queued.id, client=client)
        check(isinstance(deliveries, models.DeliveryPage) and deliveries.next_ is None, f"listDeliveries: {deliveries}")
        check(sorted(delivery.token for delivery in deliveries.deliveries) == sorted([ANN, browser.token]), f"listDeliveries: {deliveries.to_dict()}")
        for delivery in deliveries.deliveries:
            check(delivery.outcome == models.DeliveryOutcome.ACCEPTED and delivery.reason is None and isinstance(delivery.receipt, str) and delivery.receipt
                  and isinstance(delivery.at, datetime.datetime), f"delivery: {delivery.to_dict()}")
        accepted = api("list_deliveries").sync(queued.id, client=client, outcome=models.DeliveryOutcome.ACCEPTED, limit=1)
        check(isinstance(accepted, models.DeliveryPage) and len(accepted.deliveries) == 1 and isinstance(accepted.next_, str), f"a page of one: {accepted}")

        self.step("sendNotification with sendAt an hour ahead, to all: scheduled; cancelNotification: cancelled")
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        request = models.NotificationRequest(to=models.Audience(all_=True), payload=models.JSONObject.from_dict({"aps": {"alert": "later"}}), send_at=later)
        answer = api("send_notification").sync_detailed("shop", client=client, body=request)
        check(answer.status_code == 202 and isinstance(answer.parsed, models.Queued), f"scheduled send: {answer.status_code} {answer.content[:300]!r}")
        scheduled = answer.parsed
        check(scheduled.status == models.NotificationStatus.SCHEDULED, f"scheduled send: {scheduled.to_dict()}")
        read = api("get_notification").sync(scheduled.id, client=client)
        check(isinstance(read.schedule, models.Schedule) and isinstance(read.schedule.send_at, datetime.datetime)
              and abs((read.schedule.send_at - later).total_seconds()) < 1, f"schedule: {read.to_dict()}")
        check(read.audience.type_ == models.AudienceType.ALL, f"audience: {read.audience.to_dict()}")
        answer = api("cancel_notification").sync_detailed(scheduled.id, client=client)
        check(answer.status_code == 200 and isinstance(answer.parsed, models.Notification), f"cancelNotification: {answer.status_code} {answer.content[:300]!r}")
        cancelled = answer.parsed
        check(cancelled.status == models.NotificationStatus.CANCELLED and cancelled.pending == 0 and cancelled.accepted == 0, f"cancelNotification: {cancelled.to_dict()}")
        listed = api("list_notifications").sync("shop", client=client, status=models.NotificationStatus.CANCELLED)
        check(isinstance(listed, models.NotificationPage) and [item.id for item in listed.notifications] == [scheduled.id], f"listNotifications: {listed}")

        self.step("error answers parse as Error: 404 for an unknown device, 400 for to.all false, 401 without a key")
        answer = api("get_device").sync_detailed("shop", token("nobody"), client=client)
        check(answer.status_code == 404 and isinstance(answer.parsed, models.Error) and answer.parsed.error.code == "notFound",
              f"getDevice unknown: {answer.status_code} {answer.content[:300]!r}")
        bad = models.NotificationRequest(to=models.Audience(all_=False), payload=models.JSONObject.from_dict({"aps": {}}))
        answer = api("send_notification").sync_detailed("shop", client=client, body=bad)
        check(answer.status_code == 400 and isinstance(answer.parsed, models.Error) and answer.parsed.error.code == "invalidRequest"
              and "to.all" in answer.parsed.error.message, f"sendNotification all false: {answer.status_code} {answer.content[:300]!r}")
        anonymous = self.client_module.Client(base_url=self.base, raise_on_unexpected_status=True, timeout=15.0)
        answer = api("list_apps").sync_detailed(client=anonymous)
        check(answer.status_code == 401 and isinstance(answer.parsed, models.Error) and answer.parsed.error.code == "unauthorized",
              f"listApps without a key: {answer.status_code} {answer.content[:300]!r}")
        apps = api("list_apps").sync(client=client)
        check(isinstance(apps, models.AppList) and [app.id for app in apps.apps] == ["shop"]
              and set(apps.apps[0].platforms) == {models.Platform.APNS, models.Platform.WEBPUSH}, f"listApps: {apps}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--herald", required=True, help="the herald binary")
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
    except Exception as error:
        print(f"FAIL at step {run.number}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
    print(f"PASS: {run.number} steps in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
