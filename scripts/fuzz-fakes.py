#!/usr/bin/env python3
"""Stand-ins for the external services the suite calls, for scripts/fuzz-api.sh: Kakao's user API
rejects every token (401: the login is E03) and PortOne issues tokens and knows no payment (404:
the validation is E82). Without them, the fuzzer would see 503s for a provider that is merely not
configured. Usage: fuzz-fakes.py PORT"""
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Fake(BaseHTTPRequestHandler):
    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/kakao/v2/user/me"):
            self.answer(401, {"msg": "this access token does not exist", "code": -401})
        elif self.path.startswith("/portone/payments/"):
            self.answer(404, {"code": -1, "message": "no such payment", "response": None})
        else:
            self.answer(404, {})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path == "/portone/users/getToken":
            now = int(time.time())
            self.answer(200, {"code": 0, "response": {"access_token": "fuzz-token", "now": now, "expired_at": now + 3600}})
        else:
            self.answer(404, {})

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Fake).serve_forever()
