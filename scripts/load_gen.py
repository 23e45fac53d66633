#!/usr/bin/env python3
"""Serving load generator for an OpenAI-compatible server (`forge serve`): N concurrent streaming
clients, each sending unique prompts of about --prompt-tokens tokens for --max-tokens generated
tokens (ignore_eos) back to back. Reports output tokens/s, requests/s, time to first token and
inter-token latency (p50/p99), end-to-end latency, failures by reason, the server's prefix-cache
hit rate and the fraction of wall time its device was busy, as a table and as JSON. Exits 1 when
any request failed, 2 when the server cannot be reached. Standard library only (asyncio).

  forge serve -m model.gguf --parallel 128 --max-queue 256 -c 1024 --batch-tokens 2048 &
  scripts/load_gen.py --port 8080 --sweep 1,16,64,128 --duration 30 --json serve.json

Prompts. Each prompt starts with a random word, the request's counter and the row's tag, then
random words: no two prompts of a run share their first KV block, so the prefix cache has
nothing to share (the hit rate reported should be ~0; with --endpoint chat the chat template's
own text comes first and is shared when it fills a KV block). The word count is calibrated once
per run from the server's /tokenize (completions) or from the usage of probe requests (chat, or
a server without /tokenize); the mean prompt length the server reports is in the results.

Timing, per request: TTFT is from sending the request to the first streamed chunk carrying a
token; each later chunk's gap to the previous one is an inter-token latency, split evenly over
the tokens the chunk carries (a chunk's tokens are counted from usage.completion_tokens, which
forge streams on every chunk with stream_options.continuous_usage_stats, else one per chunk with
text); e2e is from sending to [DONE]. Completion tokens come from the final usage and must equal
--max-tokens.

The measurement window. Clients start over --ramp seconds; the window is the --duration seconds
that follow --warmup seconds after the first start. Output tokens/s counts the tokens whose chunks
arrived inside the window; requests/s and the latency percentiles take the requests that
completed ([DONE]) inside it, wherever they started. At the window's end the clients stop and
requests still running are abandoned (their connections close; the server cancels them; they are
not failures). Every failure from the first start to the window's end counts. The prefix-cache
hit rate and the device busy fraction are deltas of the server's /metrics counters scraped at the
window's edges (forge_prefix_cache_hits_total / forge_prefix_cache_queries_total, and
forge_device_busy_seconds_total over forge_engine_stats_time_seconds: the engine's clock when it
last updated its counters, so both deltas span the same steps). With --sweep the rows
run one after another, each after the server is idle again. With --json-schema every request asks
for JSON of a schema of its client's own (response_format json_schema; client_schema below), long
enough that every reply runs to --max-tokens: constrained decoding under the same load.
"""
import argparse
import asyncio
import json
import math
import multiprocessing
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor

# This folder: the status and headers of a response, the values of a /metrics page.
from server_load_test import parse_metrics, read_head

SYLLABLES = ("ka", "lo", "mi", "ter", "shu", "van", "dri", "po", "sel", "ba", "nor", "qui", "fa",
             "ren", "to", "gle", "mu", "sta", "vi", "den", "cro", "la", "pen", "zu", "hal", "ox",
             "bri", "ne", "sor", "ti", "wel", "ga", "mon", "ru", "ith", "ce", "dol", "ap", "fen",
             "yo")


def random_word(rng, syllables=None):
    return "".join(rng.choice(SYLLABLES) for _ in range(syllables or rng.randint(1, 3)))


def make_prompt(rng, tag, counter, words):
    """A prompt unique from its first words: a random three-syllable word (64,000 of them), the
    request's counter (unique in the row) and the row's tag (unique to the row), then words."""
    head = f"{random_word(rng, 3)} {counter} {tag}:"
    return head + " " + " ".join(random_word(rng) for _ in range(max(words, 1)))


def percentile(values, p):
    """Linear interpolation between closest ranks; None when empty."""
    if not values:
        return None
    v = sorted(values)
    x = (len(v) - 1) * p / 100.0
    lo = math.floor(x)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


def ms(x):
    return None if x is None else round(x * 1e3, 3)


