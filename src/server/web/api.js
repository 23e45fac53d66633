// The page's calls to the server: the API key (asked for when a call is refused with 401, kept in
// this browser), JSON requests, and server-sent-event streams read through fetch (EventSource
// cannot send the Authorization header).
"use strict";

const Api = (() => {
  const KEY = "forge.apiKey";
  let keyWaiters = [];

  function headers(json) {
    const h = {};
    if (json) h["Content-Type"] = "application/json";
    const key = localStorage.getItem(KEY);
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
  }

  // Opens the key dialog; resolves once a key is saved (all waiting calls retry then).
  function askKey() {
    return new Promise((resolve, reject) => {
      keyWaiters.push({ resolve, reject });
      const d = document.getElementById("key-dialog");
      if (!d.open) d.showModal();
    });
  }

  function setKey(key) {
    if (key) localStorage.setItem(KEY, key);
    else localStorage.removeItem(KEY);
    const w = keyWaiters;
    keyWaiters = [];
    w.forEach((x) => (key ? x.resolve() : x.reject(new Error("no API key"))));
  }

  // fetch with the key; on 401 the page asks for the key and tries again.
  async function call(path, options = {}) {
    for (;;) {
      const r = await fetch(path, {
        ...options,
        headers: { ...headers(options.body !== undefined), ...(options.headers || {}) },
      });
      if (r.status !== 401) return r;
      await askKey();
    }
  }

  async function errorText(r) {
    try {
      const j = await r.json();
      return (j.error && j.error.message) || r.status + " " + r.statusText;
    } catch (e) {
      return r.status + " " + r.statusText;
    }
  }

  async function json(path, body) {
    const r = await call(path, body === undefined ? {} : { method: "POST", body: JSON.stringify(body) });
    if (!r.ok) throw new Error(await errorText(r));
    return r.json();
  }

  // Reads a server-sent-event response: onData(payload) for every "data:" line.
  async function readEvents(response, onData) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of block.split("\n")) {
          if (line.startsWith("data: ")) onData(line.slice(6));
        }
      }
    }
  }

  return { call, json, readEvents, askKey, setKey, errorText, hasKey: () => !!localStorage.getItem(KEY) };
})();
