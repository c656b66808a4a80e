// Live tabs: fetch this URL's <main> again every few seconds (same origin, same credentials) and swap it in.
"use strict";
(function () {
  const main = document.getElementById("main");
  const every = main && Number(main.dataset.live);
  if (!every) return;
  async function refresh() {
    try {
      const answer = await fetch(location.pathname, { headers: { "X-Page-Part": "main" }, credentials: "same-origin" });
      if (answer.ok) main.innerHTML = await answer.text();
    } catch (e) {
      // the gateway restarting: try again on the next tick
    }
    setTimeout(refresh, every);
  }
  setTimeout(refresh, every);
})();
