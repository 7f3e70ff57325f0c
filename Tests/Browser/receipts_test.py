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

The push service is the test's own (herald_harness.PushService, RFC 8291 and 8292): `herald mock`'s Web Push
service decrypts each message too, but keeps it in its own process, with no route to read it
back. Headless Chromium has no push service to subscribe at, so the page's PushManager is
stood in for (add_init_script) by one that returns the push service's subscription; everything
after it, the kit and the gateway, is real. Everything it starts it stops, by PID.

    python3 Tests/Browser/receipts_test.py --herald .build/debug/herald
"""

import argparse
import http.server
import json
import os
import re
import sys
import time

from herald_harness import (WAIT_SECONDS, Background, BrowserRun, PushService, QuietHandler, api_key_entry, b64url, call,
                            check, chromium, eventually, request, run_script, unb64url, wait_done, watch,
                            write_configuration_file, write_push_tls, write_vapid_key)

# The whole run, set-up to clean-up; each wait inside has its own, shorter, bound (WAIT_SECONDS).
RUN_SECONDS = 170

APP = "shop"
USER = "wendy"
KEY = "hk_receipts-test-" + os.urandom(8).hex()
XSS = "<img src=x onerror=alert(1)>"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SDK = os.path.join(ROOT, "Sources", "HeraldGateway", "SDK")
TOKEN = re.compile(r"^[A-Za-z0-9_-]{48}$")


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


class Site(Background):
    """The team's site on 127.0.0.1 (another origin than the gateway's): its backend forwards a subscription with its API key."""

    def __init__(self, gateway):
        self.forwarded = []  # (what the page posted, the gateway's status, its answer)
        site = self

        class Handler(QuietHandler):
            def answer_text(self, status, text, content_type):
                self.answer(status, text.encode(), [("Content-Type", content_type), ("Cache-Control", "no-store")])

            def do_GET(self):
                if self.path == "/":
                    return self.answer_text(200, PAGE.format(gateway=gateway), "text/html; charset=utf-8")
                if self.path == "/sw.js":
                    return self.answer_text(200, SERVICE_WORKER.format(gateway=gateway), "text/javascript; charset=utf-8")
                self.answer_text(404, "not here", "text/plain")

            def do_POST(self):
                text = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.path != "/push/subscriptions":
                    return self.answer_text(404, "{}", "application/json")
                # What a team's backend does: the user is its signed-in user; the API key is its own.
                status, answer, _ = call(gateway, KEY, "POST", f"/v1/apps/{APP}/webpush/subscriptions", text)
                site.forwarded.append((json.loads(text), status, answer))
                self.answer_text(status, json.dumps(answer), "application/json")

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{server.server_port}"
        self.serve(server)


# MARK: The gateway

def write_configuration(directory, vapid, push_ca):
    # A browser-only app: Web Push and no APNs credentials (docs/webpush.md).
    configuration = {
        "listen": "127.0.0.1:0",
        "database": "sqlite:" + os.path.join(directory, "herald.db"),
        "apps": [{"id": APP, "webPush": {"vapidKeyFile": vapid, "subject": "mailto:ops@example.com",
                                         "defaultURL": "https://shop.example.com/", "caFile": push_ca,
                                         # The push service is on 127.0.0.1.
                                         "allowPrivateAddresses": True}}],
        "apiKeys": [api_key_entry("receipts-test", KEY, [APP])],
    }
    return write_configuration_file(directory, configuration)


def error_code(answer):
    """An error answer's code: the API's {"error": {"code": …, "message": …}}, or {"error": "…"}."""
    error = answer.get("error") if isinstance(answer, dict) else None
    return error.get("code") if isinstance(error, dict) else error


def forge(token):
    """The token with one character of its MAC (its last 8 bytes) changed: well-formed, not genuine."""
    index = 44
    return token[:index] + ("B" if token[index] != "B" else "C") + token[index + 1:]


class Run(BrowserRun):
    """The steps; self.problems keeps dialogs, script errors, console errors, reported at the end."""

    def run(self):
        with self.directory("herald-receipts-test-") as directory:
            self.start(directory)
            self.check_routes()
            with chromium() as browser:
                self.browse(browser)
            check(not self.problems, "the page or its service worker misbehaved:\n  " + "\n  ".join(self.problems))
            check(not self.push.problems, "the push service refused a message:\n  " + "\n  ".join(self.push.problems))

    def start(self, directory):
        self.step("start a push service (TLS, VAPID checked, messages decrypted), herald serve with a browser-only app, the team's site")
        vapid, self.application_server_key = write_vapid_key(directory)
        tls = write_push_tls(directory, "receipts test")
        self.push = self.keep(PushService(tls, self.application_server_key))
        configuration = write_configuration(directory, vapid, tls.ca)
        serve = self.start_process("herald serve", [self.herald, "serve", "--config", configuration], directory)
        self.base = serve.wait_for(r"listening on (http://127\.0\.0\.1:\d+)", 60).group(1)
        self.site = self.keep(Site(self.base))
        check(self.site.origin != self.base, "the site and the gateway share an origin")
        print(f"     gateway {self.base}, push service {self.push.origin}, site {self.site.origin}", flush=True)

    def check_routes(self):
        self.step("GET /sdk/herald-sw.js and /sdk/herald-page.js without a key: the repository's files, as text/javascript")
        for name in ("herald-sw.js", "herald-page.js"):
            status, body, headers = request(f"{self.base}/sdk/{name}", None)
            check(status == 200, f"/sdk/{name}: {status} {body[:200]!r}")
            check(headers.get("Content-Type", "").replace(" ", "").lower() == "text/javascript;charset=utf-8",
                  f"/sdk/{name} Content-Type: {headers.get('Content-Type')}")
            with open(os.path.join(SDK, name), "rb") as file:
                check(body == file.read(), f"/sdk/{name} is not {os.path.join(SDK, name)} (a build older than the file?)")

        self.step("POST /v1/receipts without a key: CORS preflight answered, malformed 400, a made-up receipt 403 receiptRefused")
        status, _, headers = request(f"{self.base}/v1/receipts", None, "OPTIONS", headers={
            "Origin": self.site.origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
        check(200 <= status < 300 and headers.get("Access-Control-Allow-Origin") == "*", f"preflight: {status} {dict(headers)}")
        check("POST" in headers.get("Access-Control-Allow-Methods", "POST").upper(), f"preflight methods: {headers.get('Access-Control-Allow-Methods')}")
        status, answer, headers = call(self.base, None, "POST", "/v1/receipts", "{not json", headers={"Origin": self.site.origin})
        check(status == 400 and headers.get("Access-Control-Allow-Origin") == "*", f"malformed: {status} {answer} {headers.get('Access-Control-Allow-Origin')}")
        made_up = b64url(bytes([0x10, 0]) + os.urandom(34))
        status, answer, headers = call(self.base, None, "POST", "/v1/receipts", json.dumps({"receipt": made_up, "event": "received"}),
                                       headers={"Content-Type": "text/plain;charset=UTF-8", "Origin": self.site.origin})
        check(status == 403 and error_code(answer) == "receiptRefused", f"a made-up receipt: {status} {answer}")
        check(headers.get("Access-Control-Allow-Origin") == "*", "403 without Access-Control-Allow-Origin")

    # MARK: In the browser

    def watch(self, context, page):
        """Dialogs, script errors and console errors (the 4xx answers the test provokes, a forged receipt, aside) of the
        page and its service worker, and the kit's warnings."""
        def on_warning(message):
            if message.type == "warning" and "HeraldSW" in message.text:
                self.problems.append(f"the kit warned: {message.text}")

        watch(page, context, self.problems)
        context.on("console", on_warning)

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
        status, answer, _ = call(self.base, KEY, "POST", f"/v1/apps/{APP}/notifications", json.dumps(body))
        check(status == 202, f"send: {status} {answer}")
        notification = answer["id"]
        answer = wait_done(self.base, KEY, notification, WAIT_SECONDS)
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
            status, answer, _ = call(self.base, KEY, "GET", f"/v1/notifications/{notification}")
            check(status == 200, f"GET notification: {status} {answer}")
            receipts = answer.get("receipts") or {}
            return receipts if all(receipts.get(name) == value for name, value in expected.items()) else None
        try:
            return eventually(counts, f"receipts {expected}", timeout=timeout)
        finally:
            _, answer, _ = call(self.base, KEY, "GET", f"/v1/notifications/{notification}")
            print(f"     receipts {answer.get('receipts') if answer else None}", flush=True)

    def funnel(self, notification):
        status, answer, _ = call(self.base, KEY, "GET", f"/v1/notifications/{notification}/funnel")
        check(status == 200 and answer.get("notification") == notification, f"funnel: {status} {answer}")
        platforms = [entry for entry in answer.get("platforms", []) if entry.get("platform") == "webpush"]
        check(len(platforms) == 1, f"funnel platforms: {answer.get('platforms')}")
        return platforms[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--herald", required=True, help="the herald binary (with /v1/receipts and /sdk)")
    arguments = parser.parse_args()
    return run_script(arguments.herald, Run(arguments.herald), RUN_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
