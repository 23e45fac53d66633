#!/usr/bin/env python3
"""Bounded load test of `forge serve` on loopback: N concurrent clients for a fixed time, each
sending completions and chat completions in a loop, streaming and whole, mixed at random; a
fraction of the streams hang up mid-stream. Every other request must get 200 and a well-formed
answer (a stream ends with data: [DONE]). Reports requests/s, tokens/s and TTFT / end-to-end
latency percentiles, optionally as a JSON summary; exits 1 when a request failed. Standard
library only (asyncio). tests/server/server_load_test.cc runs it against a real server.

  forge serve -m model.gguf --port 8080 --max-queue 1024 &
  scripts/server_load_test.py --port 8080 --clients 300 --seconds 20 --disconnect 0.1
"""
import argparse
import asyncio
import json
import random
import statistics
import sys
import time


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100.0 * (len(values) - 1)))))
    return values[k]


class Outcome:
    """What one request came to."""

    def __init__(self, kind):
        self.kind = kind          # "completion" | "chat", with "-stream" when streamed
        self.status = 0           # HTTP status, 0 when none came
        self.failure = None       # why a well-formed request failed; None when it did not
        self.hung_up = False      # the client left mid-stream on purpose
        self.ttft = None          # seconds to the first streamed token (streams only)
        self.e2e = None           # seconds to the complete answer
        self.tokens = 0           # completion tokens of a complete answer (usage)


