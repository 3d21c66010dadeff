"""A STOMP-over-WebSocket test client (stomp.py's WSStompConnection): connects with an access
token, runs the steps it is given in order, and prints what happens as JSON lines.

Steps (JSON, --step repeatable):
  {"op":"subscribe","destination":"/topic/group/<id>","id":"s1"}
  {"op":"send","destination":"/kafka/send-channel-message","body":{...}}   "{{<type>.<key>}}" in a
      body string is replaced by <key> of the last received MESSAGE body whose type is <type>
  {"op":"wait","type":"message","content":"hi"}   waits for a new MESSAGE body with these members
  {"op":"sleep","seconds":1}
Lines: {"type":"connected"} {"type":"frame","destination","subscription","body"} {"type":"error","message","body"}
       {"type":"step","index"} {"type":"timeout","step"} {"type":"disconnected"} {"type":"done"}.
After the steps it keeps listening until --stop-file exists (or --seconds pass), then disconnects.
"""
import argparse
import json
import os
import sys
import threading
import time
from urllib.parse import urlparse

import stomp


def out(**line):
    sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    sys.stdout.flush()


class Listener(stomp.ConnectionListener):
    def __init__(self):
        self.lock = threading.Condition()
        self.bodies = []

    def on_message(self, frame):
        try:
            body = json.loads(frame.body)
        except ValueError:
            body = frame.body
        with self.lock:
            self.bodies.append(body)
            self.lock.notify_all()
        out(type="frame", destination=frame.headers.get("destination"), subscription=frame.headers.get("subscription"), body=body)

    def on_error(self, frame):
        out(type="error", message=frame.headers.get("message"), body=frame.body)

    def on_disconnected(self):
        out(type="disconnected")


def substitute(value, listener):
    if isinstance(value, str) and value.startswith("{{") and value.endswith("}}"):
        kind, key = value[2:-2].split(".", 1)
        with listener.lock:
            for body in reversed(listener.bodies):
                if isinstance(body, dict) and body.get("type") == kind:
                    return body.get(key)
        return None
    if isinstance(value, dict):
        return {k: substitute(v, listener) for k, v in value.items()}
    return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="ws://host:port/my-chat/websocket")
    parser.add_argument("--token", required=True)
    parser.add_argument("--user-id")
    parser.add_argument("--step", action="append", default=[])
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()

    url = urlparse(args.url)
    listener = Listener()
    conn = stomp.WSStompConnection([(url.hostname, url.port)], ws_path=url.path, heartbeats=(4000, 4000), reconnect_attempts_max=1)
    conn.set_listener("", listener)
    headers = {"access-token": args.token}
    if args.user_id:
        headers["user-id"] = args.user_id
    conn.connect(headers=headers, wait=True)
    out(type="connected")
    seen = 0
    for index, raw in enumerate(args.step):
        step = json.loads(raw)
        op = step["op"]
        if op == "subscribe":
            conn.subscribe(step["destination"], step.get("id", "sub-%d" % index), ack=step.get("ack", "auto"))
        elif op == "send":
            body = substitute(step["body"], listener)
            conn.send(step["destination"], json.dumps(body, ensure_ascii=False), content_type="application/json")
        elif op == "sleep":
            time.sleep(step["seconds"])
        elif op == "wait":
            wanted = {k: v for k, v in step.items() if k != "op"}
            deadline = time.time() + 20
            found = False
            with listener.lock:
                while not found and time.time() < deadline:
                    for body in listener.bodies[seen:]:
                        seen += 1
                        if isinstance(body, dict) and all(body.get(k) == v for k, v in wanted.items()):
                            found = True
                            break
                    if not found:
                        listener.lock.wait(0.2)
            if not found:
                out(type="timeout", step=index)
                break
        out(type="step", index=index)
    out(type="done")
    deadline = time.time() + args.seconds
    while time.time() < deadline and not os.path.exists(args.stop_file):
        time.sleep(0.05)
    if conn.is_connected():
        conn.disconnect()


if __name__ == "__main__":
    main()
