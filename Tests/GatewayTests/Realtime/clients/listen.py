"""A Socket.IO test client: joins namespaces and prints what happens as JSON lines.

Runs with python-socketio 5 (Engine.IO v4) or 4.6 (Engine.IO v3), whichever the interpreter's
venv holds. Lines: {"type":"connected"|"event"|"connect_error"|"connect_failed"|"ready"|"disconnected"|"done", ...}.
It stops when --stop-file exists (or after --seconds) and disconnects cleanly.
"""
import argparse
import importlib.metadata
import json
import os
import sys
import time

import socketio


def out(**line):
    sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", action="append", default=[], help="namespace:event[,event…], e.g. /ws-channel-<id>:channel")
    parser.add_argument("--transports", default="polling,websocket")
    parser.add_argument("--token")
    parser.add_argument("--changesocketid")
    parser.add_argument("--header", action="append", default=[], help="name:value, sent on the handshake")
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()

    version = importlib.metadata.version("python-socketio")
    major = int(version.split(".")[0])
    sio = socketio.Client(reconnection=False)
    # python-engineio runs every message handler on a new thread (`run_async=True`), so the order
    # in which this client prints events would not be the order they arrived in. Run them on the
    # reading thread instead: the tests check the server's order per conversation.
    trigger = sio.eio._trigger_event

    def in_order(event, *args, **kwargs):
        kwargs["run_async"] = False
        return trigger(event, *args, **kwargs)

    sio.eio._trigger_event = in_order
    namespaces = []
    for spec in args.namespace:
        namespace, events = spec.rsplit(":", 1)
        namespaces.append(namespace)

        def on_event(*data, namespace=namespace, event=None):
            out(type="event", namespace=namespace, event=event, data=data[0] if len(data) == 1 else list(data))

        def on_connect(namespace=namespace):
            out(type="connected", namespace=namespace, transport=sio.transport())

        def on_error(*data, namespace=namespace):
            out(type="connect_error", namespace=namespace, data=list(data))

        def on_disconnect(*reason, namespace=namespace):
            out(type="disconnected", namespace=namespace)

        for event in events.split(","):
            sio.on(event, lambda *data, namespace=namespace, event=event: on_event(*data, namespace=namespace, event=event), namespace=namespace)
        sio.on("connect", on_connect, namespace=namespace)
        sio.on("disconnect", on_disconnect, namespace=namespace)
        sio.on("connect_error", on_error, namespace=namespace)

    if args.changesocketid:
        def on_root_connect():
            out(type="connected", namespace="/", transport=sio.transport())
            sio.emit("changesocketid", args.changesocketid)
        sio.on("connect", on_root_connect)
        # The study app's live chats (client contract §3.2).
        sio.on("chat", lambda *data: out(type="event", namespace="/", event="chat", data=data[0] if len(data) == 1 else list(data)))
        namespaces.insert(0, "/")

    kwargs = dict(namespaces=namespaces, transports=args.transports.split(","))
    if args.header:
        kwargs["headers"] = dict(spec.split(":", 1) for spec in args.header)
    if major >= 5:
        kwargs["wait_timeout"] = 10
        if args.token:
            kwargs["auth"] = {"token": args.token}
    try:
        sio.connect(args.url, **kwargs)
    except Exception as error:  # a refused namespace makes python-socketio 5 raise
        out(type="connect_failed", error=str(error))
        time.sleep(0.5)
        out(type="done")
        return
    out(type="ready", transport=sio.transport(), version=version)
    deadline = time.time() + args.seconds
    while time.time() < deadline and not os.path.exists(args.stop_file):
        time.sleep(0.05)
    sio.disconnect()
    out(type="done")


if __name__ == "__main__":
    main()
