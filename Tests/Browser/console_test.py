#!/usr/bin/env python3
"""The operator's console (/console) in a real browser, against a real `herald serve`.

Starts `herald mock` (with a provider key of its own) and `herald serve` with two apps and two
API keys in a temporary directory, seeds devices through the API, then drives headless Chromium
through sign-in, the overview, a notification's live progress, its deliveries, device search,
the send form, templates and their preview, the app's categories, a user's preferences and a
notification held back by them, a notification's funnel and the overview's receipts per day, taking a screenshot of
each view (console.png, the overview down to the activity chart, is docs/console.png: scripts/console-screenshot.sh
copies it). Everything it starts it stops, by PID.

Receipts: `herald mock` keeps what it is sent in its own process, so one browser (user rita) is subscribed at a push
service of the test's own (herald_harness.PushService: TLS, HTTP/1.1, RFC 8291 decryption), which reads the receipt the
gateway put in the message; the test reports it to POST /v1/receipts as the browser kit would.

    python3 Tests/Browser/console_test.py --herald .build/debug/herald --screenshots /tmp/shots
"""

import argparse
import hashlib
import json
import os
import re
import socket
import ssl
import sys
import time
import urllib.request
from datetime import datetime
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from herald_harness import (BrowserRun, PushService, api_key_entry, call, check, chromium, run_script, wait_done,
                            watch, write_configuration_file, write_push_tls, write_vapid_key)

# The whole run, set-up to clean-up; each wait inside has its own, shorter, bound.
RUN_SECONDS = 170
WAIT_MS = 15_000

KEY_ID, TEAM_ID = "KEYID12345", "TEAM123456"
KEY_A = "hk_console-test-A-" + os.urandom(8).hex()  # may use "shop" only
KEY_B = "hk_console-test-B-" + os.urandom(8).hex()  # may use "shop" and "other"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
XSS_USER = "<img src=x onerror=alert(1)>"
# App shop's categories (its configuration's): one always sent, one capped, one opt-in.
CATEGORIES = {
    "orders": {"transactional": True},
    "marketing": {"commercial": True, "caps": [{"count": 3, "windowSeconds": 86400}, {"count": 1, "windowSeconds": 600}]},
    "news": {"optIn": True},
}
# A template in two languages stored through the API; its body is markup, which must stay text.
TEMPLATE = {
    "defaultLanguage": "en",
    "variants": {
        "en": {"title": "Order {{order}} shipped", "body": XSS_USER},
        "de": {"title": "Bestellung {{order}} ist unterwegs", "subtitle": "Danke, {{name | default: \"Kunde\"}}", "body": XSS_USER},
    },
    "data": {"orderID": "{{order}}"},
}


def token(name):
    """A 32-byte token that looks like Apple's."""
    return hashlib.sha256(name.encode()).hexdigest()


ALICE, BOB, XSS, CAROL, DAVE, GONE, OLD = (token(n) for n in ("alice", "bob", "xss", "carol", "dave", "gone", "old"))
OLGA = token("olga")
# The mock answers GONE with 410 Unregistered and OLD with BadDeviceToken (which makes the gateway
# mark it invalid). GONE stays active: the mock's Unregistered timestamp is the time it started,
# before GONE registered, and a device registered since that time is not retired (Apple's rule).
# DAVE is a sandbox device, whose host is a closed port, so a notification to it stays "sending"
# for a few seconds and then fails.
SEED = [
    (ALICE, {"user": "alice", "tags": ["beta", "ios"]}),
    (BOB, {"user": "bob", "tags": ["beta"]}),
    (XSS, {"user": XSS_USER, "tags": ["xss"]}),
    (CAROL, {"user": "carol", "kind": "voip"}),
    (DAVE, {"user": "dave", "tags": ["ios"], "environment": "sandbox"}),
    (GONE, {"user": "gone", "tags": ["beta"]}),
    (OLD, {"user": "old"}),
]
# App shop reaches browsers too: a subscription from the Web Push mock, for user wendy; and an
# Android device through the FCM mock, for user andy.
WEB_USER = "wendy"
ANDROID_USER = "andy"
ANDROID_TOKEN = "cAndy-Token_1:APA91b" + "Q" * 120
EXTRA_NOTIFICATIONS = 22  # past one page (20) of the overview's table, so "More" is used
# A browser subscribed at the test's own push service, whose messages the test reads (receipts).
RECEIPTS_USER = "rita"
# The notifications table fits the page at 1280 px, measured as this script does: the table's
# scroll width against its scrolling container's width.
TABLE_FITS = """() => {
    const table = document.getElementById('notifications-table');
    const wrap = table.closest('.table-wrap');
    return { table: table.scrollWidth, wrap: wrap.scrollWidth, client: wrap.clientWidth };
}"""


# The activity chart's rotated y title and its y labels, in the SVG's own units (its viewBox is
# 1100 wide), as drawn; and the same labels where the old fixed left margin of 52 put them
# (right-aligned at 52 - 8), measured on a copy of the chart.
CHART_BOXES = """() => {
    const measure = (svg) => {
        const box = svg.getBoundingClientRect();
        const scale = svg.viewBox.baseVal.width / box.width;
        const place = (node) => {
            const r = node.getBoundingClientRect();
            return { text: node.textContent, left: (r.left - box.left) * scale, right: (r.right - box.left) * scale,
                     top: (r.top - box.top) * scale, bottom: (r.bottom - box.top) * scale };
        };
        return { title: place(svg.querySelector('.chart-title[transform]')),
                 labels: [...svg.querySelectorAll('.chart-axis text[text-anchor=end]')].map(place),
                 margin: Number(svg.querySelector('.chart-grid line').getAttribute('x1')) };
    };
    const svg = document.querySelector('[data-testid=activity-svg]');
    const copy = svg.cloneNode(true);
    copy.removeAttribute('data-testid');
    for (const label of copy.querySelectorAll('.chart-axis text[text-anchor=end]')) label.setAttribute('x', 52 - 8);
    svg.parentNode.appendChild(copy);
    try {
        return [measure(svg), measure(copy)];
    } finally {
        copy.remove();
    }
}"""


def fulfill_json(answer):
    """A page.route handler that answers with this JSON."""
    body = json.dumps(answer)
    return lambda route: route.fulfill(status=200, content_type="application/json", body=body)


def chart_problems(boxes):
    """What is wrong with the chart's y labels: one cut at the left edge, or one over the title."""
    title = boxes["title"]
    problems = []
    for label in boxes["labels"]:
        if label["left"] < 0:
            problems.append(f"{label['text']!r} is clipped (x {label['left']:.1f})")
        if label["left"] < title["right"] and title["left"] < label["right"] and label["top"] < title["bottom"] and title["top"] < label["bottom"]:
            problems.append(f"{label['text']!r} (x {label['left']:.1f}..{label['right']:.1f}) overlaps 'per minute' "
                            f"(x {title['left']:.1f}..{title['right']:.1f})")
    return problems


