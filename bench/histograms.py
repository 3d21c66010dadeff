#!/usr/bin/env python3
"""Summarises Prometheus histograms from a /metrics page (docs/benchmarks.md, part 28).

    bench/histograms.py http://127.0.0.1:9180/metrics gateway_delivery_age_at_read_seconds gateway_write_drain_seconds

For each histogram: its count, mean, and the share of observations at or below each bucket
bound, with the bucket holding the median and the 99th percentile (a bound, not an estimate
within the bucket).
"""
import re
import sys
import urllib.request


def read(source):
    if source.startswith("http"):
        with urllib.request.urlopen(source, timeout=10) as response:
            return response.read().decode()
    with open(source) as f:
        return f.read()


def summarise(text, name):
    buckets = []
    count = total = None
    for line in text.splitlines():
        m = re.match(re.escape(name) + r'_bucket\{(?:[^}]*,)?le="([^"]+)"[^}]*\} (\S+)$', line)
        if m:
            bound = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
            buckets.append((bound, float(m.group(2))))
        elif line.startswith(name + "_count "):
            count = float(line.split()[-1])
        elif line.startswith(name + "_sum "):
            total = float(line.split()[-1])
    if not buckets or not count:
        return f"{name}: no observations"
    buckets.sort()

    def bound(q):
        for upper, cumulative in buckets:
            if cumulative >= q * count:
                return "≤ " + ("+Inf" if upper == float("inf") else f"{upper * 1000:g} ms")
        return "?"

    shares = ", ".join(
        f"≤{'+Inf' if b == float('inf') else f'{b * 1000:g}ms'} {c / count * 100:.1f}%" for b, c in buckets if b <= 0.25 or b == float("inf"))
    mean = f"{total / count * 1000:.2f} ms" if total is not None else "?"
    return f"{name}: count {count:.0f}, mean {mean}, p50 {bound(0.5)}, p99 {bound(0.99)}; {shares}"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    text = read(sys.argv[1])
    for name in sys.argv[2:]:
        print(summarise(text, name))


if __name__ == "__main__":
    main()