async def read_head(reader):
    """Status and lower-cased headers of an HTTP/1.1 response."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the connection closed before a status line")
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            return status, headers
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()


def parse_metrics(text):
    """{name: value} of a Prometheus text exposition (a sample's labels are part of its name)."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                pass
    return values


def parse_answer(text, what, expected_object):
    """The JSON of an answer or streamed event; raises ValueError for an error or another object."""
    j = json.loads(text)
    if "error" in j:
        raise ValueError(f"error {what}: {text[:200]!r}")
    if j.get("object") != expected_object:
        raise ValueError(f"object {j.get('object')!r}")
    return j


def check_whole(body, chat, max_tokens):
    """The completion tokens of a whole (non-streamed) answer; raises ValueError if malformed."""
    j = parse_answer(body, "body", "chat.completion" if chat else "text_completion")
    choice = j["choices"][0]
    text = choice["message"]["content"] if chat else choice["text"]
    if not isinstance(text, str) or choice.get("finish_reason") not in ("stop", "length"):
        raise ValueError(f"choice {choice!r}")
    tokens = j["usage"]["completion_tokens"]
    if not 1 <= tokens <= max_tokens:
        raise ValueError(f"completion_tokens {tokens}")
    return tokens


def check_chunk(data, chat, state):
    """Checks one streamed event; records its finish reason and usage in `state`."""
    j = parse_answer(data, "event", "chat.completion.chunk" if chat else "text_completion")
    if j.get("usage"):
        state["tokens"] = j["usage"]["completion_tokens"]
    for choice in j["choices"]:
        text = choice["delta"].get("content", "") if chat else choice["text"]
        if not isinstance(text, str):
            raise ValueError(f"chunk {data[:200]!r}")
        if choice.get("finish_reason") is not None:
            state["finish"] = choice["finish_reason"]


def make_request(args, rng):
    """(path, body dict, chat, stream, hang_up) of a random request."""
    chat = rng.random() < args.chat
    stream = rng.random() < args.stream
    hang_up = stream and rng.random() < args.disconnect
    n = rng.randrange(10**9)
    body = {"temperature": rng.choice([0, 0.8]), "seed": n}
    if hang_up:
        # Long enough that the client always leaves before the server could finish.
        body.update({"max_tokens": args.hang_up_max_tokens, "ignore_eos": True})
    else:
        body["max_tokens"] = args.max_tokens
    if stream:
        body.update({"stream": True, "stream_options": {"include_usage": True}})
    if chat:
        body["messages"] = [{"role": "user", "content": f"Tell me a story about {n}"}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = f"Once upon a time {n}"
        path = "/v1/completions"
    return path, body, chat, stream, hang_up


async def one_request(args, rng):
    path, body, chat, stream, hang_up = make_request(args, rng)
    out = Outcome(("chat" if chat else "completion") + ("-stream" if stream else ""))
    payload = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n")
    if args.api_key:
        head += f"Authorization: Bearer {args.api_key}\r\n"
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
    try:
        writer.write(head.encode() + b"\r\n" + payload)
        await writer.drain()
        out.status, headers = await read_head(reader)
        if out.status != 200:
            out.failure = f"HTTP {out.status}: {(await reader.read(300))!r}"
            return out
        if not stream:
            data = await reader.readexactly(int(headers["content-length"]))
            out.tokens = check_whole(data, chat, body["max_tokens"])
            out.e2e = time.perf_counter() - t0
            return out
        if not headers.get("content-type", "").startswith("text/event-stream"):
            raise ValueError(f"content-type {headers.get('content-type')!r}")
        leave_after = rng.randint(1, 3) if hang_up else -1
        state = {"finish": None, "tokens": None}
        events = 0
        while True:
            line = await reader.readline()
            if not line:
                raise ValueError(f"the stream ended without [DONE] after {events} events")
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                break
            check_chunk(data, chat, state)
            events += 1
            if out.ttft is None:
                out.ttft = time.perf_counter() - t0
            if events == leave_after:
                out.hung_up = True
                return out
        if state["finish"] not in ("stop", "length") or state["tokens"] is None:
            raise ValueError(f"finish_reason {state['finish']!r}, usage tokens {state['tokens']}")
        out.tokens = state["tokens"]
        out.e2e = time.perf_counter() - t0
        return out
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass


async def client(args, deadline, rng, outcomes):
    while time.perf_counter() < deadline:
        try:
            out = await asyncio.wait_for(one_request(args, rng), args.request_timeout)
        except (OSError, ConnectionError, ValueError, KeyError, TypeError, IndexError,
                asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            out = Outcome("unknown")
            out.failure = f"{type(e).__name__}: {e}"
        outcomes.append(out)


def summarize(args, outcomes, wall):
    failures = [o for o in outcomes if o.failure]
    done = [o for o in outcomes if o.e2e is not None and not o.failure]
    ttft = [o.ttft for o in outcomes if o.ttft is not None and not o.failure]
    e2e = [o.e2e for o in done]
    tokens = sum(o.tokens for o in done)
    statuses, kinds = {}, {}
    for o in outcomes:
        statuses[str(o.status)] = statuses.get(str(o.status), 0) + 1
        kinds[o.kind] = kinds.get(o.kind, 0) + 1

    def ms(values):
        return {f"p{p}": round(percentile(values, p) * 1e3, 2) for p in (50, 90, 99)} | (
            {"mean": round(statistics.mean(values) * 1e3, 2)} if values else {})

    return {
        "clients": args.clients, "seconds": args.seconds, "wall_s": round(wall, 3),
        "requests": len(outcomes), "completed": len(done), "failed": len(failures),
        "disconnects": sum(o.hung_up for o in outcomes),
        "statuses": statuses, "kinds": kinds,
        "req_per_s": round(len(done) / wall, 2), "completion_tokens": tokens,
        "tokens_per_s": round(tokens / wall, 1), "ttft_ms": ms(ttft), "e2e_ms": ms(e2e),
        "failures": [o.failure for o in failures[:10]],
    }


async def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=15, help="new requests start until then")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--chat", type=float, default=0.5, help="fraction of chat completions")
    ap.add_argument("--stream", type=float, default=0.5, help="fraction of streamed requests")
    ap.add_argument("--disconnect", type=float, default=0.1,
                    help="fraction of streams that hang up after 1-3 events")
    ap.add_argument("--hang-up-max-tokens", type=int, default=400,
                    help="max_tokens (ignore_eos) of the streams that hang up")
    ap.add_argument("--request-timeout", type=float, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--json", default="", help="write the summary here")
    ap.add_argument("--api-key", default="")
    args = ap.parse_args()
    if args.clients > 1000 or args.seconds > 600:
        ap.error("bounded: at most 1000 clients and 600 seconds")
    master = random.Random(args.seed)
    outcomes = []
    start = time.perf_counter()
    deadline = start + args.seconds
    await asyncio.gather(*(client(args, deadline, random.Random(master.random()), outcomes)
                           for _ in range(args.clients)))
    s = summarize(args, outcomes, time.perf_counter() - start)
    print(f"clients {s['clients']}, {s['wall_s']:.1f} s: {s['requests']} requests, "
          f"{s['completed']} completed ({s['req_per_s']:.1f} req/s, {s['tokens_per_s']:.0f} "
          f"tokens/s), {s['disconnects']} hung up mid-stream on purpose, {s['failed']} failed; "
          f"statuses {s['statuses']}; kinds {s['kinds']}")
    for name in ("ttft_ms", "e2e_ms"):
        v = s[name]
        if "mean" in v:
            print(f"{name[:-3]}: p50 {v['p50']:.1f} ms, p90 {v['p90']:.1f} ms, "
                  f"p99 {v['p99']:.1f} ms, mean {v['mean']:.1f} ms")
    for f in s["failures"]:
        print(f"failure: {f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
    return 1 if s["failed"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
