#!/usr/bin/env python3
"""Runs a Swift Testing command and watches it for a hang.

Streams the command's output (stdout and stderr merged) and follows Swift Testing's
"Test … started / passed / failed / skipped" lines. When no test starts or ends for --stall
seconds, the run is stuck: it prints the tests still running, a backtrace of every thread of the
test process (gdb, when installed), stops the process group and exits 124. A CI run then ends
with the name of the stuck test instead of being killed by its outer timeout with nothing said.

At the end of a failing run the failures (the lines marked ✘) are printed again, so the tail of a
long CI log names them.

    scripts/watch-tests.py --stall 480 -- .build/debug/chatsuitePackageTests.xctest --testing-library swift-testing …
"""

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

ANSI = re.compile(r"\x1b\[[0-9;]*m")
EVENT = re.compile(r"Test (.+?) (started\.|passed after|failed after|skipped)")


def backtrace(pid: int) -> str:
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(gdb is not installed: no backtrace)"
    try:
        out = subprocess.run(
            [gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt 25"],
            capture_output=True, text=True, timeout=120,
        )
        return swift_threads_first(out.stdout) + out.stderr
    except (subprocess.TimeoutExpired, OSError) as error:
        return f"(gdb failed: {error})"


def swift_threads_first(dump: str) -> str:
    """librdkafka's own threads (named rdk:…) go last: a test process holds a hundred of them, and
    the dump is cut at 200 000 characters, which once left out the Swift threads that mattered."""
    blocks = re.split(r"\n(?=Thread \d+ )", dump)
    rdkafka = [block for block in blocks if '"rdk:' in block.split("\n", 1)[0]]
    others = [block for block in blocks if '"rdk:' not in block.split("\n", 1)[0]]
    return "\n".join(others) + f"\n==== {len(rdkafka)} librdkafka threads (rdk:…) ====\n" + "\n".join(rdkafka)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stall", type=float, default=480, help="seconds without a test starting or ending")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    running: collections.Counter[str] = collections.Counter()
    started_at: dict[str, float] = {}
    failures: list[str] = []
    lock = threading.Lock()
    last_event = [time.monotonic()]

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
            line = ANSI.sub("", raw.decode("utf-8", "replace"))
            if "✘" in line and "✘ Suite" not in line:
                with lock:
                    failures.append(line.rstrip()[:1500])
            match = EVENT.search(line)
            if match is None:
                continue
            name, what = match.group(1), match.group(2)
            with lock:
                last_event[0] = time.monotonic()
                if what == "started.":
                    running[name] += 1
                    started_at.setdefault(name, time.monotonic())
                else:
                    if running[name] > 0:
                        running[name] -= 1
                    if running[name] == 0:
                        running.pop(name, None)
                        started_at.pop(name, None)

    # The process has a session of its own (so a stuck run can be stopped with everything it
    # started); an interrupt or termination of this script stops it the same way.
    def stop(signum: int, _frame: object) -> None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stuck = False
    while process.poll() is None:
        time.sleep(5)
        with lock:
            quiet = time.monotonic() - last_event[0]
            still = sorted(running)
            ages = {name: time.monotonic() - started_at.get(name, time.monotonic()) for name in still}
        if quiet < args.stall:
            continue
        stuck = True
        print(f"\n==== STUCK: no test started or ended for {quiet:.0f} s; still running: ====", flush=True)
        for name in still:
            print(f"  {name} (for {ages[name]:.0f} s)", flush=True)
        print("==== backtrace of the test process ====", flush=True)
        print(backtrace(process.pid)[:200_000], flush=True)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        break
    reader.join(timeout=10)
    status = 124 if stuck else process.returncode
    if status != 0 and failures:
        print(f"==== failures of this run ({' '.join(command[1:])}) ====")
        for line in failures[:60]:
            print(line)
    if stuck:
        print("==== the run was stopped as stuck (see STUCK above) ====")
    return status


if __name__ == "__main__":
    sys.exit(main())
