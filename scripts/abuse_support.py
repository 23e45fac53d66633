"""The abuse run's support (scripts/abuse.py): a raw HTTP/1.1 client connection that can
half-close, reset and read chunked or SSE bodies; request bodies and reference answers; the
/health prober; starting `forge serve`; printing the summary. Python 3 standard library only."""
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

def die(message):
    """A usage or start-up error: exit status 2."""
    sys.stderr.write("abuse: %s\n" % message)
    sys.exit(2)


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_TOKENS = 24
VALID_TIMEOUT = 180.0  # a valid request on a loaded CPU server
HOSTILE_TIMEOUT = 30.0


# ---------------------------------------------------------------------------------------------
# A raw HTTP/1.1 client over a socket: every byte on the wire is ours.

class Closed(Exception):
    """The server closed the connection (EOF) before a complete response."""


class Conn:
    def __init__(self, host, port, timeout):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def half_close(self):
        self.sock.shutdown(socket.SHUT_WR)

    def reset(self):
        """Closes with an RST (SO_LINGER 0) instead of a FIN."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise Closed()
        self.buf += data

    def read_line(self, limit=1 << 20):
        while b"\r\n" not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("line too long")
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_head(self):
        """Status line and headers: (status, {lower name: value})."""
        line = self.read_line()
        parts = line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ValueError("bad status line %r" % line[:80])
        status = int(parts[1])
        headers = {}
        while True:
            h = self.read_line()
            if not h:
                break
            name, _, value = h.partition(b":")
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        return status, headers

    def body_pieces(self, headers):
        """Yields the body as it arrives (chunked, Content-Length or until close)."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                size_line = self.read_line()
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.read_line():  # trailers
                        pass
                    return
                yield self.read_exact(size)
                if self.read_exact(2) != b"\r\n":
                    raise ValueError("bad chunk end")
        elif "content-length" in headers:
            left = int(headers["content-length"])
            while left > 0:
                if not self.buf:
                    self._fill()
                piece, self.buf = self.buf[:left], self.buf[left:]
                left -= len(piece)
                yield piece
        else:
            if self.buf:
                piece, self.buf = self.buf, b""
                yield piece
            while True:
                try:
                    self._fill()
                except Closed:
                    return
                piece, self.buf = self.buf, b""
                yield piece

    def read_response(self, skip_1xx=True):
        while True:
            status, headers = self.read_head()
            if 100 <= status < 200 and skip_1xx:
                continue
            if status in (204, 304) or 100 <= status < 200:
                return status, headers, b""
            return status, headers, b"".join(self.body_pieces(headers))


def request_bytes(method, path, body=None, headers=None, version="HTTP/1.1"):
    if isinstance(body, str):
        body = body.encode()
    lines = ["%s %s %s" % (method, path, version), "Host: localhost"]
    if body is not None:
        lines.append("Content-Type: application/json")
        lines.append("Content-Length: %d" % len(body))
    for h in headers or []:
        lines.append(h)
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    return head + (body or b"")


def sse_text(pieces, chat):
    """Concatenates the text of an SSE completion stream; returns (text, saw_done)."""
    buf = b""
    text = []
    done = False
    for piece in pieces:
        buf += piece
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    continue
                j = json.loads(data)
                if "error" in j:
                    raise ValueError("error event: %s" % str(j["error"])[:200])
                for c in j.get("choices", []):
                    if chat:
                        text.append((c.get("delta") or {}).get("content") or "")
                    else:
                        text.append(c.get("text") or "")
    return "".join(text), done


def answer_text(body, chat):
    j = json.loads(body)
    c = j["choices"][0]
    return c["message"]["content"] if chat else c["text"]


def outcome_of(exc):
    if isinstance(exc, Closed):
        return "closed"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return "reset"
    if isinstance(exc, socket.timeout):
        return "timeout"
    if isinstance(exc, (ValueError, json.JSONDecodeError)):
        return "garbled"
    return type(exc).__name__


def health_probe(host, port, stop, out):
    """/health every ~200 ms on a connection of its own, in a process of its own (so that the
    clients' threads do not delay it); sends ([latency s], {failure: n}) through out at the end."""
    conn = None
    latencies = []
    failures = collections.Counter()
    while not stop.is_set():
        start = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, port, timeout=10)
            conn.request("GET", "/health")
            r = conn.getresponse()
            r.read()
            latency = time.monotonic() - start
            if r.status == 200:
                latencies.append(latency)
            else:
                failures["status %d" % r.status] += 1
            if (r.getheader("connection") or "").lower() == "close":
                conn.close()
                conn = None
        except Exception as e:  # noqa: BLE001
            failures[outcome_of(e)] += 1
            if conn is not None:
                conn.close()
            conn = None
        stop.wait(max(0.0, 0.2 - (time.monotonic() - start)))
    if conn is not None:
        conn.close()
    out.send((latencies, dict(failures)))
    out.close()


# ---------------------------------------------------------------------------------------------
# The requests.

