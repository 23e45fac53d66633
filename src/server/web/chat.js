// The chat playground: a conversation over /v1/chat/completions (streamed, stoppable), the
// sampling settings, the chat template's rendered prompt (/apply-template), each answer as
// markdown or as a heat map of its tokens' log-probabilities, copy, and the conversation and
// settings kept in this browser (localStorage).
"use strict";

const Chat = (() => {
  const STORE = "forge.chat.v1";
  const SETTINGS = ["temperature", "top_p", "top_k", "min_p", "max_tokens", "seed", "logprobs", "system",
                    "extra"];
  const $ = (id) => document.getElementById(id);
  let state = { messages: [], settings: {} };
  let controller = null;  // the running request's AbortController

  function load() {
    try {
      const s = JSON.parse(localStorage.getItem(STORE) || "null");
      if (s && Array.isArray(s.messages)) state = { messages: s.messages, settings: s.settings || {} };
    } catch (e) {
      /* a damaged store starts a new conversation */
    }
    for (const name of SETTINGS) {
      const input = $("set-" + name);
      if (!(name in state.settings)) continue;
      if (input.type === "checkbox") input.checked = !!state.settings[name];
      else input.value = state.settings[name];
    }
  }

  function save() {
    for (const name of SETTINGS) {
      const input = $("set-" + name);
      state.settings[name] = input.type === "checkbox" ? input.checked : input.value;
    }
    try {
      localStorage.setItem(STORE, JSON.stringify(state));
    } catch (e) {
      /* storage full: the conversation is still on the page */
    }
  }

  // The probability of a token as a color: green (likely) to red (unlikely).
  function heatColor(logprob) {
    const p = Math.exp(Math.max(logprob, -30));
    const hue = Math.round(120 * p);
    return `hsla(${hue}, 75%, 50%, 0.35)`;
  }

  function renderContent(box, msg) {
    box.textContent = "";
    if (msg.view === "heat" && msg.logprobs && msg.logprobs.length) {
      const heat = document.createElement("div");
      heat.className = "heat";
      for (const t of msg.logprobs) {
        const s = document.createElement("span");
        s.textContent = t.token;
        s.style.background = heatColor(t.logprob);
        s.title = `p = ${Math.exp(t.logprob).toFixed(3)} (logprob ${t.logprob.toFixed(3)})`;
        heat.appendChild(s);
      }
      box.appendChild(heat);
    } else if (msg.role === "assistant") {
      box.appendChild(Markdown.render(msg.content));
    } else {
      const p = document.createElement("p");
      p.style.whiteSpace = "pre-wrap";
      p.textContent = msg.content;
      box.appendChild(p);
    }
  }

  function copyText(s, button) {
    const done = () => {
      button.textContent = "copied";
      setTimeout(() => (button.textContent = "copy"), 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(s).then(done, () => fallbackCopy(s, done));
    } else {
      fallbackCopy(s, done);
    }
  }

  function fallbackCopy(s, done) {
    const t = document.createElement("textarea");
    t.value = s;
    document.body.appendChild(t);
    t.select();
    try {
      document.execCommand("copy");
    } catch (e) {
      /* nothing more to try */
    }
    t.remove();
    done();
  }

  function messageNode(msg) {
    const node = document.createElement("div");
    node.className = "msg " + msg.role;
    const who = document.createElement("div");
    who.className = "who";
    const name = document.createElement("span");
    name.textContent = msg.role;
    who.appendChild(name);
    const tools = document.createElement("span");
    tools.className = "tools";
    const box = document.createElement("div");
    box.className = "content";
    if (msg.role === "assistant") {
      const heat = document.createElement("button");
      heat.className = "ghost heat-toggle";
      heat.textContent = "heat map";
      heat.hidden = !(msg.logprobs && msg.logprobs.length);
      heat.onclick = () => {
        msg.view = msg.view === "heat" ? "text" : "heat";
        heat.textContent = msg.view === "heat" ? "text" : "heat map";
        renderContent(box, msg);
      };
      tools.appendChild(heat);
      const copy = document.createElement("button");
      copy.className = "ghost copy";
      copy.textContent = "copy";
      copy.onclick = () => copyText(msg.content, copy);
      tools.appendChild(copy);
    }
    who.appendChild(tools);
    node.appendChild(who);
    node.appendChild(box);
    renderContent(box, msg);
    node._msg = msg;
    node._box = box;
    return node;
  }

  function renderAll() {
    const list = $("messages");
    list.textContent = "";
    for (const m of state.messages) list.appendChild(messageNode(m));
    list.scrollTop = list.scrollHeight;
  }

  function num(id, parse) {
    const v = $(id).value.trim();
    if (v === "") return undefined;
    const x = parse(v);
    return Number.isFinite(x) ? x : undefined;
  }

  // The request's messages: the system prompt, then the conversation.
  function requestMessages(extra) {
    const out = [];
    const system = $("set-system").value.trim();
    if (system) out.push({ role: "system", content: system });
    for (const m of state.messages) if (m.content || m.role === "user") out.push({ role: m.role, content: m.content });
    if (extra) out.push(extra);
    return out;
  }

  function showError(text) {
    const e = $("chat-error");
    e.hidden = !text;
    e.textContent = text || "";
  }

  function busy(on) {
    $("send").disabled = on;
    $("stop").disabled = !on;
  }

  async function send(text) {
    showError("");
    let extra = {};
    try {
      const t = $("set-extra").value.trim();
      if (t) extra = JSON.parse(t);
    } catch (e) {
      showError("more request fields: not JSON: " + e.message);
      return;
    }
    const user = { role: "user", content: text };
    const messages = requestMessages(user);
    state.messages.push(user);
    const answer = { role: "assistant", content: "", logprobs: [] };
    state.messages.push(answer);
    save();
    renderAll();
    const node = $("messages").lastChild;
    node.classList.add("streaming");
    const body = {
      messages,
      stream: true,
      stream_options: { include_usage: true },
      temperature: num("set-temperature", parseFloat),
      top_p: num("set-top_p", parseFloat),
      top_k: num("set-top_k", (v) => parseInt(v, 10)),
      min_p: num("set-min_p", parseFloat),
      max_tokens: num("set-max_tokens", (v) => parseInt(v, 10)),
      seed: num("set-seed", (v) => parseInt(v, 10)),
      logprobs: $("set-logprobs").checked,
    };
    Object.assign(body, extra);
    controller = new AbortController();
    busy(true);
    let pending = false;
    const redraw = () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        renderContent(node._box, answer);
        const heat = node.querySelector(".heat-toggle");
        if (heat) heat.hidden = !answer.logprobs.length;
        $("messages").scrollTop = $("messages").scrollHeight;
      });
    };
    try {
      const r = await Api.call("/v1/chat/completions", {
        method: "POST",
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!r.ok) throw new Error(await Api.errorText(r));
      await Api.readEvents(r, (data) => {
        if (data === "[DONE]") return;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message || "the server failed the request");
        const choice = chunk.choices && chunk.choices[0];
        if (!choice) return;
        const d = choice.delta || {};
        if (d.content) answer.content += d.content;
        const lp = choice.logprobs && choice.logprobs.content;
        if (lp) for (const t of lp) answer.logprobs.push({ token: t.token, logprob: t.logprob });
        if (choice.finish_reason) answer.finish = choice.finish_reason;
        redraw();
      });
    } catch (e) {
      if (e.name !== "AbortError") showError(String(e.message || e));
      else answer.finish = "stopped";
    } finally {
      controller = null;
      busy(false);
      node.classList.remove("streaming");
      renderContent(node._box, answer);
      const heat = node.querySelector(".heat-toggle");
      if (heat) heat.hidden = !answer.logprobs.length;
      save();
    }
  }

  async function showPrompt() {
    const view = $("prompt-view");
    const pending = $("chat-input").value.trim();
    try {
      const r = await Api.json("/apply-template", {
        messages: requestMessages(pending ? { role: "user", content: pending } : null),
      });
      view.textContent = r.prompt + "\n\n(" + r.tokens + " tokens)";
    } catch (e) {
      view.textContent = "error: " + e.message;
    }
    view.hidden = false;
  }

  function init() {
    load();
    renderAll();
    $("chat-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = $("chat-input").value;
      if (!text.trim() || controller) return;
      $("chat-input").value = "";
      send(text);
    });
    $("chat-input").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey) {
        ev.preventDefault();
        $("chat-form").requestSubmit();
      }
    });
    $("stop").onclick = () => controller && controller.abort();
    $("new-chat").onclick = () => {
      if (controller) controller.abort();
      state.messages = [];
      save();
      renderAll();
      $("prompt-view").hidden = true;
    };
    $("show-prompt").onclick = showPrompt;
    for (const name of SETTINGS) $("set-" + name).addEventListener("change", save);
  }

  return { init };
})();
