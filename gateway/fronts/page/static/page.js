// Live tabs: fetch this URL's <main> again every few seconds and patch the differences into the page in place,
// so what the reader is on stays put: focus, text selection, form input, scroll position (rows that arrive above
// the first one in view do not push it down). New rows are marked and announced; the header says when the page
// was last updated, when updates fail (signed out, gateway gone), and offers a pause.
"use strict";
(function () {
  const main = document.getElementById("main");
  const every = main && Number(main.dataset.live);
  if (!every) return;
  const status = document.getElementById("live-status");
  const pause = document.getElementById("pause");
  const announce = document.getElementById("announce");
  let paused = false, failing = null, timer = null, updated = null;

  const keyOf = (node) => node.nodeType !== 1 ? null :
    (node.id || node.dataset.call || node.dataset.server || node.dataset.tool || node.dataset.run ||
     node.dataset.step || node.dataset.capture || node.dataset.workflow || null);

  function same(a, b) {
    return a.nodeType === b.nodeType && a.nodeName === b.nodeName && keyOf(a) === keyOf(b);
  }

  // Make `old`'s children those of `fresh`, keeping every node that is still there (matched by tag and key).
  function patch(old, fresh, added) {
    if (old.nodeType === 1 && old.hasAttribute("data-keep")) return; // the reader's own input (the filters)
    const next = Array.from(fresh.childNodes);
    let cursor = old.firstChild;
    for (const node of next) {
      let match = cursor;
      while (match && !same(match, node)) match = match.nextSibling;
      if (match && keyOf(node) === null && match !== cursor) match = null; // unkeyed: only in place
      if (!match) {
        const inserted = node.cloneNode(true);
        old.insertBefore(inserted, cursor);
        if (inserted.nodeType === 1 && inserted.dataset.call) added.push(inserted);
        continue;
      }
      while (cursor && cursor !== match) { const gone = cursor; cursor = cursor.nextSibling; gone.remove(); }
      if (node.nodeType === 3 || node.nodeType === 8) {
        if (match.nodeValue !== node.nodeValue) match.nodeValue = node.nodeValue;
      } else {
        for (const a of Array.from(match.attributes)) {
          if (a.name === "open" && match.nodeName === "DETAILS") continue; // the reader opened it: stays open
          if (!node.hasAttribute(a.name)) match.removeAttribute(a.name);
        }
        for (const a of Array.from(node.attributes)) if (match.getAttribute(a.name) !== a.value) match.setAttribute(a.name, a.value);
        patch(match, node, added);
      }
      cursor = match.nextSibling;
    }
    while (cursor) { const gone = cursor; cursor = cursor.nextSibling; gone.remove(); }
  }

  function anchor() { // the first keyed element in view, to keep where it is on screen
    for (const row of main.querySelectorAll("[data-call], [data-server], [data-tool], tr, h2")) {
      const top = row.getBoundingClientRect().top;
      if (top >= 0) return [row, top];
    }
    return [null, 0];
  }

  function say(text, bad) {
    status.textContent = text;
    status.classList.toggle("stale", Boolean(bad));
  }

  const clock = () => new Date().toLocaleTimeString([], { hour12: false });

  async function refresh() {
    timer = null;
    try {
      const answer = await fetch(location.pathname + location.search,
        { headers: { "X-Page-Part": "main" }, credentials: "same-origin", redirect: "manual" });
      if (!answer.ok) {
        const why = answer.status === 401 || answer.type === "opaqueredirect"
          ? "signed out: sign in again" : `the gateway answered ${answer.status}`;
        throw new Error(why);
      }
      const text = await answer.text();
      if (paused) return; // paused while this was under way: the page stays as the reader holds it
      const fresh = document.createElement("main");
      fresh.innerHTML = text;
      const [row, top] = anchor();
      const added = [];
      patch(main, fresh, added);
      if (row && row.isConnected && window.scrollY > 0) window.scrollBy(0, row.getBoundingClientRect().top - top);
      for (const node of added) node.classList.add("new");
      if (added.length) announce.textContent = `${added.length} new call${added.length > 1 ? "s" : ""}`;
      failing = null;
      updated = clock();
      say(`Updated ${updated}`, false);
    } catch (e) {
      failing = failing || clock();
      const why = e instanceof TypeError ? "the gateway is not answering" : e.message;
      say(`Not updating since ${failing}: ${why}`, true);
    }
    if (!paused) timer = setTimeout(refresh, every);
  }

  pause.addEventListener("click", function () {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume" : "Pause";
    if (paused) { clearTimeout(timer); timer = null; say(`Paused; updated ${updated}`, false); }
    else refresh();
  });
  if (main.dataset.stream && window.EventSource) { // the Calls tab: told at once when a call arrives
    const source = new EventSource(main.dataset.stream);
    const live = document.getElementById("live");
    source.addEventListener("open", function () { live.dataset.stream = "open"; });
    source.addEventListener("error", function () { live.dataset.stream = "closed"; });
    source.addEventListener("calls", function () {
      if (timer) { clearTimeout(timer); refresh(); } // not while paused, nor while a refresh is under way
    });
  }
  updated = clock();
  say(`Updated ${updated}`, false);
  timer = setTimeout(refresh, every);
})();