# ---------------------------------------------------------------------------------------------
# HTTP/1.1 over asyncio streams (one connection per request, as the server closes streams).

async def http_request(cfg, method, path, body=None, timeout=60.0):
    """(status, headers, body bytes) of a whole (non-streamed) response."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(cfg["host"], cfg["port"]), timeout)
    try:
        writer.write(request_bytes(cfg, method, path, body))
        await writer.drain()
        status, headers = await asyncio.wait_for(read_head(reader), timeout)
        if headers.get("transfer-encoding", "").lower() == "chunked":
            data = b"".join([line async for line in chunked_lines(reader)])
        elif "content-length" in headers:
            data = await reader.readexactly(int(headers["content-length"]))
        else:
            data = await asyncio.wait_for(reader.read(), timeout)
        return status, headers, data
    finally:
        writer.close()


def request_bytes(cfg, method, path, body):
    payload = b"" if body is None else json.dumps(body).encode()
    head = (f"{method} {path} HTTP/1.1\r\nHost: {cfg['host']}:{cfg['port']}\r\n"
            f"Connection: close\r\nAccept: */*\r\n")
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    if cfg.get("api_key"):
        head += f"Authorization: Bearer {cfg['api_key']}\r\n"
    return head.encode() + b"\r\n" + payload


async def chunked_lines(reader):
    """Lines of a chunked transfer-encoded body."""
    pending = b""
    while True:
        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            break
        pending += await reader.readexactly(size)
        await reader.readexactly(2)
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line + b"\n"
    if pending:
        yield pending


async def body_lines(reader, headers):
    if headers.get("transfer-encoding", "").lower() == "chunked":
        async for line in chunked_lines(reader):
            yield line
    else:
        while True:
            line = await reader.readline()
            if not line:
                return
            yield line


async def scrape_metrics(cfg):
    """(time, {name: value}) of GET /metrics; empty when the server has none."""
    try:
        status, _, data = await http_request(cfg, "GET", "/metrics", timeout=10)
    except (OSError, ConnectionError, asyncio.TimeoutError, ValueError):
        return time.monotonic(), {}
    t = time.monotonic()
    return t, parse_metrics(data.decode("utf-8", "replace")) if status == 200 else {}


# ---------------------------------------------------------------------------------------------
# One streamed request.

def client_schema(index, max_tokens, strings="bounded"):
    """A JSON schema of client `index`'s own (its property names differ from every other
    client's), whose texts are long enough that a reply always runs to max_tokens: an object with
    an array of at least max_tokens strings (bounded: of 4 to 24 characters; free: any), and a
    nested record."""
    item = ({"type": "string", "minLength": 4, "maxLength": 24} if strings == "bounded"
            else {"type": "string"})
    return {"type": "object",
            "properties": {f"items_{index}": {"type": "array", "minItems": max_tokens,
                                              "items": item},
                           f"meta_{index}": {"type": "object",
                                             "properties": {"id": {"type": "integer"},
                                                            "ok": {"type": "boolean"}},
                                             "required": ["id", "ok"]}},
            "required": [f"items_{index}", f"meta_{index}"], "additionalProperties": False}


def request_body(cfg, prompt, index=0):
    body = {"max_tokens": cfg["max_tokens"], "stream": True, "ignore_eos": True,
            "temperature": cfg["temperature"],
            "stream_options": {"include_usage": True}}
    if cfg.get("json_schema"):
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": f"client_{index}",
            "schema": client_schema(index, cfg["max_tokens"], cfg["json_schema"])}}
    if cfg["continuous_usage"]:
        body["stream_options"]["continuous_usage_stats"] = True
    if cfg.get("model"):
        body["model"] = cfg["model"]
    if cfg["chat"]:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def new_record(start):
    return {"start": start, "first": None, "end": None, "chunks": [], "completion_tokens": None,
            "prompt_tokens": None, "failure": None}


async def stream_request(cfg, prompt, rec, index=0):
    """Runs one streamed request, filling rec; raises ValueError naming what was wrong."""
    path = "/v1/chat/completions" if cfg["chat"] else "/v1/completions"
    reader, writer = await asyncio.open_connection(cfg["host"], cfg["port"])
    try:
        writer.write(request_bytes(cfg, "POST", path, request_body(cfg, prompt, index)))
        await writer.drain()
        status, headers = await read_head(reader)
        if status != 200:
            raise ValueError(f"HTTP {status}")
        tokens_seen = 0
        finish = None
        async for line in body_lines(reader, headers):
            if not line.startswith(b"data:"):
                continue
            now = time.monotonic()
            data = line[5:].strip()
            if data == b"[DONE]":
                rec["end"] = now
                break
            j = json.loads(data)
            if "error" in j:
                raise ValueError("error event: " + str(j["error"].get("message", ""))[:80])
            usage = j.get("usage")
            k = 0
            if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
                rec["prompt_tokens"] = usage.get("prompt_tokens")
                k = usage["completion_tokens"] - tokens_seen
                tokens_seen = usage["completion_tokens"]
            for choice in j.get("choices") or []:
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
                if not isinstance(usage, dict):
                    text = (choice.get("delta") or {}).get("content") if cfg["chat"] \
                        else choice.get("text")
                    if text:
                        k += 1
                        tokens_seen += 1
            if k > 0 and j.get("choices"):
                rec["chunks"].append((now, k))
                if rec["first"] is None:
                    rec["first"] = now
        if rec["end"] is None:
            raise ValueError("the stream ended before [DONE]")
        rec["completion_tokens"] = tokens_seen
        if finish != "length" or tokens_seen != cfg["max_tokens"]:
            raise ValueError(f"finish_reason {finish}, completion_tokens {tokens_seen} "
                             f"(expected length, {cfg['max_tokens']})")
    finally:
        writer.close()


async def client(cfg, index, records):
    rng = random.Random(f"{cfg['seed']}-{cfg['row_tag']}-{index}")
    await asyncio.sleep(max(0.0, cfg["t_start"] + cfg["stagger"][index] - time.monotonic()))
    counter = 0
    while time.monotonic() < cfg["t1"]:
        prompt = make_prompt(rng, cfg["row_tag"], f"{index}x{counter}", cfg["words"])
        counter += 1
        rec = new_record(time.monotonic())
        records.append(rec)
        try:
            await asyncio.wait_for(stream_request(cfg, prompt, rec, index),
                                   cfg["request_timeout"])
        except asyncio.TimeoutError:
            rec["failure"] = "timeout"
        except (OSError, ConnectionError, asyncio.IncompleteReadError) as e:
            rec["failure"] = f"connection: {type(e).__name__}"
        except (ValueError, KeyError, TypeError, IndexError) as e:
            rec["failure"] = str(e) if isinstance(e, ValueError) else f"malformed: {e!r}"[:80]
        if rec["failure"]:
            rec["end"] = time.monotonic()
            await asyncio.sleep(0.05)  # no tight loop against a refusing server


async def run_clients(cfg, indices):
    """Records of the clients `indices`; those still running at t1 are abandoned."""
    records = []
    tasks = [asyncio.create_task(client(cfg, i, records)) for i in indices]
    await asyncio.wait(tasks, timeout=max(0.0, cfg["t1"] - time.monotonic()))
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for rec in records:
        rec["abandoned"] = rec["end"] is None
    return records


def worker_main(cfg, indices):
    return asyncio.run(run_clients(cfg, indices))


async def window_scrapes(cfg):
    await asyncio.sleep(max(0.0, cfg["t0"] - time.monotonic()))
    before = await scrape_metrics(cfg)
    await asyncio.sleep(max(0.0, cfg["t1"] - time.monotonic()))
    after = await scrape_metrics(cfg)
    return before, after


# ---------------------------------------------------------------------------------------------
# Calibration, idling, summaries.

async def count_tokens(cfg, text, use_tokenize):
    if use_tokenize:
        status, _, data = await http_request(cfg, "POST", "/tokenize",
                                             {"content": text, "add_special": True})
        if status == 200:
            return len(json.loads(data)["tokens"])
        raise ValueError(f"/tokenize: HTTP {status}")
    body = request_body(cfg, text)
    body.update({"stream": False, "max_tokens": 1})
    body.pop("stream_options")
    path = "/v1/chat/completions" if cfg["chat"] else "/v1/completions"
    status, _, data = await http_request(cfg, "POST", path, body, timeout=120)
    if status != 200:
        raise ValueError(f"probe request: HTTP {status}: {data[:200]!r}")
    return json.loads(data)["usage"]["prompt_tokens"]


async def calibrate(cfg, target):
    """Words per prompt so that prompts have about `target` tokens."""
    use_tokenize = False
    if not cfg["chat"]:
        try:
            await count_tokens(cfg, "probe", True)
            use_tokenize = True
        except (OSError, ConnectionError, ValueError, KeyError, asyncio.TimeoutError):
            pass
    rng = random.Random(f"calibration-{cfg['seed']}")

    async def mean_tokens(words, n=4):
        # Heads like the run's: a row tag, a client index and a counter.
        texts = [make_prompt(rng, cfg["tag"] + "c", f"{i}x{40 + i}", words) for i in range(n)]
        counts = [await count_tokens(cfg, text, use_tokenize) for text in texts]
        return sum(counts) / len(counts)

    w1, w2 = 4, 40
    t1, t2 = await mean_tokens(w1), await mean_tokens(w2)
    per_word = max((t2 - t1) / (w2 - w1), 0.05)
    words = max(1, round(w1 + (target - t1) / per_word))
    for _ in range(2):
        got = await mean_tokens(words, 8)
        words = max(1, words + round((target - got) / per_word))
    return {"words": words, "tokens_per_word": round(per_word, 3),
            "method": "/tokenize" if use_tokenize else "probe requests",
            "calibration_mean_tokens": round(got, 1)}


async def wait_idle(cfg, timeout):
    """Waits until the server runs and queues nothing (per /metrics); False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, m = await scrape_metrics(cfg)
        if not m:
            await asyncio.sleep(1.0)
            return True
        if m.get("forge_num_requests_running", 0) == 0 and \
                m.get("forge_num_requests_waiting", 0) == 0:
            return True
        await asyncio.sleep(0.2)
    return False


