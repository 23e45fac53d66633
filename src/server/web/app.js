// The page's start: the tabs (kept in the address's #fragment), the API key dialog, and the
// chat and operations views.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  function show(view) {
    if (!["chat", "ops", "model"].includes(view)) view = "chat";
    for (const tab of document.querySelectorAll(".tab")) {
      const on = tab.dataset.view === view;
      tab.classList.toggle("active", on);
      tab.setAttribute("aria-selected", String(on));
      $("view-" + tab.dataset.view).classList.toggle("active", on);
    }
    if (location.hash !== "#" + view) history.replaceState(null, "", "#" + view);
    if (view === "ops") Ops.drawPlots();
  }

  for (const tab of document.querySelectorAll(".tab")) tab.onclick = () => show(tab.dataset.view);
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));

  const dialog = $("key-dialog");
  $("key-button").onclick = () => Api.askKey().catch(() => {});
  $("key-form").addEventListener("submit", () => {
    // method="dialog": the dialog closes itself; the button pressed is its returnValue.
  });
  dialog.addEventListener("close", () => {
    const key = $("key-input").value.trim();
    $("key-input").value = "";
    Api.setKey(dialog.returnValue === "save" && key ? key : Api.hasKey() ? localStorage.getItem("forge.apiKey") : "");
  });

  Chat.init();
  Ops.init();
  show(location.hash.slice(1));
})();
