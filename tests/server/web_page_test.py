#!/usr/bin/python3
"""The web page of `forge serve` in a real browser (Debian's chromium, headless, through
chromium-driver and python3-selenium): it loads, a chat message streams its answer in, the
operations view's counters move while a load runs, a model answer holding <script> and event
handler payloads (forced by a guided_choice the page sends) is shown as inert text, the page asks
for the key under --api-key, and screenshots (desktop, and a 390-pixel-wide phone) show the key
elements present and visible. Prints the first paint time (not asserted).

  web_page_test.py --forge BUILD/apps/forge/forge [--screenshots DIR]

Without chromium, its driver or selenium the test skips (exit 77), except under CI=true, where that
is a failure."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SKIP = 77


def missing_browser():
    why = []
    if not (shutil.which("chromium") or os.path.exists("/usr/bin/chromium")):
        why.append("chromium")
    if not (shutil.which("chromedriver") or os.path.exists("/usr/bin/chromedriver")):
        why.append("chromium-driver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        why.append("python3-selenium")
    return why


class Server:
    """forge serve on a free loopback port."""

    def __init__(self, forge, model, workdir, extra=()):
        self.port_file = os.path.join(workdir, "port-%d" % time.monotonic_ns())
        self.log = open(os.path.join(workdir, "serve.log"), "ab")
        self.proc = subprocess.Popen(
            [forge, "serve", "-m", model, "--device", "cpu", "--host", "127.0.0.1", "--port", "0",
             "--port-file", self.port_file, "--debug-step-delay-ms", "15", *extra],
            stderr=self.log)
        deadline = time.time() + 30
        self.port = 0
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("forge serve exited with %d" % self.proc.returncode)
            if os.path.exists(self.port_file):
                self.port = int(open(self.port_file).read())
                try:
                    with urllib.request.urlopen(self.url("/health"), timeout=2) as r:
                        if r.status == 200:
                            return
                except Exception:
                    pass
            time.sleep(0.05)
        raise RuntimeError("forge serve did not become healthy")

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=15)
        self.log.close()


def post(url, body, key=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", "Bearer " + key)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def wait(what, fn, timeout=15, every=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(every)
    raise AssertionError("timed out waiting for " + what)


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def browser(width, height):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--hide-scrollbars", "--force-device-scale-factor=1",
              "--window-size=%d,%d" % (width, height)):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    d.set_window_size(width, height)
    return d


# The elements a screenshot must show, by view: present, displayed, of some size, inside the
# viewport's width.
LAYOUT = {
    "chat": ["#tab-chat", "#tab-ops", "#model-name", "#messages", "#chat-input", "#send", "#stop",
             "#set-temperature"],
    "ops": ["#ops-output-tps", "#ops-busy", "#ops-queues", "#ops-kv", "#ops-ttft", "#ops-itl",
            "#plot-tps", "#ops-table"],
    "model": ["#model-facts"],
}


def check_layout(d, view, shot):
    from selenium.webdriver.common.by import By
    width = d.execute_script("return document.documentElement.clientWidth")
    for css in LAYOUT[view]:
        e = d.find_element(By.CSS_SELECTOR, css)
        d.execute_script("arguments[0].scrollIntoView({block: 'nearest'})", e)  # as one scrolls
        r = e.rect
        check(e.is_displayed(), "%s: %s is not displayed" % (shot, css))
        check(r["width"] > 0 and r["height"] > 0, "%s: %s has no size (%s)" % (shot, css, r))
        check(r["x"] >= -1 and r["x"] + r["width"] <= width + 1,
              "%s: %s leaves the viewport (%s, width %d)" % (shot, css, r, width))
    scroll = d.execute_script("return document.documentElement.scrollWidth")
    check(scroll <= width + 1, "%s: the page scrolls sideways (%d > %d)" % (shot, scroll, width))


def run(forge, shots):
    from selenium.webdriver.common.by import By
    work = tempfile.mkdtemp(prefix="forge-web-")
    model = os.path.join(work, "words.gguf")
    subprocess.run([forge, "make-model", model, "--preset", "tiny", "--type", "q8_0", "--peaked",
                    "--vocab", "words", "--name", "forge-words"], check=True,
                   stdout=subprocess.DEVNULL)
    server = Server(forge, model, work)
    d = browser(1200, 820)
    try:
        d.get(server.url("/"))
        wait("the model's name", lambda: "forge-words" in d.find_element(By.ID, "model-name").text)
        paint = d.execute_script(
            "const p = performance.getEntriesByName('first-contentful-paint')[0];"
            "return p ? p.startTime : null")
        print("first contentful paint: %s ms (loopback, headless)" % (
            "%.0f" % paint if paint is not None else "n/a"))

        # A chat message: the answer streams in (its text grows while the message is streaming).
        d.find_element(By.ID, "set-temperature").clear()
        d.find_element(By.ID, "set-temperature").send_keys("0")
        d.find_element(By.ID, "set-max_tokens").clear()
        d.find_element(By.ID, "set-max_tokens").send_keys("48")
        d.find_element(By.ID, "chat-input").send_keys("once upon a time")
        d.find_element(By.ID, "send").click()
        lengths = set()

        def streamed():
            n = d.execute_script(
                "const m = document.querySelector('.msg.assistant.streaming .content');"
                "return m ? m.textContent.length : -1")
            if n > 0:
                lengths.add(n)
            return n == -1 and len(lengths) > 0
        wait("the answer to stream", streamed, timeout=20, every=0.02)
        check(len(lengths) >= 2, "the answer did not arrive in pieces: %s" % sorted(lengths))
        answer = d.find_element(By.CSS_SELECTOR, ".msg.assistant .content").text.strip()
        words = answer.split()
        check(len(words) >= 10 and all(w.isalpha() and w.islower() for w in words),
              "the answer is not a sequence of words: %r" % answer)
        print("streamed answer (%d sizes seen): %s" % (len(lengths), answer[:80]))
        d.find_element(By.CSS_SELECTOR, ".msg.assistant .heat-toggle").click()
        cells = d.find_elements(By.CSS_SELECTOR, ".msg.assistant .heat span")
        check(len(cells) == 48, "the heat map has %d tokens, expected 48" % len(cells))
        d.find_element(By.CSS_SELECTOR, ".msg.assistant .heat-toggle").click()
        d.find_element(By.ID, "show-prompt").click()
        wait("the rendered prompt", lambda: "<|im_start|>user" in
             d.find_element(By.ID, "prompt-view").text)
        d.save_screenshot(os.path.join(shots, "web-chat-desktop.png"))
        check_layout(d, "chat", "desktop chat")

        # The operations view: counters move while a load runs.
        d.find_element(By.ID, "tab-ops").click()
        done_before = d.find_element(By.ID, "ops-total").text
        failures = []

        def load():
            try:
                for i in range(3):
                    post(server.url("/v1/completions"),
                         {"prompt": "the river %d" % i, "max_tokens": 80, "ignore_eos": True})
            except Exception as e:  # reported below
                failures.append(e)
        threads = [threading.Thread(target=load) for _ in range(3)]
        for t in threads:
            t.start()
        seen = {}

        def moving():
            tps = d.find_element(By.ID, "ops-output-tps").text
            queues = d.find_element(By.ID, "ops-queues").text
            rows = d.find_elements(By.CSS_SELECTOR, "#ops-table tbody tr")
            if tps not in ("–", "0.0") and queues.split(" / ")[0] not in ("0", "–") and rows:
                seen.update(tps=tps, queues=queues, rows=len(rows))
                return True
            return False
        wait("the operations counters to move", moving, timeout=20, every=0.1)
        d.save_screenshot(os.path.join(shots, "web-ops-desktop.png"))
        check_layout(d, "ops", "desktop operations")
        for t in threads:
            t.join()
        check(not failures, "load requests failed: %s" % failures)
        wait("the finished requests to be counted",
             lambda: d.find_element(By.ID, "ops-total").text != done_before)
        print("operations view while loaded: %s tokens/s, queues %s, %d rows in flight" % (
            seen["tps"], seen["queues"], seen["rows"]))
        d.find_element(By.ID, "tab-model").click()
        wait("the model's facts", lambda: "forge-words" in
             d.find_element(By.ID, "model-facts").text)
        check_layout(d, "model", "desktop model")

        # A model answer holding markup: shown as text, nothing runs, no element is made of it.
        payload = ("<script>window.pwned=1</script> <img src=x onerror=\"window.pwned=2\"> "
                   "<svg onload=window.pwned=3></svg> [link](javascript:window.pwned=4) **b**")
        d.find_element(By.ID, "tab-chat").click()
        d.find_element(By.ID, "set-max_tokens").clear()
        d.find_element(By.ID, "set-max_tokens").send_keys("400")
        d.find_element(By.ID, "set-extra").send_keys(json.dumps({"guided_choice": [payload]}))
        d.find_element(By.ID, "chat-input").send_keys("show me markup")
        d.find_element(By.ID, "send").click()
        wait("the markup answer", lambda: not d.find_elements(By.CSS_SELECTOR, ".msg.streaming"),
             timeout=30)
        box = d.find_elements(By.CSS_SELECTOR, ".msg.assistant .content")[-1]
        shown = box.text
        check("<script>window.pwned=1</script>" in shown and "onerror=" in shown,
              "the payload is not shown as text: %r" % shown)
        for tag in ("script", "img", "svg", "iframe"):
            check(not box.find_elements(By.TAG_NAME, tag), "the answer made a <%s>" % tag)
        check(not box.find_elements(By.CSS_SELECTOR, "[onerror],[onload]"),
              "the answer made an event handler attribute")
        for a in box.find_elements(By.TAG_NAME, "a"):
            check(not a.get_attribute("href").startswith("javascript:"), "a javascript: link")
        check(box.find_elements(By.TAG_NAME, "strong"), "markdown (**b**) was not rendered")
        check(d.execute_script("return window.pwned === undefined"), "a payload ran")
        print("markup answer rendered inert: %r" % shown[:60])
        d.find_element(By.ID, "set-extra").clear()
        d.find_element(By.ID, "set-max_tokens").clear()
        d.find_element(By.ID, "set-max_tokens").send_keys("40")
        d.find_element(By.ID, "new-chat").click()

        # A phone: 390 pixels wide.
        d.set_window_size(390, 844)
        d.find_element(By.ID, "chat-input").send_keys("once upon a time")
        d.find_element(By.ID, "send").click()
        wait("the phone's answer", lambda: d.find_elements(By.CSS_SELECTOR, ".msg.assistant") and
             not d.find_elements(By.CSS_SELECTOR, ".msg.streaming"), timeout=20)
        d.save_screenshot(os.path.join(shots, "web-chat-phone.png"))
        check_layout(d, "chat", "phone chat")
        d.find_element(By.ID, "tab-ops").click()
        time.sleep(1.2)
        d.save_screenshot(os.path.join(shots, "web-ops-phone.png"))
        check_layout(d, "ops", "phone operations")
    finally:
        d.quit()
        server.stop()

    # With --api-key the page asks for the key, then works.
    server = Server(forge, model, work, extra=("--api-key", "sekrit"))
    d = browser(1200, 820)
    try:
        d.get(server.url("/"))
        wait("the key dialog", lambda: d.execute_script(
            "return document.getElementById('key-dialog').open"))
        d.find_element(By.ID, "key-input").send_keys("sekrit")
        d.find_element(By.ID, "key-save").click()
        wait("the model's name with the key",
             lambda: "forge-words" in d.find_element(By.ID, "model-name").text)
        print("--api-key: the page asked for the key and then showed the model")
    finally:
        d.quit()
        server.stop()
    shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--forge", required=True)
    ap.add_argument("--screenshots", default=None, help="where the PNGs go (default: a temp dir)")
    a = ap.parse_args()
    why = missing_browser()
    if why:
        msg = "web_page_test: missing %s (scripts/setup.sh installs them)" % ", ".join(why)
        if os.environ.get("CI") == "true":
            print(msg + ": a failure under CI=true")
            return 1
        print(msg + ": skipped")
        return SKIP
    shots = a.screenshots or tempfile.mkdtemp(prefix="forge-shots-")
    os.makedirs(shots, exist_ok=True)
    start = time.time()
    run(a.forge, shots)
    print("web page test passed in %.1f s; screenshots in %s" % (time.time() - start, shots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
