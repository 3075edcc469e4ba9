// Pan and zoom for a drawing inside [data-panzoom] (the whole graph): the wheel zooms around
// the pointer, a drag moves, the buttons zoom in, out and back to the whole drawing; with the
// drawing focused, + and - zoom and the arrows move. It changes the SVG's viewBox only, so the
// text stays sharp at any zoom. No dependencies.
(() => {
  for (const box of document.querySelectorAll("[data-panzoom]")) {
    const svg = box.querySelector("svg");
    if (!svg) continue;
    const view = box.querySelector(".panzoom-view") || box;
    const full = svg.viewBox.baseVal;
    const home = { x: full.x, y: full.y, w: full.width, h: full.height };
    let vb = { ...home };
    const apply = () => {
      svg.setAttribute("viewBox", `${vb.x} ${vb.y} ${vb.w} ${vb.h}`);
      box.setAttribute("data-zoom-level", (home.w / vb.w).toFixed(2));
    };
    const zoom = (factor, cx, cy) => {
      const w = Math.min(home.w * 4, Math.max(home.w / 40, vb.w / factor));
      const h = vb.h * (w / vb.w);
      const px = cx === undefined ? 0.5 : cx, py = cy === undefined ? 0.5 : cy;
      vb = { x: vb.x + (vb.w - w) * px, y: vb.y + (vb.h - h) * py, w, h };
      apply();
    };
    const pan = (dx, dy) => { vb.x += dx * vb.w; vb.y += dy * vb.h; apply(); };
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    // as tall as the drawing needs at the view's width, at most most of the window
    const fit = () => {
      const natural = view.clientWidth * (home.h / home.w);
      svg.style.height = `${Math.round(Math.max(200, Math.min(window.innerHeight * 0.7, natural)))}px`;
    };
    fit();
    window.addEventListener("resize", fit);
    svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = svg.getBoundingClientRect();
      zoom(ev.deltaY < 0 ? 1.2 : 1 / 1.2, (ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height);
    }, { passive: false });
    let drag = null, moved = false;
    svg.addEventListener("pointerdown", (ev) => {
      drag = { x: ev.clientX, y: ev.clientY, vb: { ...vb } };
      moved = false;
    });
    window.addEventListener("pointermove", (ev) => {
      if (!drag) return;
      const r = svg.getBoundingClientRect();
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
      if (!moved) return;
      const scale = Math.max(vb.w / r.width, vb.h / r.height);
      vb = { ...drag.vb, x: drag.vb.x - dx * scale, y: drag.vb.y - dy * scale };
      apply();
    });
    window.addEventListener("pointerup", () => { drag = null; });
    // a drag is not a click on the node under the pointer
    svg.addEventListener("click", (ev) => { if (moved) { ev.preventDefault(); moved = false; } }, true);
    for (const b of box.querySelectorAll("[data-zoom]")) {
      b.addEventListener("click", () => {
        const what = b.getAttribute("data-zoom");
        if (what === "in") zoom(1.25);
        else if (what === "out") zoom(1 / 1.25);
        else { vb = { ...home }; apply(); }
      });
    }
    view.addEventListener("keydown", (ev) => {
      const step = 0.1;
      const keys = {
        "+": () => zoom(1.25), "=": () => zoom(1.25), "-": () => zoom(1 / 1.25),
        ArrowLeft: () => pan(-step, 0), ArrowRight: () => pan(step, 0),
        ArrowUp: () => pan(0, -step), ArrowDown: () => pan(0, step), "0": () => { vb = { ...home }; apply(); },
      };
      if (keys[ev.key] && ev.target === view) { ev.preventDefault(); keys[ev.key](); }
    });
    apply();
  }
})();