def delta(before, after, name):
    if name not in before or name not in after:
        return None
    return after[name] - before[name]


def summarize(cfg, records, scrapes):
    t0, t1 = cfg["t0"], cfg["t1"]
    duration = t1 - t0
    failed = [r for r in records if r["failure"]]
    ok = [r for r in records if not r["failure"]]
    done = [r for r in ok if not r["abandoned"] and t0 <= r["end"] <= t1]
    out_tokens = sum(k for r in ok for (t, k) in r["chunks"] if t0 <= t <= t1)
    ttft = [r["first"] - r["start"] for r in done if r["first"] is not None]
    e2e = [r["end"] - r["start"] for r in done]
    itl = []
    for r in done:
        for (ta, _), (tb, k) in zip(r["chunks"], r["chunks"][1:]):
            itl.extend([(tb - ta) / k] * k)
    reasons = {}
    for r in failed:
        reasons[r["failure"]] = reasons.get(r["failure"], 0) + 1
    prompts = [r["prompt_tokens"] for r in done if r["prompt_tokens"] is not None]
    (ta, before), (tb, after) = scrapes
    hits = delta(before, after, "forge_prefix_cache_hits_total")
    queries = delta(before, after, "forge_prefix_cache_queries_total")
    busy = delta(before, after, "forge_device_busy_seconds_total")
    # The busy counter moves once per engine step: over the engine's own clock at those updates
    # (same span as the counter), not the scrapes' wall time, which a long step straddles.
    span = delta(before, after, "forge_engine_stats_time_seconds")
    if not span or span <= 0:
        span = tb - ta
    return {
        "clients": cfg["clients"], "duration_s": round(duration, 3), "warmup_s": cfg["warmup"],
        "requests_completed": len(done), "requests_failed": len(failed),
        "requests_abandoned_at_end": sum(r["abandoned"] for r in ok),
        "failures": reasons,
        "output_tokens": out_tokens,
        "output_tokens_per_s": round(out_tokens / duration, 2),
        "requests_per_s": round(len(done) / duration, 3),
        "mean_prompt_tokens": round(sum(prompts) / len(prompts), 1) if prompts else None,
        "completion_tokens_per_request": sorted({r["completion_tokens"] for r in done}),
        "ttft_ms": {"p50": ms(percentile(ttft, 50)), "p99": ms(percentile(ttft, 99)),
                    "mean": ms(sum(ttft) / len(ttft)) if ttft else None},
        "itl_ms": {"p50": ms(percentile(itl, 50)), "p99": ms(percentile(itl, 99)),
                   "mean": ms(sum(itl) / len(itl)) if itl else None},
        "e2e_ms": {"p50": ms(percentile(e2e, 50)), "p99": ms(percentile(e2e, 99))},
        "prefix_cache_queries": queries, "prefix_cache_hits": hits,
        "prefix_cache_hit_rate": round(hits / queries, 4) if queries else None,
        "device_busy_seconds": None if busy is None else round(busy, 3),
        "device_busy_fraction": None if busy is None or span <= 0 else round(busy / span, 4),
        "procs": cfg["procs"],
    }


