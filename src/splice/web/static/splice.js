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
