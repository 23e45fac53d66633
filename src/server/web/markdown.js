// A small markdown renderer for model answers. Model output is untrusted, so raw HTML is off:
// the renderer builds DOM nodes and puts every piece of the text in text nodes (never innerHTML),
// so markup in an answer shows as its characters. Links are kept only for http(s) and mailto.
"use strict";

const Markdown = (() => {
  const el = (tag, cls) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  };
  const text = (s) => document.createTextNode(s);

  function safeUrl(url) {
    try {
      const u = new URL(url, "http://invalid.invalid/");
      if (u.origin === "http://invalid.invalid") return null;  // relative: not from a model
      return ["http:", "https:", "mailto:"].includes(u.protocol) ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  // Inline spans: `code`, **bold**, __bold__, *italic*, _italic_, [text](url), ~~strike~~.
  function inline(s, parent) {
    let i = 0, plain = "";
    const flush = () => {
      if (plain) parent.appendChild(text(plain));
      plain = "";
    };
    while (i < s.length) {
      const c = s[i];
      if (c === "\\" && i + 1 < s.length && /[\\`*_\[\]()#>~-]/.test(s[i + 1])) {
        plain += s[i + 1];
        i += 2;
        continue;
      }
      if (c === "`") {
        let n = 1;
        while (s[i + n] === "`") n++;
        const fence = "`".repeat(n), end = s.indexOf(fence, i + n);
        if (end > i) {
          flush();
          const code = el("code");
          code.appendChild(text(s.slice(i + n, end)));
          parent.appendChild(code);
          i = end + n;
          continue;
        }
      }
      const pair = s.startsWith("**", i) ? "**" : s.startsWith("__", i) ? "__"
                 : s.startsWith("~~", i) ? "~~" : null;
      if (pair) {
        const end = s.indexOf(pair, i + 2);
        if (end > i + 2) {
          flush();
          const b = el(pair === "~~" ? "del" : "strong");
          inline(s.slice(i + 2, end), b);
          parent.appendChild(b);
          i = end + 2;
          continue;
        }
      }
      if ((c === "*" || c === "_") && s[i + 1] && s[i + 1] !== " ") {
        const end = s.indexOf(c, i + 1);
        if (end > i + 1 && s[end - 1] !== " ") {
          flush();
          const em = el("em");
          inline(s.slice(i + 1, end), em);
          parent.appendChild(em);
          i = end + 1;
          continue;
        }
      }
      if (c === "[") {
        const m = /^\[([^\]]*)\]\(([^)\s]*)\)/.exec(s.slice(i));
        const url = m && safeUrl(m[2]);
        if (m && url) {
          flush();
          const a = el("a");
          a.href = url;
          a.rel = "noopener noreferrer nofollow";
          a.target = "_blank";
          inline(m[1], a);
          parent.appendChild(a);
          i += m[0].length;
          continue;
        }
      }
      plain += c;
      i++;
    }
    flush();
  }

  // Block structure: fenced code, headings, quotes, lists, paragraphs.
  function blocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (/^\s*$/.test(line)) {
        i++;
        continue;
      }
      const fence = /^\s*(```|~~~)(.*)$/.exec(line);
      if (fence) {
        const pre = el("pre"), code = el("code"), body = [];
        const lang = fence[2].trim();
        if (lang) code.dataset.lang = lang.slice(0, 32);
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        i++;  // the closing fence (or the end)
        code.appendChild(text(body.join("\n")));
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      const h = /^(#{1,6})\s+(.*)$/.exec(line);
      if (h) {
        const e = el("h" + Math.min(h[1].length, 3));
        inline(h[2], e);
        parent.appendChild(e);
        i++;
        continue;
      }
      if (/^\s*>/.test(line)) {
        const inner = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) inner.push(lines[i++].replace(/^\s*> ?/, ""));
        const q = el("blockquote");
        blocks(inner, q);
        parent.appendChild(q);
        continue;
      }
      const item = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/;
      if (item.test(line)) {
        const ordered = /\d/.test(item.exec(line)[1]);
        const list = el(ordered ? "ol" : "ul");
        while (i < lines.length && item.test(lines[i])) {
          const m = item.exec(lines[i]);
          if (/\d/.test(m[1]) !== ordered) break;
          const li = el("li");
          inline(m[2], li);
          list.appendChild(li);
          i++;
        }
        parent.appendChild(list);
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
        parent.appendChild(el("hr"));
        i++;
        continue;
      }
      const p = el("p");
      let first = true;
      while (i < lines.length && !/^\s*$/.test(lines[i]) && !/^\s*(```|~~~|#{1,6}\s|>)/.test(lines[i]) &&
             !(item.test(lines[i]) && !first)) {
        if (!first) p.appendChild(el("br"));
        inline(lines[i], p);
        first = false;
        i++;
      }
      parent.appendChild(p);
    }
  }

  // The text rendered into a fragment of DOM nodes.
  function render(s) {
    const frag = document.createDocumentFragment();
    blocks(String(s).replace(/\r\n?/g, "\n").split("\n"), frag);
    return frag;
  }

  return { render, safeUrl };
})();