def run_row(cfg, clients, row):
    # The row's own tag: its prompts share nothing with the earlier rows' (still cached).
    cfg = dict(cfg, clients=clients, row_tag=cfg["tag"] + "abcdefghijklmnopqrstuvwxyz"[row % 26])
    procs = cfg["procs_arg"] or min(max(1, math.ceil(clients / 32)),
                                    max(1, (os.cpu_count() or 2) // 4))
    procs = max(1, min(procs, clients))
    cfg["procs"] = procs
    srng = random.Random(f"stagger-{cfg['seed']}-{clients}")
    cfg["stagger"] = [0.0] + [srng.uniform(0, cfg["ramp"]) for _ in range(clients - 1)]
    cfg["t_start"] = time.monotonic() + (0.2 if procs == 1 else 2.0)
    cfg["t0"] = cfg["t_start"] + cfg["warmup"]
    cfg["t1"] = cfg["t0"] + cfg["duration"]
    groups = [list(range(clients))[i::procs] for i in range(procs)]
    if procs == 1:
        async def both():
            return await asyncio.gather(run_clients(cfg, groups[0]), window_scrapes(cfg))
        records, scrapes = asyncio.run(both())
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=procs, mp_context=ctx) as pool:
            futures = [pool.submit(worker_main, cfg, g) for g in groups]
            scrapes = asyncio.run(window_scrapes(cfg))
            records = [r for f in futures for r in f.result()]
    return summarize(cfg, records, scrapes)


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def print_table(rows, out):
    head = ("clients", "done", "failed", "out tok/s", "req/s", "prompt", "TTFT p50", "TTFT p99",
            "ITL p50", "ITL p99", "e2e p50", "prefix hit", "busy")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("-" * (len(h) + 2) for h in head) + "|"]
    for r in rows:
        cells = (str(r["clients"]), str(r["requests_completed"]), str(r["requests_failed"]),
                 fmt(r["output_tokens_per_s"]), fmt(r["requests_per_s"], ".2f"),
                 fmt(r["mean_prompt_tokens"]), fmt(r["ttft_ms"]["p50"]), fmt(r["ttft_ms"]["p99"]),
                 fmt(r["itl_ms"]["p50"], ".2f"), fmt(r["itl_ms"]["p99"], ".2f"),
                 fmt(r["e2e_ms"]["p50"]), fmt(r["prefix_cache_hit_rate"], ".3f"),
                 fmt(r["device_busy_fraction"], ".3f"))
        lines.append("| " + " | ".join(c.rjust(len(h)) for c, h in zip(cells, head)) + " |")
    print("\n".join(lines), file=out)
    print("(latencies in ms; done/failed: requests completed in / failed during the window; "
          "prefix hit and busy: /metrics deltas over the window)", file=out)
    for r in rows:
        for reason, n in r["failures"].items():
            print(f"clients {r['clients']}: {n} failed: {reason}", file=out)