PROMPTS = ["Once upon a time", "The little dog", "Lily and Tom went to the park. They"]
CHATS = [
    [{"role": "user", "content": "Tell me a story about a cat."}],
    [{"role": "system", "content": "You are brief."},
     {"role": "user", "content": "What did the bird see?"}],
]


def completion_body(i, stream=False):
    return {"prompt": PROMPTS[i], "max_tokens": MAX_TOKENS, "temperature": 0, "stream": stream}


def chat_body(i, stream=False):
    return {"messages": CHATS[i], "max_tokens": MAX_TOKENS, "temperature": 0, "stream": stream}


def print_summary(s):
    print("\n== abuse summary (%.2f min, %d clients) ==" % (s["minutes"], s["concurrency"]))
    print("requests per class:")
    for k, v in s["requests"].items():
        print("  %-20s %7d" % (k, v))
    v = s["valid"]
    print("valid requests: %d correct, %d wrong, %d failed" % (v["correct"], v["wrong"], v["failed"]))
    for k, c in v["by_class"].items():
        print("  %-20s %s" % (k, dict(c)))
    if s["valid_failure_statuses"]:
        print("valid failures by outcome: %s" % s["valid_failure_statuses"])
    for e in v["wrong_examples"][:3]:
        print("  WRONG %s %s: want %r got %r" % (e["class"], e["key"], e["want"][:60], e["got"][:60]))
    for e in v["failure_examples"][:5]:
        print("  failed %s at %s s: %s" % (e["class"], e["t"], e["why"][:160]))
    print("hostile requests, statuses seen:")
    for k, c in s["hostile_statuses"].items():
        print("  %-20s %s" % (k, c))
        for var, vc in s["hostile_by_variant"].get(k, {}).items():
            print("      %-26s %s" % (var, " ".join("%s:%d" % kv for kv in vc.items())))
    if s["notes"]:
        print("notes: %s" % s["notes"])
    srv = s["server"]
    print("server alive: %s%s" % (srv["alive"], "" if srv["alive"] else
                                  " (died at %s s)" % srv["died_at_s"]))
    if srv["requests_before_death"]:
        print("  last requests started before it died (t, class, variant):")
        for r in srv["requests_before_death"][-15:]:
            print("    %s" % (r,))
    print("drained: %s; stuck clients: %d; KV blocks in use at the end: %s" %
          (s["drained"], s["stuck_clients"], s["kv_blocks_used_end"]))
    r = s["rss_kb"]
    print("RSS: %s kB after %.0f s warm-up, %s kB at the end (%s%%), max %s kB" %
          (r["after_warmup"], r["warmup_s"], r["end"], r["change_pct"], r["max"]))
    h = s["health"]
    print("/health: %d probes, %d answered, p50 %s ms, p99 %s ms, max %s ms, %d over 100 ms, "
          "failures %s" % (h["probes"], h["answered"], h["p50_ms"], h["p99_ms"], h["max_ms"],
                           h["over_100ms"], h["failures"]))
    print("result: %s" % ("OK" if s["ok"] else "FAIL: " + "; ".join(s["problems"])))


# ---------------------------------------------------------------------------------------------
# Starting the server.

def find_forge(arg):
    if arg:
        return arg
    cands = []
    if os.environ.get("FORGE_BUILD_DIR"):
        cands.append(os.path.join(os.environ["FORGE_BUILD_DIR"], "apps/forge/forge"))
    cands += [os.path.join(REPO, d, "apps/forge/forge") for d in ("build", "build-cpu", "build-abuse")]
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    die("no forge binary (tried %s); build one or give --forge" % ", ".join(cands))


def find_model(arg, forge, tmpdir):
    if arg:
        return arg
    testdata = os.environ.get("FORGE_TESTDATA", os.path.join(REPO, "..", "shared", "testdata"))
    m = os.path.join(testdata, "models", "stories260K.gguf")
    if os.path.exists(m):
        return os.path.abspath(m)
    m = os.path.join(tmpdir, "abuse-tiny.gguf")
    subprocess.run([forge, "make-model", m, "--preset", "tiny", "--peaked"], check=True,
                   stdout=subprocess.DEVNULL)
    return m


def start_server(args, tmpdir):
    forge = find_forge(args.forge)
    model = find_model(args.model, forge, tmpdir)
    port_file = os.path.join(tmpdir, "port")
    log_path = args.server_log or os.path.join(tmpdir, "server.log")
    cmd = [forge, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0",
           "--port-file", port_file, "--device", args.device] + args.server_arg
    print("abuse: %s" % " ".join(cmd), flush=True)
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + args.start_timeout
    port = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.close()
            sys.stderr.write(open(log_path, errors="replace").read()[-3000:])
            die("the server exited at start (status %s)" % proc.returncode)
        if port is None and os.path.exists(port_file):
            port = int(open(port_file).read().strip())
        if port is not None:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    c.close()
                    return proc, port, log_path
                c.close()
            except OSError:
                pass
        time.sleep(0.2)
    proc.kill()
    die("the server was not ready within %d s (log: %s)" % (args.start_timeout, log_path))
