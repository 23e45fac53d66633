#!/usr/bin/env python3
"""A bounded abuse run against `forge serve` (Python 3 standard library only).

For --minutes (default 10; fractional, e.g. 0.5 for a smoke run) many concurrent clients send a
mix of:
  valid requests    completions and chats (temperature 0, fixed max_tokens), streaming or not,
                    over half-closed connections, pipelined, with Expect: 100-continue, after a
                    slowloris header trickle; each answer must equal the reference answer fetched
                    once at the start for the same prompt
  hostile HTTP      bad request lines, bad or duplicate Content-Length, bad chunk sizes, oversized
                    headers, huge URLs, the HTTP/2 preface, raw non-UTF-8 bytes in the path
  hostile JSON      deep nesting, huge arrays, invalid UTF-8, wrong types, out-of-range token ids,
                    null fields, bodies that are not objects
  disconnects       mid-request (FIN or RST) and mid-stream, abandoned slow headers
while it samples the server's RSS (/proc/PID/status) and probes /health every ~200 ms on a
connection of its own. At the end it waits for in-flight requests to drain and reports requests
per class, valid answers correct / wrong / failed, the statuses hostile requests got, whether the
server is alive, the KV blocks still in use (forge_kv_blocks_used in /metrics), RSS after the
warm-up against the end, and /health latency.

Exit status: 1 if the server died, a valid request got a wrong answer, or KV blocks are still in
use at the end; 2 on a usage or start-up error; else 0.

  scripts/abuse.py [--minutes 10] [--concurrency 24] [--json FILE]
                   [--forge BIN] [--model GGUF] [--device cpu] [--server-arg=--parallel=8 ...]
  scripts/abuse.py --port P [--host H] [--pid PID] ...   # a server already running
The binary: --forge, else $FORGE_BUILD_DIR/apps/forge/forge, else build/, build-cpu/ or
build-abuse/. The model: --model, else ../shared/testdata/models/stories260K.gguf, else one made
with `forge make-model --preset tiny --peaked`.
"""
import argparse
import collections
import http.client
import json
import multiprocessing
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from abuse_support import (  # noqa: E402 (the script's own folder is on sys.path)
    CHATS, Closed, Conn, HOSTILE_TIMEOUT, MAX_TOKENS, PROMPTS, REPO, VALID_TIMEOUT, answer_text,
    chat_body, completion_body, die, find_forge, find_model, health_probe, outcome_of,
    print_summary, request_bytes, sse_text, start_server)
from server_load_test import parse_metrics  # noqa: E402 (the values of a /metrics page)