def closed_port():
    """A loopback port nothing listens on (bound for a moment, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_credentials(directory):
    key = ec.generate_private_key(ec.SECP256R1())
    p8 = os.path.join(directory, f"AuthKey_{KEY_ID}.p8")
    with open(p8, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public = os.path.join(directory, "pub.pem")
    with open(public, "wb") as file:
        file.write(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return p8, public


def subscribe(web_push_url, ca, application_server_key):
    """A browser's subscription from the Web Push mock, as subscription.toJSON() gives it."""
    request = urllib.request.Request(web_push_url + "/subscribe", data=json.dumps({"applicationServerKey": application_server_key}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10, context=ssl.create_default_context(cafile=ca)) as response:
        return json.loads(response.read())


def write_configuration(directory, mock_url, p8, vapid, fcm_url, fcm_ca, webpush_ca):
    ca = os.path.join(directory, "ca.pem")
    auth = {"file": p8, "keyID": KEY_ID, "teamID": TEAM_ID}
    sandbox = f"https://127.0.0.1:{closed_port()}"

    def app(identifier):
        return {"id": identifier, "topic": f"com.example.{identifier}", "environment": mock_url,
                "environments": {"production": mock_url, "sandbox": sandbox},
                "caFile": ca, "connections": 1, "authKey": auth}

    configuration = {
        "listen": "127.0.0.1:0",
        "database": "sqlite:" + os.path.join(directory, "herald.db"),
        "apps": [dict(app("shop"), categories=CATEGORIES, defaultLanguage="en", webPush={"vapidKeyFile": vapid, "subject": "mailto:ops@example.com",
                                            "defaultURL": "https://shop.example.com/", "caFile": webpush_ca,
                                            # The mock push service is on 127.0.0.1.
                                            "allowPrivateAddresses": True},
                      fcm={"serviceAccountFile": os.path.join(directory, "fcm-sa.json"), "endpoint": fcm_url, "caFile": fcm_ca}),
                 app("other")],
        "apiKeys": [
            api_key_entry("console-a", KEY_A, ["shop"]),
            api_key_entry("console-b", KEY_B, ["shop", "other"]),
        ],
        # A notification to the sandbox device (a closed port) is retried, then fails after 8 s:
        # long enough to watch it sending, and to cancel one, on a loaded machine.
        "queue": {"maximumAgeSeconds": 8, "retryInitialSeconds": 1, "retryMaximumSeconds": 1},
    }
    return write_configuration_file(directory, configuration)


def seed(base, subscription):
    for device, fields in SEED[:3]:
        status, answer, _ = call(base, KEY_A, "PUT", f"/v1/apps/shop/devices/{device}", json.dumps(fields))
        check(status == 201, f"PUT device: {status} {answer}")
    lines = "\n".join(json.dumps({"token": device, **fields}) for device, fields in SEED[3:])
    status, answer, _ = call(base, KEY_A, "POST", "/v1/apps/shop/devices", lines, {"Content-Type": "application/x-ndjson"})
    check(status == 200 and answer.get("upserted") == len(SEED) - 3, f"import: {status} {answer}")
    status, answer, _ = call(base, KEY_B, "PUT", f"/v1/apps/other/devices/{OLGA}", json.dumps({"user": "olga"}))
    check(status == 201, f"PUT device in other: {status} {answer}")
    status, answer, _ = call(base, KEY_A, "POST", "/v1/apps/shop/webpush/subscriptions", json.dumps(dict(subscription, user=WEB_USER)))
    check(status == 201 and answer.get("platform") == "webpush", f"POST subscription: {status} {answer}")
    browser = answer["token"]
    status, answer, _ = call(base, KEY_A, "PUT", f"/v1/apps/shop/devices/{ANDROID_TOKEN}", json.dumps({"platform": "fcm", "user": ANDROID_USER}))
    check(status == 201 and answer.get("platform") == "fcm", f"PUT Android device: {status} {answer}")
    return browser, answer["token"]


def send_body(to, payload_text, push_type="alert"):
    """The body the console's form sends: its payload exactly as typed."""
    return '{"to":' + json.dumps(to, separators=(",", ":")) + ',"payload":' + payload_text + ',"pushType":' + json.dumps(push_type) + "}"


class Run(BrowserRun):
    """The steps; self.problems keeps dialogs, script errors and CSP violations, reported at the end."""

    def __init__(self, herald, screenshots):
        super().__init__(herald)
        self.screenshots = os.path.abspath(screenshots)
        self.requests = []
        self.page = None

    def shot(self, page, name, full_page=True):
        path = os.path.join(self.screenshots, name)
        page.screenshot(path=path, full_page=full_page)
        print(f"     screenshot {path}", flush=True)

    def start(self, directory):
        self.step("start herald mock and herald serve (two apps; key A: shop, key B: shop and other)")
        p8, public = write_credentials(directory)
        mock = self.start_process("herald mock", [self.herald, "mock", "--port", "0", "--write-ca", "ca.pem",
                                                   "--webpush-port", "0", "--webpush-write-ca", "webpush-ca.pem",
                                                   "--fcm-port", "0", "--fcm-write-service-account", "fcm-sa.json",
                                                   "--auth-key-public", f"{KEY_ID}={public}", "--team-id", TEAM_ID,
                                                   "--unregistered", GONE, "--fail", f"{OLD}=BadDeviceToken"], directory)
        mock_url = mock.wait_for(r"listening on (https://127\.0\.0\.1:\d+)", 30).group(1)
        mock.wait_for(r"trust its CA", 10)
        web_push_url = mock.wait_for(r"mock Web Push listening on (https://127\.0\.0\.1:\d+)", 10).group(1)
        mock.wait_for(r"trust the Web Push mock's CA", 10)
        fcm = mock.wait_for(r"mock FCM listening on (https://127\.0\.0\.1:\d+)", 10).group(1)
        fcm_ca = mock.wait_for(r"its service account: \S+; trust its CA with (\S+)", 10).group(1)
        vapid, application_server_key = write_vapid_key(directory)
        self.subscription = subscribe(web_push_url, os.path.join(directory, "webpush-ca.pem"), application_server_key)
        # The push service for rita's browser: app shop trusts its CA beside the Web Push mock's.
        push_tls = write_push_tls(directory, "console test")
        self.push = self.keep(PushService(push_tls))
        webpush_ca = os.path.join(directory, "webpush-cas.pem")
        with open(webpush_ca, "w") as bundle:
            for path in (os.path.join(directory, "webpush-ca.pem"), push_tls.ca):
                with open(path) as file:
                    bundle.write(file.read().strip() + "\n")
        configuration = write_configuration(directory, mock_url, p8, vapid, fcm, os.path.join(directory, fcm_ca), webpush_ca)
        serve = self.start_process("herald serve", [self.herald, "serve", "--config", configuration], directory)
        self.base = serve.wait_for(r"listening on (http://127\.0\.0\.1:\d+)", 60).group(1)
        print(f"     mock {mock_url}, gateway {self.base}", flush=True)

    def run(self):
        os.makedirs(self.screenshots, exist_ok=True)
        with self.directory("herald-console-test-") as directory:
            self.start(directory)
            self.step("seed devices through the API (PUT and an NDJSON import)")
            self.browser_id, self.android_id = seed(self.base, self.subscription)
            self.step("GET /console answers with the CSP, X-Frame-Options: DENY and nosniff")
            with urllib.request.urlopen(self.base + "/console", timeout=10) as response:
                check(response.headers.get("Content-Security-Policy") == CSP, f"CSP: {response.headers.get('Content-Security-Policy')}")
                check(response.headers.get("X-Frame-Options") == "DENY", f"X-Frame-Options: {response.headers.get('X-Frame-Options')}")
                check(response.headers.get("X-Content-Type-Options") == "nosniff", "X-Content-Type-Options")
            with chromium() as browser:
                try:
                    self.browse(browser)
                except BaseException:
                    self.shoot_failure()
                    raise
            check(not self.problems, "the page misbehaved:\n  " + "\n  ".join(self.problems))

    def shoot_failure(self):
        """The page as it was when a step failed, for the one reading the failure."""
        try:
            if self.page and not self.page.is_closed():
                self.shot(self.page, "failure.png")
        except PlaywrightError:
            pass

    def watch(self, page):
        """Dialogs, script errors and console errors, a CSP violation above all (the 4xx answers the test provokes, a
        wrong key, a refused send, an unknown token, aside); and every request the page makes."""
        watch(page, page, self.problems)
        page.on("request", lambda request: self.requests.append(request))

    def browse(self, browser):
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = self.page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        self.watch(page)
        by = page.get_by_test_id

        self.step("open /console in Chromium; the browser sees the CSP and X-Frame-Options")
        response = page.goto(self.base + "/console")
        check(response.status == 200, f"/console answered {response.status}")
        headers = response.headers
        check(headers.get("content-security-policy") == CSP, f"CSP in the browser: {headers.get('content-security-policy')}")
        check(headers.get("x-frame-options") == "DENY", f"X-Frame-Options in the browser: {headers.get('x-frame-options')}")

        self.step("sign in with a wrong key: the form says it was refused")
        expect(by("signin-view")).to_be_visible()
        by("api-key").fill("hk_not-a-key")
        by("signin-submit").click()
        expect(by("signin-error")).to_have_text("That key was refused: the API key is not one this gateway knows.")
        expect(by("overview-view")).to_be_hidden()
        self.shot(page, "signin-error.png")

        self.step("sign in with key A: the overview shows the seeded counts, and only app shop")
        self.sign_in(page, KEY_A)
        expect(by("app-name")).to_have_text("shop")
        expect(by("app-picker")).to_be_hidden()
        options = page.locator("#app-picker option").all_text_contents()
        check(options == ["shop"], f"key A's app list: {options}")
        self.expect_counts(page, total=9, active=9, unregistered=0, invalid=0, alert=6, voip=1, production=6, sandbox=1, apns=7, webpush=1, fcm=1)
        expect(by("queue-pending")).to_have_text("0")
        expect(by("queue-active")).to_have_text("0")
        expect(by("activity-svg")).to_be_visible()
        expect(page.locator("[data-testid=activity-minute]")).to_have_count(60)
        check("other" not in page.locator("body").inner_text(), "key A's page names app other")

        self.step("key A and a hand-written #/apps/other: the console stays on shop")
        page.goto(self.base + "/console#/apps/other/send")
        expect(page).to_have_url(re.compile(r"#/apps/shop$"))
        expect(by("app-name")).to_have_text("shop")

        self.step("send form: an empty token and malformed JSON are refused inline, as the API words them")
        by("nav-send").click()
        expect(by("send-view")).to_be_visible()
        expect(by("send-payload")).to_have_value('{"aps":{"alert":"Hello from the Herald console"}}')
        posts_before = self.count_posts()
        by("send-target-value").fill("")
        by("send-submit").click()
        empty = self.api_message(send_body({"tokens": [""]}, '{"aps":{"alert":"Hello from the Herald console"}}'))
        check(empty == "to.tokens[0]: device token is empty", f"the API's message for an empty token changed: {empty!r}")
        expect(by("send-error")).to_have_text(empty)
        by("send-target-value").fill(ALICE)
        for text in ['{"aps":{"alert":"Hi"}', '{"aps":', 'nope', '{"a":1,"a":2}', '', '{"aps":{"alert":"café ☕"}} }']:
            by("send-payload").fill(text)
            by("send-submit").click()
            expect(by("send-error")).to_have_text(self.api_message(send_body({"tokens": [ALICE]}, text)))
        malformed = '{\n  "aps": {\n    "alert": "Hi",\n  }\n}'
        by("send-target-value").fill("")
        by("send-payload").fill(malformed)
        by("send-submit").click()
        expected = self.api_message(send_body({"tokens": [""]}, malformed))
        check(expected.startswith("the body is not valid JSON: invalid JSON at byte "), f"the API's message: {expected!r}")
        expect(by("send-error")).to_have_text(expected)
        expect(by("send-error-hint")).to_have_text("In the payload field: line 4, column 3.")
        print(f"     shown: {expected!r}", flush=True)
        check(self.count_posts() == posts_before, "a refused form was sent to the API")
        self.shot(page, "send-error.png")

        self.step("send form: a refusal from the API is shown inline with its message")
        by("send-target-value").fill("zz")
        by("send-payload").fill('{"aps":{"alert":"Hi"}}')
        by("send-submit").click()
        expect(by("send-error")).to_have_text("to.tokens[0]: device token has 'z' at position 1; only hex digits 0-9 and a-f are allowed")
        check(self.count_posts() == posts_before + 1, "the form did not reach the API")
        expect(by("send-view")).to_be_visible()

        self.step("send a test notification to alice's token: its detail view follows it to done")
        by("send-target-value").fill(ALICE)
        by("send-payload").fill('{"aps":{"alert":"Hello from the Herald console"}}')
        by("send-submit").click()
        expect(by("notification-view")).to_be_visible()
        expect(by("notification-status")).to_have_text("done")
        expect(by("notification-count-accepted")).to_have_text("1")
        expect(by("notification-progress")).to_have_attribute("aria-valuenow", "100")
        expect(by("notification-progress-text")).to_contain_text("1 of 1 devices done")
        expect(by("notification-fields")).to_contain_text(ALICE)
        expect(by("notification-live")).to_be_hidden()
        self.shot(page, "notification-detail.png")

        self.step("its deliveries: alice's token, accepted, with an APNs ID")
        by("notification-deliveries-link").click()
        expect(by("deliveries-view")).to_be_visible()
        row = page.locator(f"[data-testid=delivery-row][data-token='{ALICE}']")
        expect(row).to_have_count(1)
        expect(row).to_have_attribute("data-outcome", "accepted")
        expect(row.locator(".badge")).to_have_text("accepted")
        # The receipt (APNs's apns-id, a UUID); the mock answers as production: no unique ID.
        expect(row.locator("[data-testid=delivery-receipt]")).to_have_text(re.compile(r"^[0-9a-f-]{36}$"))
        expect(row.locator("[data-testid=delivery-unique-id]")).to_have_count(0)
        self.shot(page, "deliveries.png")

        self.step("send to user gone (Unregistered at the mock): a rejected device with its reason")
        by("nav-send").click()
        by("send-target-type").select_option("user")
        by("send-target-value").fill("gone")
        by("send-submit").click()
        expect(by("notification-status")).to_have_text("done")
        expect(by("notification-count-rejected")).to_have_text("1")
        expect(page.locator("[data-testid=rejected-reason-count][data-reason=Unregistered]")).to_have_text("1")
        rejected = by("rejected-devices").locator(f"[data-testid=delivery-row][data-token='{GONE}']")
        expect(rejected).to_have_count(1)
        expect(rejected.get_by_test_id("delivery-reason")).to_have_text("Unregistered")

        self.step("send to the sandbox token (its host refuses): progress updates by itself until done")
        by("nav-send").click()
        by("send-target-type").select_option("token")
        by("send-target-value").fill(DAVE)
        by("send-submit").click()
        expect(by("notification-status")).to_have_text(re.compile(r"^(queued|sending)$"))
        expect(by("notification-live")).to_be_visible()
        expect(by("notification-cancel")).to_be_visible()
        expect(by("notification-progress")).to_have_attribute("aria-valuenow", "0")
        self.shot(page, "notification-progress.png")
        page.evaluate("window.__sameDocument = true")
        notification = page.url.rsplit("/", 1)[1]
        polls_before = self.count_gets(f"/v1/notifications/{notification}")
        expect(by("notification-status")).to_have_text("done", timeout=40_000)
        check(page.evaluate("window.__sameDocument") is True, "the page reloaded instead of updating itself")
        polls = self.count_gets(f"/v1/notifications/{notification}") - polls_before
        check(polls >= 2, f"the detail view polled {polls} times while sending")
        print(f"     polled {polls} more times before it was done", flush=True)
        expect(by("notification-count-failed")).to_have_text("1")
        expect(by("notification-progress")).to_have_attribute("aria-valuenow", "100")
        expect(by("notification-live")).to_be_hidden()
        expect(by("notification-cancel")).to_be_hidden()
        failed = by("failed-devices").locator(f"[data-testid=delivery-row][data-token='{DAVE}']")
        expect(failed).to_have_count(1)
        expect(failed.get_by_test_id("delivery-reason")).to_contain_text("Expired")
        time.sleep(1.5)
        check(self.count_gets(f"/v1/notifications/{notification}") - polls_before == polls, "it kept polling after done")

        self.step("leaving a notification that is sending stops its polling; Cancel, clicked twice, cancels it")
        by("nav-send").click()
        by("send-target-value").fill(DAVE)
        by("send-submit").click()
        expect(by("notification-status")).to_have_text(re.compile(r"^(queued|sending)$"))
        notification = page.url.rsplit("/", 1)[1]
        by("nav-overview").click()
        expect(by("overview-view")).to_be_visible()
        polls = self.count_gets(f"/v1/notifications/{notification}")
        time.sleep(1.5)
        check(self.count_gets(f"/v1/notifications/{notification}") == polls, "it kept polling after the view was left")
        page.go_back()
        expect(by("notification-view")).to_be_visible()
        expect(by("notification-status")).to_have_text(re.compile(r"^(queued|sending)$"))
        by("notification-cancel").click()
        expect(by("notification-cancel")).to_have_text("Click again to cancel what is unsent")
        by("notification-cancel").click()
        expect(by("notification-status")).to_have_text("cancelled")
        expect(by("notification-cancel")).to_be_hidden()
        # What was unsent ends as failed, reason Cancelled, a moment after the answer to DELETE.
        expect(by("notification-count-pending")).to_have_text("0")
        expect(by("notification-count-failed")).to_have_text("1")
        expect(by("failed-devices").get_by_test_id("delivery-reason")).to_have_text("Cancelled")
        expect(by("notification-live")).to_be_hidden()

        self.step(f"queue {EXTRA_NOTIFICATIONS} more notifications to user bob, and one to old, through the API")
        status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/notifications",
                                 json.dumps({"to": {"users": ["old"]}, "payload": {"aps": {"alert": "bad"}}}))
        check(status == 202, f"send: {status} {answer}")
        queued = [answer["id"]]
        for _ in range(EXTRA_NOTIFICATIONS):
            status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/notifications",
                                     json.dumps({"to": {"users": ["bob"]}, "payload": {"aps": {"alert": "batch"}}}))
            check(status == 202, f"send: {status} {answer}")
            queued.append(answer["id"])
        for notification in queued:
            wait_done(self.base, KEY_A, notification)

        self.step("overview: the counts moved, the chart and the table show the deliveries, More pages")
        by("nav-overview").click()
        self.expect_counts(page, total=9, active=8, unregistered=0, invalid=1, alert=6, voip=1, production=6, sandbox=1, apns=7, webpush=1, fcm=1)
        # The chart shows what /activity says. Its failed count is taken from the API: a
        # cancelled delivery that no worker had claimed is counted failed on its notification
        # but not in /activity (the cancel path does not record the minute), so 1 or 2 here.
        _, activity, _ = call(self.base, KEY_A, "GET", "/v1/apps/shop/activity?minutes=60")
        totals = {outcome: sum(minute[outcome] for minute in activity["minutes"]) for outcome in ("accepted", "rejected", "failed")}
        check(totals["accepted"] == 1 + EXTRA_NOTIFICATIONS and totals["rejected"] == 2 and totals["failed"] >= 1, f"/activity: {totals}")
        for outcome, value in totals.items():
            expect(by(f"activity-{outcome}")).to_have_text(str(value))
        check(page.locator("#activity-chart rect.bar-accepted").count() >= 1, "no accepted bar in the chart")
        rows = page.locator("[data-testid=notification-row]")
        expect(rows).to_have_count(20)
        expect(by("notifications-more")).to_be_visible()
        self.shot(page, "overview.png", full_page=False)
        self.shot(page, "overview-full.png")
        # docs/console.png (scripts/console-screenshot.sh copies it): the page down to the chart's card.
        bottom = page.evaluate("() => Math.ceil(document.getElementById('activity-chart').closest('.card').getBoundingClientRect().bottom + window.scrollY) + 16")
        path = os.path.join(self.screenshots, "console.png")
        page.screenshot(path=path, full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": bottom})
        print(f"     screenshot {path}", flush=True)
        by("notifications-more").click()
        expect(rows).to_have_count(5 + EXTRA_NOTIFICATIONS)
        expect(by("notifications-more")).to_be_hidden()
        by("notifications-status").select_option("queued")
        expect(rows).to_have_count(0)
        by("notifications-status").select_option("done")
        expect(rows).to_have_count(20)
        rows.last.locator("td").nth(1).click()
        expect(by("notification-view")).to_be_visible()

        self.step("the chart's y labels at 150,000 and 1,500,000 a minute (an answer from page.route): none clipped at the "
                  "left edge or under the rotated 'per minute'; the same labels at the old fixed margin (52) would be")
        by("nav-overview").click()
        expect(by("overview-view")).to_be_visible()
        activity_url = re.compile(r".*/v1/apps/shop/activity([?].*)?$")
        for peak, top in ((150_000, 150_000), (1_234_567, 1_500_000)):
            # A rising hour whose last minute is the peak; a fiftieth rejected, a hundredth failed.
            minutes = []
            for index, minute in enumerate(activity["minutes"]):
                total = peak * (index + 1) // len(activity["minutes"])
                minutes.append(dict(minute, accepted=total - total // 50 - total // 100, rejected=total // 50, failed=total // 100))
            answer = fulfill_json(dict(activity, minutes=minutes))
            page.route(activity_url, answer)
            by("overview-refresh").click()
            accepted, top_label = page.evaluate("([a, t]) => [a, t].map((n) => new Intl.NumberFormat().format(n))",
                                                [sum(minute["accepted"] for minute in minutes), top])
            expect(by("activity-accepted")).to_have_text(accepted)
            new, old = page.evaluate(CHART_BOXES)
            labels = [label["text"] for label in new["labels"]]
            check(labels[-1] == top_label, f"y labels for a peak of {peak}: {labels}")
            problems = chart_problems(new)
            check(not problems, f"peak {peak}, margin {new['margin']}: " + "; ".join(problems))
            check(chart_problems(old), f"peak {peak}: the check passes the old layout too (margin 52): {old}")
            leftmost = min(new["labels"], key=lambda label: label["left"])
            print(f"     peak {peak}: margin {new['margin']}; 'per minute' x {new['title']['left']:.1f}..{new['title']['right']:.1f}; "
                  f"leftmost label {leftmost['text']!r} x {leftmost['left']:.1f}..{leftmost['right']:.1f}, "
                  f"top label {labels[-1]!r} x {new['labels'][-1]['left']:.1f}..{new['labels'][-1]['right']:.1f} "
                  f"(at margin 52: x {min(label['left'] for label in old['labels']):.1f}..44; "
                  f"{len(chart_problems(old))} problems)", flush=True)
            page.unroute(activity_url, answer)
        self.shot(page, "overview-large-numbers.png", full_page=False)
        by("overview-refresh").click()
        expect(by("activity-accepted")).to_have_text(str(totals["accepted"]))

        self.step("a notification sent at a time an hour ahead from the send form: scheduled, its time stored in UTC and shown; "
                  "listed under Scheduled with its badge; its detail offers Cancel, which cancels it")
        by("nav-send").click()
        by("send-target-type").select_option("user")
        by("send-target-value").fill("bob")
        by("send-payload").fill('{"aps":{"alert":"later"}}')
        # The field holds the browser's local time, to the second; the API gets it in UTC.
        local, send_at = page.evaluate("""() => {
            const at = new Date(Math.floor(Date.now() / 1000) * 1000 + 3600 * 1000);
            const pad = (n) => String(n).padStart(2, '0');
            return [`${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`,
                    at.toISOString().replace(/[.][0-9]{3}Z$/, 'Z')];
        }""")
        by("send-at").fill(local)
        by("send-submit").click()
        expect(by("notification-status")).to_have_text("scheduled")
        scheduled = page.url.rsplit("/", 1)[1]
        status, stored, _ = call(self.base, KEY_A, "GET", f"/v1/notifications/{scheduled}")
        stored_at = (stored.get("schedule") or {}).get("sendAt") if status == 200 else None
        check(stored_at is not None and datetime.fromisoformat(stored_at) == datetime.fromisoformat(send_at), f"stored {stored_at}, not sendAt {send_at}")
        expect(by("notification-schedule")).to_have_text(f"from {local.replace('T', ' ')}")
        # What later sends from the form go out at once.
        by("nav-send").click()
        by("send-at").fill("")
        by("nav-overview").click()
        by("notifications-status").select_option("scheduled")
        expect(rows).to_have_count(1)
        expect(rows.first.locator(".badge")).to_have_text("scheduled")
        expect(rows.first.locator(".badge")).to_have_class(re.compile(r"badge-scheduled"))
        by("notifications-table").scroll_into_view_if_needed()  # the list, not the cards above it
        self.shot(page, "notifications-scheduled.png", full_page=False)
        rows.first.locator("td").nth(1).click()
        expect(by("notification-status")).to_have_text("scheduled")
        expect(by("notification-schedule")).to_have_text(re.compile(r"^from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"))
        expect(by("notification-cancel")).to_be_visible()
        self.shot(page, "notification-scheduled.png")
        # Left open, the page reads a notification due in an hour again every 30 s, not every
        # second as one under way (which read it 2 or 3 times in this wait).
        reads = []
        def count_read(request):
            if request.method == "GET" and urlsplit(request.url).path.endswith(f"/notifications/{scheduled}"):
                reads.append(request.url)
        page.on("request", count_read)
        page.wait_for_timeout(2500)
        page.remove_listener("request", count_read)
        check(not reads, f"a notification scheduled an hour ahead was read {len(reads)} times in 2.5 s")
        expect(by("notification-live")).to_have_text("checked every 30 seconds until it is due")
        by("notification-cancel").click()
        by("notification-cancel").click()
        expect(by("notification-status")).to_have_text("cancelled")
        check(page.url.rsplit("/", 1)[1] == scheduled, f"opened {page.url}, not {scheduled}")

        self.step("the status filter changed while the list for the one before is loading: the later filter's list stays, "
                  "when the earlier answer comes second")
        # The list for Done is held back until Cancelled's list is shown, then let through: an
        # older answer that arrives second must not replace the newer filter's rows.
        held = []
        def hold_done(route):
            if "status=done" in route.request.url:
                held.append(route)
            else:
                route.continue_()
        lists = re.compile(r".*/v1/apps/[^/?]+/notifications[?].*")
        page.route(lists, hold_done)
        by("nav-overview").click()
        by("notifications-status").select_option("done")
        deadline = time.monotonic() + 15
        while not held and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        check(len(held) == 1, f"{len(held)} requests for Done were held, not 1")
        by("notifications-status").select_option("cancelled")
        expect(rows).to_have_count(2)
        for route in held:
            route.continue_()
        page.wait_for_timeout(1000)  # the held answer arrives and is dropped
        expect(rows).to_have_count(2)
        for index in range(2):
            expect(rows.nth(index).locator(".badge")).to_have_text("cancelled")
        by("notifications-table").scroll_into_view_if_needed()
        self.shot(page, "notifications-filter-changed.png", full_page=False)
        page.unroute(lists, hold_done)

        self.step("devices: by token opens its detail (every field)")
        by("nav-devices").click()
        by("device-search-by").select_option("token")
        by("device-search-value").fill(BOB)
        by("device-search-submit").click()
        expect(by("device-view")).to_be_visible()
        expect(by("device-field-token")).to_have_text(BOB)
        expect(by("device-field-user")).to_have_text("bob")
        expect(by("device-field-tags")).to_have_text("beta")
        expect(by("device-field-kind")).to_have_text("alert")
        expect(by("device-field-environment")).to_have_text("production")
        expect(by("device-status")).to_have_text("active")
        for field in ("badge", "reason", "createdAt", "updatedAt", "invalidatedAt"):
            expect(by(f"device-field-{field}")).to_be_visible()
        self.shot(page, "device-detail.png")

        self.step("devices: an unknown token says so")
        by("nav-devices").click()
        by("device-search-by").select_option("token")
        by("device-search-value").fill("00" * 32)
        by("device-search-submit").click()
        expect(by("device-error")).to_have_text(f"no device {'00' * 32} is registered with shop")

        self.step("devices: by user, by tag; a row opens the device")
        by("nav-devices").click()
        by("device-search-by").select_option("user")
        by("device-search-value").fill("alice")
        by("device-search-submit").click()
        device_rows = page.locator("[data-testid=device-row]")
        expect(device_rows).to_have_count(1)
        expect(device_rows.first).to_have_attribute("data-token", ALICE)
        by("device-search-by").select_option("tag")
        by("device-search-value").fill("beta")
        by("device-search-submit").click()
        expect(device_rows).to_have_count(3)
        tokens = sorted(device_rows.evaluate_all("rows => rows.map(row => row.dataset.token)"))
        check(tokens == sorted([ALICE, BOB, GONE]), f"tag beta: {tokens}")
        self.shot(page, "devices-search.png")
        page.locator(f"[data-testid=device-row][data-token='{GONE}'] td").nth(3).click()
        expect(by("device-field-token")).to_have_text(GONE)

        self.step("devices: every invalid one (no value, a status): old, with the reason APNs gave")
        by("nav-devices").click()
        by("device-search-by").select_option("user")
        by("device-search-value").fill("")
        by("device-search-status").select_option("invalid")
        by("device-search-submit").click()
        expect(device_rows).to_have_count(1)
        expect(device_rows.first).to_have_attribute("data-token", OLD)
        expect(device_rows.first.locator(".badge")).to_have_text("invalid")
        device_rows.first.locator("a").click()
        expect(by("device-status")).to_have_text("invalid")
        expect(by("device-field-reason")).to_have_text("BadDeviceToken")

        self.step("a user named like markup is shown as text, never as an element")
        by("nav-devices").click()
        by("device-search-by").select_option("tag")
        by("device-search-value").fill("xss")
        by("device-search-submit").click()
        cell = page.locator(f"[data-testid=device-row][data-token='{XSS}'] [data-testid=device-user]")
        expect(cell).to_have_text(XSS_USER)
        expect(cell).to_be_visible()
        check(cell.locator("img").count() == 0, "an img element inside the user's cell")
        cell.click()
        expect(by("device-field-user")).to_have_text(XSS_USER)
        check(by("device-field-user").locator("img").count() == 0, "an img element in the device's user field")
        check(page.locator("img").count() == 0, "an img element on the page")

        self.step("a browser: listed as webpush under its ID; its detail names the push service; a send to its user reaches it")
        by("nav-devices").click()
        by("device-search-by").select_option("user")
        by("device-search-value").fill(WEB_USER)
        by("device-search-status").select_option("")
        by("device-search-submit").click()
        expect(device_rows).to_have_count(1)
        expect(device_rows.first).to_have_attribute("data-token", self.browser_id)
        expect(device_rows.first.get_by_test_id("device-platform")).to_have_text("webpush")
        device_rows.first.locator("a").click()
        expect(by("device-field-token")).to_have_text(self.browser_id)
        expect(by("device-field-platform")).to_have_text("webpush")
        origin = re.match(r"https://[^/]+", self.subscription["endpoint"]).group(0)
        expect(by("device-field-pushService")).to_have_text(origin)
        expect(by("device-field-kind")).to_have_count(0)
        self.shot(page, "device-browser.png")
        by("device-send").click()
        expect(by("send-target-value")).to_have_value(self.browser_id)
        by("send-submit").click()
        expect(by("notification-status")).to_have_text("done")
        expect(by("notification-count-accepted")).to_have_text("1")
        expect(page.locator("[data-testid=platform-outcomes][data-platform=webpush]")).to_have_text("webpush: 1 accepted, 0 rejected, 0 failed")
        expect(page.locator("[data-testid=platform-outcomes][data-platform=apns]")).to_have_text("apns: 0 accepted, 0 rejected, 0 failed")
        self.shot(page, "notification-browser.png")

        self.step("an Android device: listed as fcm under its ID; its detail shows its FCM token; a send reaches it")
        by("nav-devices").click()
        by("device-search-by").select_option("user")
        by("device-search-value").fill(ANDROID_USER)
        by("device-search-status").select_option("")
        by("device-search-submit").click()
        expect(device_rows).to_have_count(1)
        expect(device_rows.first).to_have_attribute("data-token", self.android_id)
        expect(device_rows.first.get_by_test_id("device-platform")).to_have_text("fcm")
        device_rows.first.locator("a").click()
        expect(by("device-field-platform")).to_have_text("fcm")
        expect(by("device-field-registrationToken")).to_have_text(ANDROID_TOKEN)
        expect(by("device-field-environment")).to_have_count(0)
        self.shot(page, "device-android.png")
        by("device-send").click()
        by("send-submit").click()
        expect(by("notification-status")).to_have_text("done")
        expect(page.locator("[data-testid=platform-outcomes][data-platform=fcm]")).to_have_text("fcm: 1 accepted, 0 rejected, 0 failed")

        self.step("templates: one stored through the API in two languages is listed with its languages and variables; its "
                  "markup body is shown as text")
        status, answer, _ = call(self.base, KEY_A, "PUT", "/v1/apps/shop/templates/shipping", json.dumps(TEMPLATE))
        check(status == 200 and answer.get("version") == 1 and answer.get("languages") == ["de", "en"], f"PUT template: {status} {answer}")
        by("nav-templates").click()
        expect(by("templates-view")).to_be_visible()
        template_row = page.locator("[data-testid=template-row][data-name=shipping]")
        expect(template_row).to_have_count(1)
        expect(template_row.get_by_test_id("template-row-languages")).to_have_text("de, en")
        expect(template_row.get_by_test_id("template-row-variables").locator(".tag")).to_have_text(["name", "order"])
        expect(template_row.locator("td").nth(1)).to_have_text("v1")
        self.shot(page, "templates.png")
        template_row.get_by_test_id("template-row-name").click()
        expect(by("template-view")).to_be_visible()
        expect(by("template-name")).to_have_text("shipping")
        expect(by("template-version")).to_have_text("v1")
        expect(by("template-field-requiredVariables")).to_have_text("order")
        variants = page.locator("[data-testid=template-variant]")
        expect(variants).to_have_count(2)
        for language in ("de", "en"):
            body_cell = page.locator(f"[data-testid=template-variant][data-language={language}] [data-testid=template-variant-body]")
            expect(body_cell).to_have_text(XSS_USER)
            check(body_cell.locator("img").count() == 0, f"an img element in the {language} variant's body")
        expect(page.locator("[data-testid=template-variant][data-language=de] [data-testid=template-variant-title]")).to_have_text(
            "Bestellung {{order}} ist unterwegs")
        check(page.locator("img").count() == 0, "an img element on the template's page")

        self.step("templates: a preview without its required variable shows the API's message; in de it renders the German "
                  "title, subtitle and the markup body as text, and the payload; a free-text locale picks its variant")
        by("template-preview-language").select_option("de")
        by("template-preview-data").fill("{}")
        by("template-preview-submit").click()
        status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/templates/shipping/preview", json.dumps({"locale": "de", "data": {}}))
        check(status == 400, f"a preview without its variable: {status} {answer}")
        expect(by("template-preview-error")).to_have_text(answer["error"]["message"])
        expect(by("template-preview-result")).to_be_hidden()
        by("template-preview-data").fill('{"order": "A-17"}')
        by("template-preview-submit").click()
        expect(by("template-preview-error")).to_be_hidden()
        expect(by("template-preview-title")).to_have_text("Bestellung A-17 ist unterwegs")
        expect(by("template-preview-subtitle")).to_have_text("Danke, Kunde")
        expect(by("template-preview-body")).to_have_text(XSS_USER)
        expect(by("template-preview-used")).to_contain_text("de variant")
        shown = json.loads(by("template-preview-payload").text_content())
        check(shown == {"aps": {"alert": {"title": "Bestellung A-17 ist unterwegs", "subtitle": "Danke, Kunde", "body": XSS_USER}}, "orderID": "A-17"},
              f"the payload shown: {shown}")
        check(page.locator("img").count() == 0, "an img element on the page after the preview")
        self.shot(page, "template-preview.png")
        for locale, title in (("de-AT", "Bestellung A-17 ist unterwegs"), ("pt-BR", "Order A-17 shipped")):
            by("template-preview-locale").fill(locale)
            by("template-preview-submit").click()
            expect(by("template-preview-title")).to_have_text(title)
        by("template-preview-locale").fill("not a locale")
        by("template-preview-submit").click()
        expect(by("template-preview-error")).to_contain_text("is not a BCP 47 language tag")
        by("template-preview-locale").fill("")
        by("template-preview-data").fill("[1")
        by("template-preview-submit").click()
        expect(by("template-preview-error")).to_have_text('Data: must be a JSON object of the variables, e.g. {"order": "1234"}')

        self.step("overview: the categories panel lists the app's categories, kind, consent and caps ('at most 3 per day')")
        by("nav-overview").click()
        expect(by("overview-view")).to_be_visible()
        category = lambda name: page.locator(f"[data-testid=category-row][data-category={name}]")
        expect(page.locator("[data-testid=category-row]")).to_have_count(3)
        expect(category("marketing").get_by_test_id("category-caps")).to_have_text("at most 3 per day; at most 1 per 10 minutes")
        expect(category("marketing").get_by_test_id("category-kind")).to_have_text("commercial")
        expect(category("marketing").get_by_test_id("category-consent")).to_have_text("opt-out")
        expect(category("orders").get_by_test_id("category-kind")).to_have_text("transactional")
        expect(category("orders").get_by_test_id("category-consent")).to_have_text("always sent")
        expect(category("orders").get_by_test_id("category-caps")).to_have_text("no cap")
        expect(category("news").get_by_test_id("category-consent")).to_have_text("opt-in")
        expect(by("categories-language")).to_have_text("Default language: en")
        by("categories-card").scroll_into_view_if_needed()
        self.shot(page, "categories.png", full_page=False)

        self.step("a user's preferences put through the API are shown with each category's default; the form changes one")
        status, answer, _ = call(self.base, KEY_A, "PUT", "/v1/apps/shop/users/alice/preferences",
                                 json.dumps({"categories": {"marketing": False, "news": {"webpush": True}}}))
        check(status == 200 and answer.get("categories", {}).get("marketing") is False, f"PUT preferences: {status} {answer}")
        by("nav-users").click()
        expect(by("users-view")).to_be_visible()
        by("user-search-value").fill("alice")
        by("user-search-submit").click()
        expect(by("user-name")).to_have_text("alice")
        choice = lambda name: page.locator(f"[data-testid=user-category][data-category={name}]")
        expect(choice("marketing").get_by_test_id("user-choice")).to_have_text("opted out")
        expect(choice("marketing").get_by_test_id("user-default")).to_have_text("received (opt-out)")
        expect(choice("news").get_by_test_id("user-choice")).to_have_text("webpush: receives")
        expect(choice("news").get_by_test_id("user-default")).to_have_text("not received (opt-in)")
        expect(choice("orders").get_by_test_id("user-default")).to_have_text("always sent")
        expect(choice("orders").locator("select")).to_have_count(0)
        self.shot(page, "user-preferences.png")
        choice("news").locator("select").select_option("on")
        by("user-save").click()
        expect(by("user-saved")).to_have_text("Saved.")
        expect(choice("news").get_by_test_id("user-choice")).to_have_text("receives")
        status, answer, _ = call(self.base, KEY_A, "GET", "/v1/apps/shop/users/alice/preferences")
        check(status == 200 and answer["categories"] == {"marketing": False, "news": True}, f"after the form's PUT: {status} {answer}")

        self.step("a notification in category marketing, from the template, to alice (opted out): its page shows optedOut 1, "
                  "its category and template; the deliveries filter offers optedOut and lists her device")
        status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/notifications", json.dumps({
            "to": {"users": ["alice"]}, "payload": {"aps": {"sound": "default"}}, "category": "marketing",
            "template": "shipping", "data": {"order": "B-2"}}))
        check(status == 202, f"send in category marketing: {status} {answer}")
        held_back = answer["id"]
        done = wait_done(self.base, KEY_A, held_back)
        check(done.get("optedOut") == 1 and done.get("accepted") == 0, f"the notification to alice: {done}")
        page.goto(self.base + f"/console#/apps/shop/notifications/{held_back}")
        expect(by("notification-status")).to_have_text("done")
        expect(by("notification-count-optedOut")).to_have_text("1")
        expect(by("notification-count-capped")).to_have_text("0")
        expect(by("notification-count-digested")).to_have_text("0")
        expect(by("notification-count-accepted")).to_have_text("0")
        expect(by("notification-progress")).to_have_attribute("aria-valuenow", "100")
        expect(by("notification-category")).to_have_text("marketing")
        expect(by("notification-template")).to_have_text("shipping v1")
        self.shot(page, "notification-opted-out.png")
        by("notification-deliveries-link").click()
        expect(by("deliveries-view")).to_be_visible()
        outcomes = page.locator("#deliveries-outcome option").evaluate_all("options => options.map(option => option.value)")
        check(outcomes == ["", "accepted", "rejected", "failed", "optedOut", "capped", "digested"], f"the outcome filter offers {outcomes}")
        by("deliveries-outcome").select_option("optedOut")
        expect(page).to_have_url(re.compile(r"[?]outcome=optedOut$"))
        row = page.locator(f"[data-testid=delivery-row][data-token='{ALICE}']")
        expect(row).to_have_attribute("data-outcome", "optedOut")
        expect(row.locator(".badge")).to_have_text("optedOut")
        by("deliveries-outcome").select_option("capped")
        expect(page.locator("#deliveries-list .empty")).to_have_text("No capped devices.")
        by("nav-overview").click()
        by("notifications-status").select_option("")  # the filter an earlier step left on cancelled
        listed = page.locator(f"[data-testid=notification-row][data-id='{held_back}']")
        skipped = listed.get_by_test_id("notification-row-skipped")
        expect(skipped).to_have_text("1 (1 opted out)")
        expect(skipped).to_have_attribute("title", "Not sent: 1 opted out")
        for kind, value in (("opted-out", "1"), ("capped", "0"), ("digested", "0")):
            expect(skipped).to_have_attribute(f"data-{kind}", value)

        self.step("a digest to users with no devices: its page shows the digest's key")
        status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/notifications", json.dumps({
            "to": {"users": ["nobody-here"]}, "payload": {"aps": {"alert": "news"}}, "category": "news",
            "digest": {"key": "daily-news", "windowSeconds": 5, "item": XSS_USER}}))
        check(status == 202, f"send a digest: {status} {answer}")
        page.goto(self.base + f"/console#/apps/shop/notifications/{answer['id']}")
        expect(by("notification-digest")).to_have_text("daily-news")
        expect(by("notification-digest-item")).to_have_text(XSS_USER)
        expect(by("notification-category")).to_have_text("news")
        check(page.locator("img").count() == 0, "an img element on the digest's page")

        self.step("recent notifications at 1280×800, every row (More) and a page of the widest values (an answer from "
                  "page.route): the skip counts are one Skipped column, and the table is no wider than its card")
        fmt = lambda number: page.evaluate("(n) => new Intl.NumberFormat().format(n)", number)
        check(page.viewport_size == {"width": 1280, "height": 800}, f"viewport {page.viewport_size}")
        by("nav-overview").click()
        expect(by("overview-view")).to_be_visible()
        by("notifications-status").select_option("")
        expect(rows).to_have_count(20)
        while by("notifications-more").is_visible():
            shown = rows.count()
            by("notifications-more").click()
            expect(rows).not_to_have_count(shown)
        headers = [text.strip() for text in page.locator("#notifications-table thead th").all_text_contents()]
        check(headers == ["ID", "Created", "Audience", "Type", "Status", "Targeted", "Accepted", "Rejected", "Failed", "Skipped"],
              f"the table's columns: {headers}")
        fits = page.evaluate(TABLE_FITS)
        print(f"     {rows.count()} rows: table {fits['table']} px wide, its container {fits['client']} px", flush=True)
        check(fits["table"] <= fits["client"] and fits["wrap"] <= fits["client"], f"the table is wider than its card: {fits}")
        _, listing, _ = call(self.base, KEY_A, "GET", "/v1/apps/shop/notifications?limit=1")
        widest = dict(listing["notifications"][0], pushType="fileprovider", status="cancelled",
                      audience={"type": "users", "count": 1200, "sample": ["customer-" + "7" * 60, XSS_USER]},
                      targeted=1_234_567, accepted=1_200_000, rejected={"Unregistered": 12_345, "BadDeviceToken": 1_111},
                      failed=7_777, optedOut=12_345, capped=1_234, digested=123)
        lists = re.compile(r".*/v1/apps/shop/notifications[?].*")
        answer = fulfill_json({"notifications": [widest, dict(widest, optedOut=0, digested=0), dict(widest, optedOut=0, capped=0, digested=0)]})
        page.route(lists, answer)
        by("notifications-status").select_option("cancelled")
        expect(rows).to_have_count(3)
        expect(rows.get_by_test_id("notification-row-skipped")).to_have_text([
            f"{fmt(13_702)} ({fmt(12_345)} opted out, {fmt(1_234)} capped, 123 digested)", f"{fmt(1_234)} ({fmt(1_234)} capped)", "0"])
        expect(rows.first.locator("td").nth(2)).to_contain_text(XSS_USER)
        check(page.locator("img").count() == 0, "an img element in the notifications table")
        fits = page.evaluate(TABLE_FITS)
        print(f"     the widest values: table {fits['table']} px wide, its container {fits['client']} px", flush=True)
        check(fits["table"] <= fits["client"] and fits["wrap"] <= fits["client"], f"the table is wider than its card: {fits}")
        by("notifications-table").scroll_into_view_if_needed()
        self.shot(page, "notifications-table.png", full_page=False)
        page.unroute(lists, answer)
        by("notifications-status").select_option("")

        self.step(f"a browser subscribed at the test's own push service (user {RECEIPTS_USER}); a notification to {RECEIPTS_USER}, "
                  f"bob and {ANDROID_USER} (webpush, apns, fcm): its page shows the funnel in all and per platform, no receipts yet")
        self.push_id, subscription = self.push.subscribe()
        status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/webpush/subscriptions",
                                 json.dumps(dict(subscription, user=RECEIPTS_USER)))
        check(status == 201 and answer.get("platform") == "webpush", f"POST subscription for {RECEIPTS_USER}: {status} {answer}")
        status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/notifications", json.dumps({
            "to": {"users": [RECEIPTS_USER, "bob", ANDROID_USER]},
            "payload": {"aps": {"alert": {"title": "Your order shipped", "body": "Arrives Tuesday"}}}}))
        check(status == 202, f"send to {RECEIPTS_USER}, bob and {ANDROID_USER}: {status} {answer}")
        funnelled = answer["id"]
        done = wait_done(self.base, KEY_A, funnelled)
        check(done.get("targeted") == 3 and done.get("accepted") == 3, f"the notification: {done}")
        check(done.get("receipts") == {"received": 0, "opened": 0, "dismissed": 0, "clicked": 0}, f"its receipts: {done.get('receipts')}")
        page.goto(self.base + f"/console#/apps/shop/notifications/{funnelled}")
        expect(by("notification-status")).to_have_text("done")
        for event in ("received", "opened", "dismissed", "clicked"):
            expect(by(f"notification-count-{event}")).to_have_text("0")
        groups = page.locator("[data-testid=funnel-group]")
        expect(groups).to_have_count(4)
        platforms = groups.evaluate_all("groups => groups.map((group) => group.dataset.platform)")
        check(platforms == ["total", "apns", "webpush", "fcm"], f"the funnel's groups: {platforms}")
        group = lambda name: page.locator(f"[data-testid=funnel-group][data-platform={name}]")
        expect(group("total").get_by_test_id("funnel-count")).to_have_text(["3", "3", "0", "0"])
        expect(group("total").get_by_test_id("funnel-rate")).to_have_text(["", "100 % of sent", "0 % of accepted", "0 % of accepted"])
        expect(group("total").locator("h3")).to_have_text("All platforms · 3 targeted")
        expect(group("webpush").get_by_test_id("funnel-time-received")).to_have_text("Time to received: none reported yet")

        self.step(f"the push service decrypts {RECEIPTS_USER}'s message: a 48-character receipt under \"herald\"; reported received, "
                  "opened and clicked to POST /v1/receipts (no key, as the browser kit does): the open page shows them when it reads "
                  "the notification again (every 15 s once done)")
        messages = self.push.received(self.push_id)
        check(len(messages) == 1, f"the push service has {len(messages)} messages")
        receipt = json.loads(messages[0]).get("herald")
        check(isinstance(receipt, str) and re.fullmatch(r"[A-Za-z0-9_-]{48}", receipt), f"no receipt in {messages[0]!r}")
        status, answer, _ = call(self.base, None, "POST", "/v1/receipts", json.dumps({"events": [
            {"receipt": receipt, "event": "received"}, {"receipt": receipt, "event": "opened"},
            {"receipt": receipt, "event": "clicked", "action": "view"}]}), {"Content-Type": "text/plain;charset=UTF-8"})
        check(status == 202 and answer == {"taken": 3, "refused": []}, f"POST /v1/receipts: {status} {answer}")
        started = time.monotonic()
        expect(by("notification-count-received")).to_have_text("1", timeout=25_000)
        print(f"     shown {time.monotonic() - started:.1f} s after the report", flush=True)
        for event, value in (("opened", "1"), ("dismissed", "0"), ("clicked", "1")):
            expect(by(f"notification-count-{event}")).to_have_text(value)
        _, funnel, _ = call(self.base, KEY_A, "GET", f"/v1/notifications/{funnelled}/funnel")
        check(funnel["total"]["received"] == 1 and funnel["total"]["opened"] == 1 and funnel["total"]["clicked"] == 1, f"the funnel: {funnel}")
        stages = ("sent", "accepted", "received", "opened")
        expect(group("total").get_by_test_id("funnel-count")).to_have_text(["3", "3", "1", "1"])
        expect(group("total").get_by_test_id("funnel-rate")).to_have_text(["", "100 % of sent", "33.3 % of accepted", "33.3 % of accepted"])
        expect(group("webpush").get_by_test_id("funnel-rate")).to_have_text(["", "100 % of sent", "100 % of accepted", "100 % of accepted"])
        expect(group("apns").get_by_test_id("funnel-rate")).to_have_text(["", "100 % of sent", "0 % of accepted", "0 % of accepted"])
        for name, stages_of in [("total", funnel["total"])] + [(platform["platform"], platform) for platform in funnel["platforms"]]:
            expect(group(name).get_by_test_id("funnel-count")).to_have_text([fmt(stages_of[stage]) for stage in stages])
            expect(group(name).get_by_test_id("funnel-dismissed")).to_have_text(fmt(stages_of["dismissed"]))
            expect(group(name).get_by_test_id("funnel-clicked")).to_have_text(fmt(stages_of["clicked"]))
        web = next(platform for platform in funnel["platforms"] if platform["platform"] == "webpush")
        for event, field in (("received", "timeToReceivedMs"), ("opened", "timeToOpenedMs")):
            line = group("webpush").get_by_test_id(f"funnel-time-{event}")
            expect(line).to_have_attribute("data-p50", str(web[field]["p50"]))
            expect(line).to_have_attribute("data-p95", str(web[field]["p95"]))
            expect(line).to_have_text(re.compile(rf"^Time to {event}: p50 [0-9.,]+ (ms|s|min)( [0-9]+ s)?, p95 [0-9.,]+ (ms|s|min)( [0-9]+ s)?$"))
            expect(group("apns").get_by_test_id(f"funnel-time-{event}")).to_have_text(f"Time to {event}: none reported yet")
        # Each bar is its stage's share of the group's largest: received is a third of sent in all, the whole of it on webpush.
        widths = group("total").locator(".funnel-bar").evaluate_all("bars => bars.map((bar) => bar.getBoundingClientRect().width)")
        check(widths[0] > 0 and abs(widths[2] / widths[0] - 1 / 3) < 0.02 and widths[1] == widths[0], f"the total's bar widths: {widths}")
        widths = group("apns").locator(".funnel-bar").evaluate_all("bars => bars.map((bar) => bar.getBoundingClientRect().width)")
        check(widths[0] > 0 and widths[2] == 0 and widths[3] == 0, f"apns's bar widths: {widths}")
        print(f"     funnel: {funnel['total']}; webpush times {web['timeToReceivedMs']}, {web['timeToOpenedMs']}", flush=True)
        self.shot(page, "notification-funnel.png")

        self.step("overview: the receipts chart has 14 days; its totals and today's row, as text, are what GET /v1/apps/shop/funnel?days=14 says")
        _, daily, _ = call(self.base, KEY_A, "GET", "/v1/apps/shop/funnel?days=14")
        days = daily["days"]
        names = ("notifications", "targeted", "accepted", "received", "opened", "dismissed", "clicked")
        totals = {name: sum(day[name] for day in days) for name in names}
        check(len(days) == 14 and totals["received"] == 1 and totals["opened"] == 1 and totals["clicked"] == 1, f"the app's funnel: {daily}")
        by("nav-overview").click()
        expect(by("receipts-svg")).to_be_visible()
        day_groups = page.locator("[data-testid=receipts-day]")
        expect(day_groups).to_have_count(14)
        for name in ("notifications", "accepted", "received", "opened", "dismissed", "clicked"):
            expect(by(f"receipts-{name}")).to_have_text(fmt(totals[name]))
        rate = page.evaluate("([p, w]) => `${new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 }).format(p / w * 100)} %`",
                             [totals["received"], totals["accepted"]])
        expect(by("receipts-received-rate")).to_have_text(rate)
        expect(day_groups.last).to_have_attribute("data-day", days[-1]["day"])
        for name in ("accepted", "received", "opened"):
            check(day_groups.last.locator(f"rect.bar-{name}").count() == 1, f"no {name} bar for today")
        check(day_groups.first.locator("rect.bar").count() == sum(1 for name in ("accepted", "received", "opened") if days[0][name] > 0),
              "bars for a day with none")
        today = page.locator(f"[data-testid=receipts-row][data-day='{days[-1]['day']}']")
        for name in names:
            expect(today.get_by_test_id(f"receipts-row-{name}")).to_have_text(fmt(days[-1][name]))
        label = by("receipts-svg").get_attribute("aria-label")
        check(f"{fmt(totals['received'])} received" in label and f"{fmt(totals['opened'])} opened" in label, f"the chart's label: {label}")
        by("receipts-card").scroll_into_view_if_needed()
        self.shot(page, "overview-receipts.png", full_page=False)

        self.step("the receipts chart for a made-up fortnight (an answer from page.route): each day's numbers in its row and "
                  "tooltip, the totals and rates as text, a bar each per day")
        made_up = []
        for index, day in enumerate(days):
            accepted = 0 if index == 3 else 40_000 + 3_000 * index - (15_000 if index % 7 in (5, 6) else 0)
            made_up.append(dict(day, notifications=0 if index == 3 else 2 + index % 3, targeted=accepted + accepted // 40, accepted=accepted,
                                received=accepted * 62 // 100, opened=accepted * 11 // 100, dismissed=accepted // 5, clicked=accepted // 50))
        made_totals = {name: sum(day[name] for day in made_up) for name in names}
        route_funnel = re.compile(r".*/v1/apps/shop/funnel([?].*)?$")
        answer = fulfill_json(dict(daily, days=made_up))
        page.route(route_funnel, answer)
        by("overview-refresh").click()
        expect(by("receipts-accepted")).to_have_text(fmt(made_totals["accepted"]))
        for name in ("notifications", "received", "opened", "dismissed", "clicked"):
            expect(by(f"receipts-{name}")).to_have_text(fmt(made_totals[name]))
        for index in (0, 3, 13):
            row = page.locator(f"[data-testid=receipts-row][data-day='{made_up[index]['day']}']")
            for name in names:
                expect(row.get_by_test_id(f"receipts-row-{name}")).to_have_text(fmt(made_up[index][name]))
            expect(day_groups.nth(index).locator("rect.bar")).to_have_count(0 if index == 3 else 3)
            expect(day_groups.nth(index).locator("title")).to_contain_text(f"{fmt(made_up[index]['accepted'])} accepted, "
                                                                           f"{fmt(made_up[index]['received'])} received")
        # Bar heights follow the numbers: a day's received bar is 62 % of its accepted one.
        heights = day_groups.nth(13).locator("rect.bar").evaluate_all("rects => rects.map((rect) => Number(rect.getAttribute('height')))")
        check(abs(heights[1] / heights[0] - 0.62) < 0.01 and abs(heights[2] / heights[0] - 0.11) < 0.01, f"day 14's bar heights: {heights}")
        page.locator("#receipts-details summary").click()
        expect(by("receipts-days-table")).to_be_visible()
        by("receipts-card").scroll_into_view_if_needed()
        self.shot(page, "overview-receipts-fortnight.png", full_page=False)
        page.locator("#receipts-details summary").click()
        page.unroute(route_funnel, answer)
        by("overview-refresh").click()
        expect(by("receipts-received")).to_have_text(fmt(totals["received"]))

        self.step("the key is in sessionStorage only: not in the URL, localStorage, cookies or any request URL")
        stored = page.evaluate("sessionStorage.getItem('herald.apiKey')")
        check(stored == KEY_A, "the key is not in sessionStorage")
        check(KEY_A not in page.url, "the key is in the URL")
        check(page.evaluate("localStorage.length") == 0, "localStorage is used")
        check(context.cookies() == [], f"cookies: {context.cookies()}")
        check(page.evaluate("document.cookie") == "", "document.cookie is set")
        urls = [request.url for request in self.requests]
        check(not any(KEY_A in url or KEY_B in url for url in urls), "a request URL holds the key")
        api_requests = [request for request in self.requests if "/v1/" in request.url]
        keys = {request.headers.get("authorization") for request in api_requests}
        check(keys == {"Bearer hk_not-a-key", f"Bearer {KEY_A}"}, f"API requests were sent with {keys}")
        others = sorted({url for url in urls if not url.startswith(self.base)})
        check(not others, f"requests to elsewhere: {others}")

        self.step("sign out clears sessionStorage; key B gets an app picker and sees app other")
        with page.expect_navigation():
            by("signout").click()
        expect(by("signin-view")).to_be_visible()
        check(page.evaluate("sessionStorage.length") == 0, "sessionStorage not cleared on sign-out")
        check(not page.url.endswith("#/apps/shop") and KEY_A not in page.url, f"after sign-out: {page.url}")
        self.sign_in(page, KEY_B)
        expect(by("app-picker")).to_be_visible()
        options = page.locator("#app-picker option").all_text_contents()
        check(options == ["other", "shop"], f"key B's apps: {options}")
        by("app-picker").select_option("other")
        expect(page).to_have_url(re.compile(r"#/apps/other$"))
        self.expect_counts(page, total=1, active=1, unregistered=0, invalid=0, alert=1, voip=None, production=1, sandbox=0, apns=1, webpush=0, fcm=0)
        by("app-picker").select_option("shop")
        expect(by("count-total")).to_have_text("10")  # the nine seeded, and rita's browser

        self.step("a reload keeps the tab signed in, on the same view; a phone-sized screen still works")
        page.reload()
        expect(by("overview-view")).to_be_visible()
        expect(page).to_have_url(re.compile(r"#/apps/shop$"))
        expect(by("count-total")).to_have_text("10")
        page.set_viewport_size({"width": 390, "height": 844})
        expect(by("nav-devices")).to_be_visible()
        # The chart scrolls sideways there, and opens at its latest minute.
        latest_shown = page.evaluate("""() => {
            const chart = document.getElementById('activity-chart').getBoundingClientRect();
            const minutes = document.querySelectorAll('[data-testid=activity-minute]');
            const latest = minutes[minutes.length - 1].getBoundingClientRect();
            const scrolls = document.getElementById('activity-chart').scrollWidth > document.getElementById('activity-chart').clientWidth;
            return scrolls && latest.left >= chart.left && latest.right <= chart.right + 1;
        }""")
        check(latest_shown, "on a phone-sized screen the chart does not show its latest minute")
        self.shot(page, "overview-narrow.png")
        with page.expect_navigation():
            by("signout").click()
        expect(by("signin-view")).to_be_visible()
        check(page.evaluate("sessionStorage.length") == 0, "sessionStorage not cleared on sign-out")
        context.close()

    def sign_in(self, page, key):
        page.get_by_test_id("api-key").fill(key)
        page.get_by_test_id("signin-submit").click()
        expect(page.get_by_test_id("overview-view")).to_be_visible()
        expect(page.get_by_test_id("signin-view")).to_be_hidden()
        check(page.get_by_test_id("api-key").input_value() == "", "the key stays in the input after sign-in")

    def expect_counts(self, page, total, active, unregistered, invalid, alert, voip, production, sandbox, apns, webpush, fcm):
        by = page.get_by_test_id
        expect(by("count-total")).to_have_text(str(total))
        for name, value in (("status-active", active), ("status-unregistered", unregistered), ("status-invalid", invalid),
                            ("kind-alert", alert), ("environment-production", production), ("environment-sandbox", sandbox),
                            ("platform-apns", apns), ("platform-webpush", webpush), ("platform-fcm", fcm)):
            expect(by(f"count-{name}")).to_have_text(str(value))
        if voip is None:
            expect(by("count-kind-voip")).to_have_count(0)
        else:
            expect(by("count-kind-voip")).to_have_text(str(voip))

    def api_message(self, body):
        """What the API itself answers for this body: the message the form must show."""
        status, answer, _ = call(self.base, KEY_A, "POST", "/v1/apps/shop/notifications", body)
        check(status == 400, f"the API took {body!r}: {status} {answer}")
        return answer["error"]["message"]

    def count_posts(self):
        return sum(1 for request in self.requests if request.method == "POST" and request.url.endswith("/v1/apps/shop/notifications"))

    def count_gets(self, path):
        return sum(1 for request in self.requests if request.method == "GET" and request.url == self.base + path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--herald", required=True, help="the herald binary (with the console)")
    parser.add_argument("--screenshots", required=True, help="a directory for a PNG of each view")
    arguments = parser.parse_args()
    expect.set_options(timeout=WAIT_MS)
    run = Run(arguments.herald, arguments.screenshots)
    return run_script(arguments.herald, run, RUN_SECONDS, f"; screenshots in {run.screenshots}")


if __name__ == "__main__":
    sys.exit(main())
