#!/usr/bin/env python3
"""Bounded load test of `forge serve` on loopback: N concurrent clients for a fixed time, each
sending streaming completions in a loop; a fraction hang up after the first chunk. Reports
requests/s and TTFT / end-to-end latency percentiles. Standard library only (asyncio).

  forge serve -m model.gguf --port 8080 &
  scripts/server_load_test.py --port 8080 --clients 300 --seconds 20 --disconnect 0.1
"""
import argparse
import asyncio
import json
import random
import statistics
import time


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100.0 * (len(values) - 1)))))
    return values[k]


async def one_request(args, body, hang_up):
    """Returns (status, ttft, e2e, completed)."""
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n")
    if args.api_key:
        head += f"Authorization: Bearer {args.api_key}\r\n"
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    status_line = await reader.readline()
    status = int(status_line.split()[1]) if status_line else 0
    ttft = None
    completed = False
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            if line.startswith(b"data: ") and ttft is None:
                ttft = time.perf_counter() - t0
                if hang_up:
                    break
            if line.startswith(b"data: [DONE]"):
                completed = True
                break
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass
    return status, ttft, time.perf_counter() - t0, completed


async def client(args, deadline, results):
    rng = random.Random()
    while time.perf_counter() < deadline:
        body = json.dumps({"prompt": f"Once upon a time {rng.randrange(10**9)}",
                           "max_tokens": args.max_tokens, "stream": True,
                           "temperature": 0.8}).encode()
        hang_up = rng.random() < args.disconnect
        try:
            status, ttft, e2e, completed = await one_request(args, body, hang_up)
        except OSError as e:
            results["errors"].append(str(e))
            await asyncio.sleep(0.05)
            continue
        results["status"][status] = results["status"].get(status, 0) + 1
        if status == 429:
            await asyncio.sleep(0.1)
        if ttft is not None:
            results["ttft"].append(ttft)
        if completed:
            results["e2e"].append(e2e)
        elif hang_up:
            results["hung_up"] += 1


async def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--disconnect", type=float, default=0.1,
                    help="fraction of requests that hang up after the first chunk")
    ap.add_argument("--api-key", default="")
    args = ap.parse_args()
    if args.clients > 1000 or args.seconds > 600:
        ap.error("bounded: at most 1000 clients and 600 seconds")
    results = {"status": {}, "ttft": [], "e2e": [], "errors": [], "hung_up": 0}
    start = time.perf_counter()
    deadline = start + args.seconds
    await asyncio.gather(*(client(args, deadline, results) for _ in range(args.clients)))
    wall = time.perf_counter() - start
    done = len(results["e2e"])
    print(f"clients {args.clients}, {wall:.1f} s: {done} completed ({done / wall:.1f} req/s), "
          f"{results['hung_up']} hung up on purpose, statuses {results['status']}, "
          f"{len(results['errors'])} connection errors")
    for name in ("ttft", "e2e"):
        v = results[name]
        if v:
            print(f"{name}: p50 {percentile(v, 50) * 1e3:.1f} ms, p90 {percentile(v, 90) * 1e3:.1f}"
                  f" ms, p99 {percentile(v, 99) * 1e3:.1f} ms, mean {statistics.mean(v) * 1e3:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
