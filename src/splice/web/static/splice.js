// Splice's page script: small, no dependencies. Forms that can take long show progress
// (data-busy="text"); filter boxes narrow a list (data-filter="#list-id"); a picker
// (select[data-autosubmit]) submits its form when changed.
document.addEventListener("submit", (ev) => {
  const form = ev.target;
  const busy = form.getAttribute("data-busy");
  if (!busy) return;
  for (const b of form.querySelectorAll("button")) { b.disabled = true; }
  const out = form.querySelector("[role=status]") || form.appendChild(document.createElement("p"));
  out.setAttribute("role", "status");
  out.textContent = busy;
});
document.addEventListener("input", (ev) => {
  const box = ev.target;
  const sel = box.getAttribute && box.getAttribute("data-filter");
  if (!sel) return;
  const q = box.value.trim().toLowerCase();
  for (const li of document.querySelectorAll(sel + " > li")) {
    li.hidden = q !== "" && !li.textContent.toLowerCase().includes(q);
  }
});
document.addEventListener("change", (ev) => {
  const sel = ev.target;
  if (sel.matches && sel.matches("select[data-autosubmit]") && sel.form) sel.form.requestSubmit();
});
// A list (or a progress view) that refreshes itself while something in it runs: the server
// puts data-poll="URL" on it; the fragment fetched from URL replaces it, and the polling stops
// when the fragment comes back without data-poll (nothing runs any more) or the server answers
// something else than the fragment (signed out, an error).
function splicePoll(el) {
  const url = el.getAttribute("data-poll");
  if (!url) return;
  const ms = parseInt(el.getAttribute("data-poll-ms") || "2000", 10);
  setTimeout(async () => {
    let fresh = null;
    try {
      const r = await fetch(url, { credentials: "same-origin", headers: { "X-Splice-Partial": "1" } });
      if (r.ok && !r.redirected) {
        const t = document.createElement("template");
        t.innerHTML = (await r.text()).trim();
        fresh = t.content.firstElementChild;
      }
    } catch (e) {
      fresh = el; // the server did not answer: try again later
    }
    if (!fresh || fresh.id !== el.id) return;
    if (fresh !== el) {
      el.replaceWith(fresh);
      const goto = fresh.getAttribute("data-done-url");
      if (goto && !fresh.getAttribute("data-poll")) { window.location.assign(goto); return; }
    }
    splicePoll(fresh);
  }, ms);
}
document.addEventListener("DOMContentLoaded", () => {
  for (const el of document.querySelectorAll("[data-poll]")) splicePoll(el);
});
