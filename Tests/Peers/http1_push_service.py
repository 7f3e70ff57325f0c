"""An independent push service that speaks only HTTP/1.1 over TLS (Python's standard library,
written apart from Herald), for Herald's Web Push tests.

    python3 http1_push_service.py CERT_PEM KEY_PEM LOG_FILE MODE

Listens on 127.0.0.1 at a free port and prints the port on its first line; each connection it
accepts is logged as {"connection": ADDRESS}. ALPN offers
`http/1.1` only, as an HTTP/1.1-only push service does, so a client asking for h2 gets no
protocol. Each request it reads is appended to LOG_FILE as one JSON line (its path, version,
headers and body length). MODE decides the answers:

- `accept`: 201 Created with a Location, as RFC 8030 section 5 says.
- `gone`: 410 Gone with a JSON reason.
- `limited`: 429 without Retry-After, then 201 from the second request to a path on.
- `limited-after`: 429 with `Retry-After: 1`, then 201.
- `storm`: 503 to every request.
- `huge`: 201 with a body of 1 MiB.
- `cut`: a status line and half the headers, then the connection is closed.
- `slow`: 201, after 10 seconds.
- `informational`: `100 Continue` and `103 Early Hints` first, then 201.
"""
import json
import socket
import time
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

cert, key, log_file, mode = sys.argv[1:5]
lock = threading.Lock()
seen = {}
counter = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length > 0 else b""
        with lock:
            counter[0] += 1
            number = counter[0]
            seen[self.path] = seen.get(self.path, 0) + 1
            times = seen[self.path]
            with open(log_file, "a") as log:
                log.write(json.dumps({
                    "path": self.path, "version": self.request_version, "length": len(body),
                    "ttl": self.headers.get("TTL"), "encoding": self.headers.get("Content-Encoding"),
                    "authorization": (self.headers.get("Authorization") or "").split(" ")[0],
                }) + "\n")
        if mode == "slow":
            time.sleep(10)
        if mode == "informational":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
        if mode in ("accept", "slow", "informational") or (mode in ("limited", "limited-after") and times > 1):
            self.answer(201, b"", {"Location": "/m/%d" % number})
        elif mode == "gone":
            self.answer(410, b'{"reason": "unsubscribed"}', {"Content-Type": "application/json"})
        elif mode == "limited":
            self.answer(429, b"slow down", {})
        elif mode == "limited-after":
            self.answer(429, b"slow down", {"Retry-After": "1"})
        elif mode == "storm":
            self.answer(503, b"overloaded", {})
        elif mode == "huge":
            self.answer(201, b"x" * (1 << 20), {"Location": "/m/%d" % number})
        elif mode == "cut":
            self.wfile.write(b"HTTP/1.1 201 Created\r\nLocation: /m/")
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self.answer(500, b"unknown mode", {})

    def answer(self, status, body, headers):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    def process_request(self, request, client_address):
        with lock:
            with open(log_file, "a") as log:
                log.write(json.dumps({"connection": client_address[0]}) + "\n")
        super().process_request(request, client_address)


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
context.set_alpn_protocols(["http/1.1"])
server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
