#!/usr/bin/env python3
"""A real Synapse homeserver pushing through Herald's Matrix Push Gateway API.

Starts Synapse offline on SQLite in a temporary directory (its configuration generated, pushes
to 127.0.0.1 allowed with ip_range_whitelist), registers two users, gives the second an HTTP
pusher pointing at Herald's notify URL, and has the first send a message in a room they share:
Synapse pushes it to Herald (the calling test then sees it at the APNs mock). Then the second
user gets a pusher Herald rejects (an app_id no app of Herald names), a second message is sent,
and Synapse must drop that pusher, as the spec says a homeserver does with rejected pushkeys.

Run by Tests/HeraldCLITests/MatrixSynapseTests.swift; needs `python3 -m pip install matrix-synapse`.
Prints one line per step; exits non-zero with the reason on failure. Every wait is bounded.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(base, method, path, body=None, token=None):
    request = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def wait_until(what, condition, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise SystemExit(f"FAILED: not within {seconds} s: {what}")


def register(base, name):
    body = {"username": name, "password": "correct horse battery " + name, "inhibit_login": False}
    status, answer = call(base, "POST", "/_matrix/client/v3/register", body)
    if status == 401:
        body["auth"] = {"type": "m.login.dummy", "session": answer.get("session")}
        status, answer = call(base, "POST", "/_matrix/client/v3/register", body)
    if status != 200:
        raise SystemExit(f"FAILED: register {name}: {status} {answer}")
    return answer["access_token"]


def pushers(base, token):
    status, answer = call(base, "GET", "/_matrix/client/v3/pushers", token=token)
    if status != 200:
        raise SystemExit(f"FAILED: pushers: {status} {answer}")
    return [(pusher["app_id"], pusher["pushkey"]) for pusher in answer.get("pushers", [])]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--notify-url", required=True, help="Herald's /_matrix/push/v1/notify URL")
    parser.add_argument("--app-id", required=True, help="a Matrix app_id Herald serves (an APNs one)")
    parser.add_argument("--pushkey", required=True, help="an APNs token, as the pusher's pushkey")
    parser.add_argument("--message", required=True, help="the text of the message sent")
    parser.add_argument("--rejected-app-id", required=True, help="an app_id Herald does not serve")
    arguments = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="herald-synapse-")
    config_path = os.path.join(directory, "homeserver.yaml")
    subprocess.run(
        [sys.executable, "-m", "synapse.app.homeserver", "--server-name", "localhost", "--config-path", config_path,
         "--data-directory", directory, "--generate-config", "--report-stats=no"],
        check=True, cwd=directory, stdout=subprocess.DEVNULL, timeout=120,
    )
    with open(config_path) as file:
        config = yaml.safe_load(file)
    port = free_port()
    unlimited = {"per_second": 10000, "burst_count": 10000}
    config.update({
        "listeners": [{"port": port, "bind_addresses": ["127.0.0.1"], "type": "http", "tls": False, "x_forwarded": False,
                       "resources": [{"names": ["client"], "compress": False}]}],
        "database": {"name": "sqlite3", "args": {"database": os.path.join(directory, "homeserver.db")}},
        "enable_registration": True,
        "enable_registration_without_verification": True,
        # Pushes go to Herald on loopback, which Synapse refuses by default.
        "ip_range_whitelist": ["127.0.0.1"],
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "report_stats": False,
        "rc_message": unlimited,
        "rc_registration": unlimited,
        "rc_login": {"address": unlimited, "account": unlimited, "failed_attempts": unlimited},
    })
    # Synapse logs to standard error, kept in synapse.log.
    config.pop("log_config", None)
    with open(config_path, "w") as file:
        yaml.safe_dump(config, file)

    log = open(os.path.join(directory, "synapse.log"), "w")
    synapse = subprocess.Popen([sys.executable, "-m", "synapse.app.homeserver", "--config-path", config_path],
                               cwd=directory, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        def up():
            if synapse.poll() is not None:
                raise SystemExit(f"FAILED: synapse exited with {synapse.returncode}: " + open(log.name).read()[-3000:])
            try:
                return call(base, "GET", "/_matrix/client/versions")[0] == 200
            except OSError:
                return False
        wait_until("synapse answers", up, seconds=120)
        print("synapse up", flush=True)

        alice = register(base, "alice")
        bob = register(base, "bob")
        pusher = {"kind": "http", "app_id": arguments.app_id, "pushkey": arguments.pushkey, "app_display_name": "Chat",
                  "device_display_name": "iPhone", "lang": "en", "data": {"url": arguments.notify_url}}
        status, answer = call(base, "POST", "/_matrix/client/v3/pushers/set", pusher, token=bob)
        if status != 200:
            raise SystemExit(f"FAILED: set pusher: {status} {answer}")
        status, room = call(base, "POST", "/_matrix/client/v3/createRoom",
                            {"preset": "private_chat", "invite": ["@bob:localhost"], "name": "Mission Control"}, token=alice)
        if status != 200:
            raise SystemExit(f"FAILED: createRoom: {status} {room}")
        room_id = room["room_id"]
        status, answer = call(base, "POST", f"/_matrix/client/v3/join/{urllib.parse.quote(room_id)}", {}, token=bob)
        if status != 200:
            raise SystemExit(f"FAILED: join: {status} {answer}")

        def send(text, number):
            path = f"/_matrix/client/v3/rooms/{urllib.parse.quote(room_id)}/send/m.room.message/txn{number}"
            status, answer = call(base, "PUT", path, {"msgtype": "m.text", "body": text}, token=alice)
            if status != 200:
                raise SystemExit(f"FAILED: send: {status} {answer}")
            return answer["event_id"]

        print("sent " + send(arguments.message, 1), flush=True)

        # A pusher Herald rejects: Synapse must remove it once Herald says so.
        rejected = dict(pusher, app_id=arguments.rejected_app_id, pushkey="cmVqZWN0ZWQ=")
        status, answer = call(base, "POST", "/_matrix/client/v3/pushers/set", rejected, token=bob)
        if status != 200:
            raise SystemExit(f"FAILED: set the rejected pusher: {status} {answer}")
        if (arguments.rejected_app_id, "cmVqZWN0ZWQ=") not in pushers(base, bob):
            raise SystemExit("FAILED: the second pusher was not set")
        send(arguments.message + " again", 2)
        wait_until("synapse removes the pusher Herald rejected",
                   lambda: (arguments.rejected_app_id, "cmVqZWN0ZWQ=") not in pushers(base, bob))
        if (arguments.app_id, arguments.pushkey) not in pushers(base, bob):
            raise SystemExit("FAILED: the pusher Herald accepted was removed")
        print("rejected pusher removed", flush=True)
    finally:
        os.killpg(synapse.pid, signal.SIGTERM)
        try:
            synapse.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(synapse.pid, signal.SIGKILL)
            synapse.wait(timeout=30)
        log.close()


if __name__ == "__main__":
    main()
