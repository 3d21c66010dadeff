"""Engine.IO v4 WebSocket clients that join one namespace: some never read, others read and time
every event. Prints JSON lines: {"type":"joined"}, per received event {"type":"event","id":…,"at":…}
(at = time.time()), and at the end, for each non-reading socket, {"type":"stalled","closed":bool}
— whether the server had closed it (reading what was buffered ends in a close frame or a reset).
Stops when --stop-file exists.
"""
import argparse
import json
import os
import re
import socket
import sys
import threading
import time

import websocket


CHAT_ID = re.compile(r'"chat_id":"([0-9a-f-]{36})"')


def out(**line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def join(url, namespace, small_buffer):
    # No per-byte UTF-8 validation in Python (without wsaccel it makes ~900 KB frames slow to read).
    ws = websocket.WebSocket(skip_utf8_validation=True)
    if small_buffer:
        # A tiny receive window: the server's writes block after a little data.
        ws.sock_opt.sockopt = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)]
    ws.connect(url, timeout=20)
    opened = ws.recv()
    assert opened.startswith("0{"), opened
    ws.send("40" + namespace + ",")
    while True:
        frame = ws.recv()
        if frame.startswith("40" + namespace):
            return ws
        if frame == "2":
            ws.send("3")


def reader(ws, namespace):
    prefix = "42" + namespace + ","
    try:
        while True:
            frame = ws.recv()
            if frame == "2":
                ws.send("3")
            elif frame.startswith(prefix):
                at = time.time()
                # Only the id, from the object's head: parsing ~900 KB of JSON per message in
                # Python would make this reader the slow one.
                match = CHAT_ID.search(frame, 0, 512)
                out(type="event", id=match.group(1) if match else None, at=at)
    except Exception as error:
        out(type="reader_closed", error=str(error))


def closed_by_server(ws):
    """Reads what is buffered; True when the server closed the connection."""
    ws.settimeout(5)
    deadline = time.time() + 30
    try:
        while time.time() < deadline:
            opcode, _ = ws.recv_data(control_frame=True)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                return True
    except (websocket.WebSocketConnectionClosedException, ConnectionResetError, BrokenPipeError):
        return True
    except websocket.WebSocketTimeoutException:
        return False
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--stalled", type=int, default=10)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--stop-file", required=True)
    args = parser.parse_args()
    url = args.url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
    stalled = [join(url, args.namespace, small_buffer=True) for _ in range(args.stalled)]
    readers = [join(url, args.namespace, small_buffer=False) for _ in range(args.readers)]
    for ws in readers:
        threading.Thread(target=reader, args=(ws, args.namespace), daemon=True).start()
    out(type="joined")
    while not os.path.exists(args.stop_file):
        time.sleep(0.05)
    for ws in stalled:
        out(type="stalled", closed=closed_by_server(ws))
    out(type="done")


if __name__ == "__main__":
    main()