class Abuse:
    def __init__(self, args, host, port, pid):
        self.args = args
        self.host, self.port, self.pid = host, port, pid
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.died = threading.Event()
        self.died_at = None
        self.refs = {}  # ("completion"|"chat", i) -> text
        self.requests = collections.Counter()
        self.valid = collections.defaultdict(collections.Counter)  # class -> correct/wrong/failed
        self.statuses = collections.defaultdict(collections.Counter)  # class -> status/outcome
        self.by_variant = collections.defaultdict(lambda: collections.defaultdict(
            collections.Counter))  # hostile class -> variant -> status/outcome
        self.wrong_examples = []
        self.failure_examples = []
        self.recent = collections.deque(maxlen=40)  # (t, class, variant) of requests started
        self.health = []  # latencies (s) of answered probes
        self.health_failures = collections.Counter()
        self.rss = []  # (t, kB)
        self.notes = collections.Counter()
        self._bad_http = self.bad_http_variants()
        self._bad_json = self.bad_json_variants()
        self.slow_slots = threading.Semaphore(max(1, args.concurrency // 6))
        self.t0 = time.monotonic()

    # -- bookkeeping
    def conn(self, timeout=HOSTILE_TIMEOUT):
        try:
            return Conn(self.host, self.port, timeout)
        except ConnectionRefusedError:
            self.check_alive()
            raise

    def check_alive(self):
        """Notes the server's death (once) and stops the clients."""
        if not self.died.is_set() and not self.alive():
            self.died_at = round(time.monotonic() - self.t0, 2)
            self.died.set()
            self.stop.set()
        return not self.died.is_set()

    def started(self, cls, variant):
        with self.lock:
            self.requests[cls] += 1
            self.recent.append((round(time.monotonic() - self.t0, 2), cls, variant))

    def hostile(self, cls, outcome, variant=None):
        with self.lock:
            self.statuses[cls][str(outcome)] += 1
            if variant is not None:
                self.by_variant[cls][variant][str(outcome)] += 1

    def check(self, cls, key, got, detail=""):
        want = self.refs[key]
        with self.lock:
            if got == want:
                self.valid[cls]["correct"] += 1
            else:
                self.valid[cls]["wrong"] += 1
                if len(self.wrong_examples) < 10:
                    self.wrong_examples.append(
                        {"class": cls, "key": list(key), "want": want, "got": got, "detail": detail})

    def failed(self, cls, why):
        with self.lock:
            self.valid[cls]["failed"] += 1
            self.statuses[cls][why.split(":")[0]] += 1
            if len(self.failure_examples) < 20:
                self.failure_examples.append({"class": cls, "why": why[:300],
                                              "t": round(time.monotonic() - self.t0, 1)})

    # -- a plain request on a fresh connection
    def exchange(self, data, timeout=HOSTILE_TIMEOUT, half_close=False):
        c = self.conn(timeout)
        try:
            c.send(data)
            if half_close:
                c.half_close()
            return c.read_response()
        finally:
            c.close()

    def references(self):
        for kind, count, body_of, path in (
                ("completion", len(PROMPTS), completion_body, "/v1/completions"),
                ("chat", len(CHATS), chat_body, "/v1/chat/completions")):
            for i in range(count):
                status, _, resp = self.exchange(
                    request_bytes("POST", path, json.dumps(body_of(i))), VALID_TIMEOUT)
                if status != 200:
                    raise RuntimeError("reference %s: %d %s" % (kind, status, resp[:300]))
                self.refs[(kind, i)] = answer_text(resp, kind == "chat")

    # -- valid requests (their answers are checked)
    def valid_request(self, cls, rng, stream=False, half_close=False, expect=False):
        chat = rng.random() < 0.4
        i = rng.randrange(len(CHATS) if chat else len(PROMPTS))
        key = ("chat" if chat else "completion", i)
        body = json.dumps(chat_body(i, stream) if chat else completion_body(i, stream)).encode()
        path = "/v1/chat/completions" if chat else "/v1/completions"
        self.started(cls, key[0])
        c = None
        try:
            c = self.conn(VALID_TIMEOUT)
            if expect:
                head = request_bytes("POST", path, body, ["Expect: 100-continue"])[:-len(body)]
                c.send(head)
                # The body goes after a 100 Continue, or after 2 s without one (what curl does).
                c.sock.settimeout(2.0)
                interim = None
                try:
                    interim, _ = c.read_head()
                except socket.timeout:
                    pass
                c.sock.settimeout(VALID_TIMEOUT)
                if interim is not None and interim != 100:
                    self.failed(cls, "status %d to Expect: 100-continue" % interim)
                    return
                with self.lock:
                    self.notes["expect_100: interim " + (str(interim) if interim else
                                                         "none within 2 s")] += 1
                c.send(body)
            else:
                c.send(request_bytes("POST", path, body))
            if half_close:
                c.half_close()
            status, headers = c.read_head()
            if status != 200:
                rest = b"".join(c.body_pieces(headers))
                self.failed(cls, "status %d: %s" % (status, rest[:200]))
                return
            if stream:
                text, done = sse_text(c.body_pieces(headers), chat)
                if not done:
                    self.failed(cls, "stream ended without [DONE]")
                    return
            else:
                text = answer_text(b"".join(c.body_pieces(headers)), chat)
            self.check(cls, key, text)
        except Exception as e:  # noqa: BLE001 - every failure is a result here
            self.failed(cls, "%s: %s" % (outcome_of(e), str(e)[:200]))
        finally:
            if c:
                c.close()

    def pipelined(self, rng):
        i = rng.randrange(len(PROMPTS))
        self.started("pipelined", "health+completion+models")
        body = json.dumps(completion_body(i))
        data = (request_bytes("GET", "/health") + request_bytes("POST", "/v1/completions", body) +
                request_bytes("GET", "/v1/models"))
        c = None
        try:
            c = self.conn(VALID_TIMEOUT)
            c.send(data)
            s1, _, _ = c.read_response()
            s2, _, b2 = c.read_response()
            s3, _, _ = c.read_response()
            if (s1, s2, s3) != (200, 200, 200):
                self.failed("pipelined", "statuses %d %d %d: %s" % (s1, s2, s3, b2[:200]))
                return
            self.check("pipelined", ("completion", i), answer_text(b2, False))
        except Exception as e:  # noqa: BLE001
            self.failed("pipelined", "%s: %s" % (outcome_of(e), str(e)[:200]))
        finally:
            if c:
                c.close()

    def slowloris(self, rng):
        """Headers one byte at a time (~0.3 s apart); then either the whole request (answer
        checked) or the connection is abandoned."""
        finish = rng.random() < 0.5
        cls = "slow_headers" if finish else "slow_abandon"
        if not self.slow_slots.acquire(blocking=False):
            return self.valid_request("completion", rng)
        try:
            i = rng.randrange(len(PROMPTS))
            body = json.dumps(completion_body(i)).encode()
            data = request_bytes("POST", "/v1/completions", body)
            head = data[:-len(body)]
            self.started(cls, "trickle")
            c = None
            try:
                c = self.conn(VALID_TIMEOUT)
                cut = len(head) if finish else rng.randrange(5, len(head) - 2)
                deadline = time.monotonic() + rng.uniform(5, 15)
                sent = 0
                while sent < cut and time.monotonic() < deadline and not self.stop.is_set():
                    c.send(head[sent:sent + 1])
                    sent += 1
                    time.sleep(0.3)
                if not finish:
                    self.hostile(cls, "abandoned after %s" % ("headers" if sent >= cut else "bytes"))
                    return
                c.send(head[sent:] + body)
                status, headers, resp = c.read_response()
                if status != 200:
                    self.failed(cls, "status %d: %s" % (status, resp[:200]))
                    return
                self.check(cls, ("completion", i), answer_text(resp, False))
            except Exception as e:  # noqa: BLE001
                if finish:
                    self.failed(cls, "%s: %s" % (outcome_of(e), str(e)[:200]))
                else:
                    self.hostile(cls, outcome_of(e))
            finally:
                if c:
                    c.close()
        finally:
            self.slow_slots.release()

    # -- hostile requests (any answer but a crash; the statuses are reported)
    def raw_hostile(self, cls, variant, data, half_close=False, timeout=HOSTILE_TIMEOUT):
        self.started(cls, variant)
        try:
            status, _, _ = self.exchange(data, timeout, half_close)
            self.hostile(cls, status, variant)
        except Exception as e:  # noqa: BLE001
            self.hostile(cls, outcome_of(e), variant)

    def bad_http(self, rng):
        name = rng.choice(sorted(self._bad_http) + ["binary"])
        data = (bytes(rng.randrange(256) for _ in range(300)) if name == "binary"
                else self._bad_http[name])
        self.raw_hostile("bad_http", name, data, half_close=rng.random() < 0.3)

    @staticmethod
    def bad_http_variants():
        ok_body = json.dumps(completion_body(0)).encode()
        return {
            "garbage-line": b"GARBAGE\r\n\r\n",
            "no-target": b"GET\r\n\r\n",
            "bad-version": b"GET /health HTTP/9.9\r\n\r\n",
            "lowercase-method": b"get /health HTTP/1.1\r\n\r\n",
            "space-in-target": b"GET /he alth HTTP/1.1\r\n\r\n",
            "nul-in-line": b"GET /health\x00 HTTP/1.1\r\n\r\n",
            "cl-nonnumeric": b"POST /v1/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n{}",
            "cl-negative": b"POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n{}",
            "cl-overflow": b"POST /v1/completions HTTP/1.1\r\nContent-Length: "
                           b"184467440737095516160\r\n\r\n{}",
            "cl-huge-short-body": b"POST /v1/completions HTTP/1.1\r\nContent-Length: "
                                  b"1000000000\r\n\r\n{\"prompt\":",
            "cl-duplicate": b"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n"
                            b"Content-Length: %d\r\n\r\n" % len(ok_body) + ok_body,
            "cl-list": b"POST /v1/completions HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n{}",
            "cl-and-chunked": b"POST /v1/completions HTTP/1.1\r\nContent-Length: 4\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
            "chunk-size-nonhex": b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                 b"\r\nzz\r\n{}\r\n0\r\n\r\n",
            "chunk-size-overflow": b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                   b"\r\nfffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
            "chunk-size-negative": b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                   b"\r\n-2\r\n{}\r\n0\r\n\r\n",
            "chunk-huge-short": b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                b"\r\n7fffffff\r\n{\"prompt\":\"a\"}",
            "chunk-missing-crlf": b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                                  b"\r\n2\r\n{}XX0\r\n\r\n",
            "te-unknown": b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n{}",
            "header-huge": b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * (100 << 10) + b"\r\n\r\n",
            "headers-many": b"GET /health HTTP/1.1\r\n" +
                            b"".join(b"X-H%d: v\r\n" % k for k in range(2000)) + b"\r\n",
            "header-no-colon": b"GET /health HTTP/1.1\r\nNoColonHere\r\n\r\n",
            "header-obs-fold": b"GET /health HTTP/1.1\r\nX-A: a\r\n folded\r\n\r\n",
            "url-huge": b"GET /" + b"a" * (1 << 20) + b" HTTP/1.1\r\n\r\n",
            "url-long-query": b"GET /health?" + b"q=1&" * 4000 + b" HTTP/1.1\r\n\r\n",
            "http2-preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                             b"\x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64"
                             b"\x00\x04\x00\x01\x00\x00\x00\x05\x00\xff\xff\xff",
            "path-non-utf8": b"GET /\xff\xfe\xc0\xaf%00%zz HTTP/1.1\r\n\r\n",
            "path-non-utf8-post": b"POST /v1/\xe9\x80 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
            "bare-lf": b"GET /health HTTP/1.1\nHost: x\n\n",
            "method-unknown": b"BREW /v1/completions HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "connect": b"CONNECT localhost:80 HTTP/1.1\r\n\r\n",
            "absolute-uri": b"GET http://evil.example/health HTTP/1.1\r\n\r\n",
        }

    def bad_json(self, rng):
        name = rng.choice(sorted(self._bad_json))
        self.raw_hostile("bad_json", name, self._bad_json[name])

    @staticmethod
    def bad_json_variants():
        """Request bytes by name, made once (some are large)."""
        variants = {
            "deep-array": "[" * 100000 + "]" * 100000,
            "deep-object": '{"a":' * 50000 + "1" + "}" * 50000,
            "deep-prompt": '{"prompt":' + "[" * 20000 + "]" * 20000 + "}",
            "deep-unclosed": '{"prompt":' + "[" * 200000,
            "huge-token-array": json.dumps({"prompt": [1] * 10 ** 5, "max_tokens": 1}),
            "huger-token-array": json.dumps({"prompt": [1] * 10 ** 6, "max_tokens": 1}),
            "huge-stop-array": json.dumps({"prompt": "a", "stop": ["x"] * 100000}),
            "huge-messages": json.dumps({"messages": [{"role": "user", "content": "hi"}] * 50000,
                                         "max_tokens": 1}),
            "huge-string": json.dumps({"prompt": "a " * 500000, "max_tokens": 1}),
            "many-keys": "{" + ",".join('"k%d":%d' % (k, k) for k in range(200000)) + "}",
            "invalid-utf8": b'{"prompt":"\xff\xfe\xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80",'
                            b'"max_tokens":2}',
            "invalid-utf8-chat": b'{"messages":[{"role":"user","content":"\xc0\xaf\x80"}],'
                                 b'"max_tokens":2}',
            "lone-surrogate-escape": '{"prompt":"\\ud800\\udfff\\ud800","max_tokens":2}',
            "nul-escape": '{"prompt":"a\\u0000b","max_tokens":2}',
            "prompt-number": '{"prompt":5}',
            "prompt-object": '{"prompt":{"a":1}}',
            "max-tokens-string": '{"prompt":"a","max_tokens":"8"}',
            "max-tokens-negative": '{"prompt":"a","max_tokens":-1}',
            "max-tokens-huge": '{"prompt":"a","max_tokens":1e300}',
            "temperature-string": '{"prompt":"a","temperature":"hot"}',
            "temperature-nan": '{"prompt":"a","temperature":NaN}',
            "stream-string": '{"prompt":"a","stream":"yes"}',
            "n-huge": '{"prompt":"a","n":4294967297}',
            "messages-object": '{"messages":{"role":"user"}}',
            "messages-empty": '{"messages":[]}',
            "message-no-role": '{"messages":[{"content":"hi"}]}',
            "message-number-content": '{"messages":[{"role":"user","content":7}]}',
            "message-bad-parts": '{"messages":[{"role":"user","content":[{"type":"image"}]}]}',
            "token-id-huge": '{"prompt":[999999999],"max_tokens":2}',
            "token-id-negative": '{"prompt":[-1,2],"max_tokens":2}',
            "token-id-2p40": '{"prompt":[1099511627776],"max_tokens":2}',
            "token-id-float": '{"prompt":[1.5],"max_tokens":2}',
            "logit-bias-bad-id": '{"prompt":"a","max_tokens":2,"logit_bias":{"99999999":5}}',
            "logit-bias-neg-id": '{"prompt":"a","max_tokens":2,"logit_bias":{"-3":5}}',
            "stop-token-ids-huge": '{"prompt":"a","max_tokens":2,"stop_token_ids":[2147483647]}',
            "detokenize-bad-ids": ("/detokenize", '{"tokens":[-5,2147483647,99999999999]}'),
            "tokenize-null": ("/tokenize", '{"content":null}'),
            "null-prompt": '{"prompt":null}',
            "null-messages": '{"messages":null}',
            "null-fields": '{"prompt":"a","max_tokens":null,"temperature":null,"stop":null,'
                           '"seed":null,"stream":null,"n":null,"logit_bias":null}',
            "null-role": '{"messages":[{"role":null,"content":null}]}',
            "not-object": "[1,2,3]",
            "string-body": '"prompt"',
            "empty-body": "",
            "truncated": '{"prompt":"a","max_tok',
            "trailing-garbage": '{"prompt":"a","max_tokens":1}garbage',
            "duplicate-keys": '{"prompt":"a","prompt":[1,2],"max_tokens":1}',
            "model-wrong": '{"model":"nope","prompt":"a","max_tokens":1}',
            "unknown-field": '{"prompt":"a","max_tokens":1,"frobnicate":true}',
        }
        out = {}
        for name, v in variants.items():
            path = "/v1/chat/completions" if "message" in name else "/v1/completions"
            if isinstance(v, tuple):
                path, v = v
            out[name] = request_bytes("POST", path, v)
        return out

    def disconnect(self, rng):
        """Leaves mid-request (FIN or RST) or mid-stream."""
        chat = rng.random() < 0.4
        path = "/v1/chat/completions" if chat else "/v1/completions"
        body = {"max_tokens": 200, "temperature": 0.8, "ignore_eos": True}
        body.update({"messages": CHATS[0]} if chat else {"prompt": PROMPTS[0]})
        where = rng.choice(["in-headers", "in-body", "after-request", "mid-stream",
                            "after-stream-head"])
        rst = rng.random() < 0.5
        cls = "disconnect_stream" if where.endswith("stream") or "stream-head" in where \
            else "disconnect_request"
        variant = where + ("-rst" if rst else "-fin")
        self.started(cls, variant)
        body["stream"] = "stream" in where
        data = request_bytes("POST", path, json.dumps(body))
        c = None
        try:
            c = self.conn(VALID_TIMEOUT)
            if where == "in-headers":
                c.send(data[:rng.randrange(1, data.index(b"\r\n\r\n"))])
            elif where == "in-body":
                c.send(data[:data.index(b"\r\n\r\n") + 4 + rng.randrange(1, 20)])
            elif where == "after-request":
                c.send(data)
                time.sleep(rng.uniform(0, 0.5))
            else:
                c.send(data)
                status, headers = c.read_head()
                if status == 200 and where == "mid-stream":
                    pieces = c.body_pieces(headers)
                    for _ in range(rng.randrange(1, 6)):
                        next(pieces, None)
                self.hostile(cls, status, variant)
            (c.reset if rst else c.close)()
            c = None
            if where not in ("mid-stream", "after-stream-head"):
                self.hostile(cls, "left", variant)
        except Exception as e:  # noqa: BLE001
            self.hostile(cls, outcome_of(e), variant)
        finally:
            if c:
                c.close()

    # -- the mix
    def classes(self):
        return [
            ("completion", 10, lambda r: self.valid_request("completion", r)),
            ("stream", 8, lambda r: self.valid_request("stream", r, stream=True)),
            ("half_close", 4, lambda r: self.valid_request("half_close", r, half_close=True)),
            ("half_close_stream", 2,
             lambda r: self.valid_request("half_close_stream", r, stream=True, half_close=True)),
            ("expect_100", 3, lambda r: self.valid_request("expect_100", r, expect=True)),
            ("pipelined", 3, self.pipelined),
            ("slowloris", 2, self.slowloris),
            ("bad_http", 14, self.bad_http),
            ("bad_json", 14, self.bad_json),
            ("disconnect", 10, self.disconnect),
        ]

    def worker(self, index, deadline):
        rng = random.Random(self.args.seed * 1000 + index)
        classes = self.classes()
        funcs = [c[2] for c in classes]
        weights = [c[1] for c in classes]
        while not self.stop.is_set() and time.monotonic() < deadline:
            rng.choices(funcs, weights)[0](rng)

    # -- monitors
    def alive(self):
        if self.pid is None:  # a server of someone else's: alive while it accepts connections
            try:
                socket.create_connection((self.host, self.port), timeout=5).close()
                return True
            except ConnectionRefusedError:
                return False
            except OSError:
                return True
        try:
            with open("/proc/%d/status" % self.pid) as f:
                return "State:\tZ" not in f.read()
        except OSError:
            return False

    def read_rss(self):
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, ValueError, TypeError):
            return None
        return None

    def monitor(self):
        last_rss = 0.0
        while not self.stop.is_set():
            if not self.check_alive():
                return
            if self.pid and time.monotonic() - last_rss >= 1.0:
                last_rss = time.monotonic()
                rss = self.read_rss()
                if rss is not None:
                    self.rss.append((last_rss - self.t0, rss))
            self.stop.wait(0.2)

    def metrics(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            text = r.read().decode()
        finally:
            conn.close()
        return parse_metrics(text)

    def drain(self, timeout=60.0):
        """Waits until nothing runs or waits and the KV blocks are given back; returns
        (drained, metrics)."""
        deadline = time.monotonic() + timeout
        m = {}
        while time.monotonic() < deadline and self.alive():
            try:
                m = self.metrics()
            except Exception:  # noqa: BLE001
                time.sleep(0.5)
                continue
            idle = (m.get("forge_num_requests_running", 1) == 0 and
                    m.get("forge_num_requests_waiting", 1) == 0)
            if idle and m.get("forge_kv_blocks_used", 1) == 0:
                return True, m
            time.sleep(0.5)
        return False, m

    def run(self):
        minutes = self.args.minutes
        duration = minutes * 60.0
        warm = min(60.0, duration / 4)
        print("abuse: references ...", flush=True)
        self.references()
        for k, v in sorted(self.refs.items()):
            print("abuse: reference %s %d: %r" % (k[0], k[1], v[:60]), flush=True)
        self.t0 = time.monotonic()
        deadline = self.t0 + duration
        mon = threading.Thread(target=self.monitor, daemon=True)
        probe_stop = multiprocessing.Event()
        probe_rx, probe_tx = multiprocessing.Pipe(duplex=False)
        probe = multiprocessing.Process(target=health_probe,
                                        args=(self.host, self.port, probe_stop, probe_tx),
                                        daemon=True)
        probe.start()  # forked before any thread of ours starts
        mon.start()
        workers = [threading.Thread(target=self.worker, args=(i, deadline), daemon=True)
                   for i in range(self.args.concurrency)]
        print("abuse: %d clients for %.1f min (RSS warm-up %.0f s)" %
              (len(workers), minutes, warm), flush=True)
        for w in workers:
            w.start()
        next_report = time.monotonic() + 30
        while time.monotonic() < deadline and not self.stop.is_set():
            time.sleep(0.5)
            if time.monotonic() >= next_report:
                next_report += 30
                with self.lock:
                    n = sum(self.requests.values())
                    bad = sum(v["wrong"] for v in self.valid.values())
                print("abuse: %4.0f s: %d requests, %d wrong answers, RSS %s kB" %
                      (time.monotonic() - self.t0, n, bad,
                       self.rss[-1][1] if self.rss else "?"), flush=True)
        # The workers stop at the deadline (each finishes its request; sockets time out).
        join_by = time.monotonic() + VALID_TIMEOUT + 30
        for w in workers:
            w.join(max(0.0, join_by - time.monotonic()))
        stuck = sum(w.is_alive() for w in workers)
        drained, m = (False, {})
        if self.alive():
            drained, m = self.drain()
        self.stop.set()
        probe_stop.set()
        if probe_rx.poll(30):
            self.health, failures = probe_rx.recv()
            self.health_failures.update(failures)
        probe.join(5)
        mon.join(5)
        end_rss = self.read_rss() if self.pid and self.alive() else None
        return self.report(duration, warm, stuck, drained, m, end_rss)

    def report(self, duration, warm, stuck, drained, m, end_rss):
        alive = self.alive() and not self.died.is_set()
        valid_classes = {"completion", "stream", "half_close", "half_close_stream", "expect_100",
                         "pipelined", "slow_headers"}
        totals = collections.Counter()
        for cls, c in self.valid.items():
            totals.update(c)
        warm_rss = None
        for t, kb in self.rss:
            if t >= warm:
                warm_rss = kb
                break
        if end_rss is None and self.rss:
            end_rss = self.rss[-1][1]
        lat = sorted(self.health)

        def pct(p):
            if not lat:
                return None
            return round(1000 * lat[min(len(lat) - 1, int(p / 100.0 * len(lat)))], 2)

        kv = m.get("forge_kv_blocks_used") if m else None
        summary = {
            "minutes": self.args.minutes,
            "concurrency": self.args.concurrency,
            "server": {"alive": alive, "pid": self.pid, "died_at_s": self.died_at,
                       "requests_before_death": [r for r in self.recent if r[0] <= self.died_at]
                                                if self.died.is_set() else []},
            "requests": dict(sorted(self.requests.items())),
            "valid": {"correct": totals["correct"], "wrong": totals["wrong"],
                      "failed": totals["failed"],
                      "by_class": {k: dict(v) for k, v in sorted(self.valid.items())},
                      "wrong_examples": self.wrong_examples,
                      "failure_examples": self.failure_examples},
            "hostile_statuses": {k: dict(sorted(v.items())) for k, v in sorted(self.statuses.items())
                                 if k not in valid_classes},
            "hostile_by_variant": {k: {var: dict(sorted(c.items())) for var, c in sorted(v.items())}
                                   for k, v in sorted(self.by_variant.items())},
            "valid_failure_statuses": {k: dict(v) for k, v in sorted(self.statuses.items())
                                       if k in valid_classes},
            "notes": dict(self.notes),
            "drained": drained,
            "stuck_clients": stuck,
            "kv_blocks_used_end": kv,
            "metrics_end": {k: v for k, v in m.items() if k.startswith(("forge_kv", "forge_num",
                                                                        "forge_requests_total"))},
            "rss_kb": {"warmup_s": warm, "after_warmup": warm_rss, "end": end_rss,
                       "max": max((kb for _, kb in self.rss), default=None),
                       "change_pct": round(100.0 * (end_rss - warm_rss) / warm_rss, 2)
                       if warm_rss and end_rss else None},
            "health": {"probes": len(lat) + sum(self.health_failures.values()),
                       "answered": len(lat), "failures": dict(self.health_failures),
                       "p50_ms": pct(50), "p99_ms": pct(99),
                       "max_ms": round(1000 * lat[-1], 2) if lat else None,
                       "over_100ms": sum(1 for x in lat if x > 0.1)},
        }
        problems = []
        if not alive:
            problems.append("the server died (at %s s)" % self.died_at)
        if totals["wrong"]:
            problems.append("%d valid requests got a wrong answer" % totals["wrong"])
        if kv is None:
            problems.append("KV blocks in use at the end unknown (no /metrics)")
        elif kv != 0:
            problems.append("%d KV blocks still in use at the end" % kv)
        summary["problems"] = problems
        summary["ok"] = not problems
        return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="abuse time (fractional)")
    p.add_argument("--concurrency", type=int, default=24, help="concurrent clients")
    p.add_argument("--json", help="write the summary here as JSON")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--forge", help="forge binary (default: see above)")
    p.add_argument("--model", help="GGUF model (default: stories260K, else a made one)")
    p.add_argument("--device", default="cpu", help="forge serve --device")
    p.add_argument("--server-arg", action="append", default=[],
                   help="extra forge serve argument (repeat; use --server-arg=--flag=value)")
    p.add_argument("--server-log", help="where the started server's output goes")
    p.add_argument("--start-timeout", type=int, default=180)
    p.add_argument("--host", default="127.0.0.1", help="with --port: a running server")
    p.add_argument("--port", type=int, help="abuse a server already running here")
    p.add_argument("--pid", type=int, help="with --port: its pid (RSS and liveness)")
    args = p.parse_args()
    if args.minutes <= 0 or args.concurrency < 1:
        p.error("--minutes must be > 0 and --concurrency >= 1")

    tmpdir = tempfile.mkdtemp(prefix="forge-abuse-")
    proc = None
    log_path = None
    if args.port:
        host, port, pid = args.host, args.port, args.pid
    else:
        proc, port, log_path = start_server(args, tmpdir)
        host, pid = "127.0.0.1", proc.pid
    abuse = Abuse(args, host, port, pid)
    try:
        summary = abuse.run()
    except (RuntimeError, OSError, Closed, ValueError) as e:
        if proc:
            proc.kill()
        die(str(e))
    if proc is not None:
        summary["server"]["log"] = log_path
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
                summary["server"]["shutdown"] = "exited %d after SIGTERM" % proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                summary["server"]["shutdown"] = "killed: no exit within 30 s of SIGTERM"
        else:
            rc = proc.returncode
            summary["server"]["exit"] = ("signal %s" % signal.Signals(-rc).name if rc < 0
                                         else "status %d" % rc)
            try:
                with open(log_path, errors="replace") as f:
                    summary["server"]["log_tail"] = f.read()[-4000:]
            except OSError:
                pass
    print_summary(summary)
    if proc is not None:
        print("server: %s (log %s)" % (summary["server"].get("shutdown") or
                                       summary["server"].get("exit"), log_path))
        if "log_tail" in summary["server"]:
            print("---- server log tail ----\n%s\n----" % summary["server"]["log_tail"][-2500:])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    if summary["ok"] and not args.server_log:
        shutil.rmtree(tmpdir, ignore_errors=True)  # the server's log is kept when it failed
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