async def setup(cfg):
    """Server checks and the model id; raises OSError / ValueError when it is unusable."""
    status, _, data = await http_request(cfg, "GET", "/v1/models", timeout=30)
    if status != 200:
        raise ValueError(f"GET /v1/models: HTTP {status}")
    models = json.loads(data).get("data") or []
    return models[0]["id"] if models else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--api-key", default="")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--sweep", default="", help="several client counts, e.g. 1,16,64,128")
    ap.add_argument("--duration", type=float, default=30, help="measurement window, seconds")
    ap.add_argument("--warmup", type=float, default=10, help="seconds before the window")
    ap.add_argument("--ramp", type=float, default=None,
                    help="clients start spread over this many seconds (default warmup / 2)")
    ap.add_argument("--prompt-tokens", type=int, default=450)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--no-continuous-usage", action="store_true",
                    help="do not ask for usage on every chunk (count one token per text chunk)")
    ap.add_argument("--procs", type=int, default=0,
                    help="client processes (0: one per 32 clients, at most a quarter of the CPUs)")
    ap.add_argument("--request-timeout", type=float, default=300)
    ap.add_argument("--idle-timeout", type=float, default=120,
                    help="seconds to wait for the server to go idle before each row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-schema", nargs="?", const="bounded", default="",
                    choices=("bounded", "free"),
                    help="every request asks for JSON of a schema of its client's own "
                         "(response_format json_schema), long enough to run to --max-tokens: an "
                         "array of strings of 4 to 24 characters (bounded, the default) or of "
                         "any length (free)")
    ap.add_argument("--json", default="", help="write the results here")
    args = ap.parse_args()
    counts = [int(x) for x in args.sweep.split(",") if x.strip()] if args.sweep else [args.clients]
    if not counts or min(counts) < 1 or max(counts) > 4096:
        ap.error("client counts must be in [1, 4096]")
    if args.duration <= 0 or args.warmup < 0 or args.prompt_tokens < 1 or args.max_tokens < 1:
        ap.error("--duration, --prompt-tokens and --max-tokens must be > 0, --warmup >= 0")
    cfg = {"host": args.host, "port": args.port, "api_key": args.api_key,
           "chat": args.endpoint == "chat", "max_tokens": args.max_tokens,
           "temperature": args.temperature, "continuous_usage": not args.no_continuous_usage,
           "json_schema": args.json_schema,
           "duration": args.duration, "warmup": args.warmup,
           "ramp": args.warmup / 2 if args.ramp is None else args.ramp,
           "procs_arg": args.procs, "request_timeout": args.request_timeout, "seed": args.seed,
           "tag": "".join(random.choice("bcdfghjklmnpqrstvwxz") for _ in range(6))}
    try:
        cfg["model"] = asyncio.run(setup(cfg))
        calibration = asyncio.run(calibrate(cfg, args.prompt_tokens))
    except (OSError, ConnectionError, ValueError, KeyError, asyncio.TimeoutError) as e:
        print(f"load_gen: cannot use the server at {args.host}:{args.port}: {e}", file=sys.stderr)
        return 2
    cfg["words"] = calibration["words"]
    print(f"load_gen: model {cfg['model']}, {args.endpoint}, prompts of ~{args.prompt_tokens} "
          f"tokens ({calibration['words']} words by {calibration['method']}), "
          f"{args.max_tokens} generated; warmup {args.warmup:g} s, window {args.duration:g} s",
          file=sys.stderr)
    rows = []
    for row, n in enumerate(counts):
        if not asyncio.run(wait_idle(cfg, args.idle_timeout)):
            print(f"load_gen: the server did not go idle in {args.idle_timeout:g} s",
                  file=sys.stderr)
        r = run_row(cfg, n, row)
        rows.append(r)
        print(f"load_gen: {n} clients: {r['output_tokens_per_s']:.1f} output tokens/s, "
              f"{r['requests_completed']} completed, {r['requests_failed']} failed",
              file=sys.stderr)
    print_table(rows, sys.stdout)
    result = {"tool": "scripts/load_gen.py", "host": args.host, "port": args.port,
              "endpoint": args.endpoint, "model": cfg["model"],
              "prompt_tokens_target": args.prompt_tokens, "max_tokens": args.max_tokens,
              "temperature": args.temperature, "json_schema": args.json_schema,
              "duration_s": args.duration,
              "warmup_s": args.warmup, "ramp_s": cfg["ramp"], "calibration": calibration,
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if any(r["requests_failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
