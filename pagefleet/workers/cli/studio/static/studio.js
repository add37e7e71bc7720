// pagefleet review studio: tabs, keys, scroll sync, upload with live progress. No framework, no build.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  const $ = (sel, root) => (root || document).querySelector(sel);
  const csrf = () => document.body.dataset.csrf || "";

  function tabs() {
    const buttons = document.querySelectorAll(".tab[data-tab]");
    const show = (name) => {
      buttons.forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
      document.querySelectorAll(".tabpane[data-pane]").forEach((p) => { p.hidden = p.dataset.pane !== name; });
    };
    buttons.forEach((b) => b.addEventListener("click", () => show(b.dataset.tab)));
    if (buttons.length) show(buttons[0].dataset.tab);
    return (i) => buttons[i] && show(buttons[i].dataset.tab);
  }

  function keys(showTab) {
    document.addEventListener("keydown", (e) => {
      const t = e.target;
      if (e.ctrlKey || e.metaKey || e.altKey || (t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT"))) return;
      const click = (id) => { const el = document.getElementById(id); if (el) { el.click(); e.preventDefault(); } };
      if (e.key === "n") click("next-flagged");
      else if (e.key === "p") click("prev-flagged");
      else if (e.key === "a") click("approve");
      else if (e.key === "f") click("flag");
      else if (e.key === "ArrowRight") click("next-page");
      else if (e.key === "ArrowLeft") click("prev-page");
      else if (["1", "2", "3", "4"].includes(e.key)) showTab(Number(e.key) - 1);
    });
  }

  function syncScroll() {  // the source image and the result move together
    const a = $("#source-pane"), b = $("#result-pane");
    if (!a || !b) return;
    let busy = false;
    const follow = (from, to) => () => {
      if (busy) return;
      busy = true;
      const span = from.scrollHeight - from.clientHeight;
      to.scrollTop = span > 0 ? (from.scrollTop / span) * (to.scrollHeight - to.clientHeight) : 0;
      requestAnimationFrame(() => { busy = false; });
    };
    a.addEventListener("scroll", follow(a, b));
    b.addEventListener("scroll", follow(b, a));
  }

  function boxes() {  // point at a block of the result: its bbox is drawn over the source page
    const img = $("#source-image"), mark = $("#bbox-mark"), rendered = $("#rendered");
    if (!img || !mark || !rendered || !img.dataset.dpi) return;
    const show = (el) => {
      const box = el.dataset.bbox.split(",").map(Number);
      const scale = (Number(img.dataset.dpi) / 72) * (img.clientWidth / (img.naturalWidth || 1));
      Object.assign(mark.style, { left: img.offsetLeft + box[0] * scale + "px", top: img.offsetTop + box[1] * scale + "px",
        width: (box[2] - box[0]) * scale + "px", height: (box[3] - box[1]) * scale + "px" });
      mark.hidden = false;
    };
    rendered.addEventListener("mouseover", (e) => {
      const el = e.target.closest && e.target.closest("[data-bbox]");
      if (el && img.naturalWidth) show(el);
    });
    rendered.addEventListener("mouseleave", () => { mark.hidden = true; });
  }

  // Latin runs and numbers (Western and Arabic-Indic digits) keep their own order inside RTL lines
  const LTR_RUN = /(?:[-+\u2212](?=[0-9]))?[A-Za-z0-9\u00C0-\u024F](?:[A-Za-z0-9\u00C0-\u024F .,:;\/%@&'\u2019_+#=-]*[A-Za-z0-9\u00C0-\u024F%])?|[\u0660-\u0669\u06F0-\u06F9](?:[\u0660-\u0669\u06F0-\u06F9.,\u066B\u066C]*[\u0660-\u0669\u06F0-\u06F9])?%?/g;

  function isolatedLine(line) {  // one preview line: dir=auto, Latin/number runs in <bdi>; text nodes only
    const div = document.createElement("div");
    div.dir = "auto";
    let last = 0;
    for (const m of line.matchAll(LTR_RUN)) {
      div.append(line.slice(last, m.index));
      const bdi = document.createElement("bdi"); bdi.textContent = m[0]; div.append(bdi);
      last = m.index + m[0].length;
    }
    div.append(line.slice(last));
    if (!line) div.append("\u00a0");
    return div;
  }

  function editor() {  // the correction editor: a per-line preview, and the caret's line drawn on the source
    const area = $("#editor"), preview = $("#editor-preview");
    if (!area || !preview) return;
    const render = () => {
      const lines = area.value.split("\n");
      preview.replaceChildren(...lines.map(isolatedLine));
      const at = area.value.slice(0, area.selectionStart).split("\n").length - 1;
      if (preview.children[at]) preview.children[at].classList.add("caret-line");
    };
    const spans = (area.dataset.spans || "").split(";").filter(Boolean).map((s) => s.split(",").map(Number));
    const img = $("#source-image"), mark = $("#bbox-mark");
    const follow = () => {
      render();
      if (!img || !mark || !img.dataset.dpi || !img.naturalWidth) return;
      const pos = area.selectionStart;
      const hit = spans.find((s) => s[0] <= pos && pos <= s[1]);
      if (!hit) { mark.hidden = true; return; }
      const scale = (Number(img.dataset.dpi) / 72) * (img.clientWidth / (img.naturalWidth || 1));
      Object.assign(mark.style, { left: img.offsetLeft + hit[2] * scale + "px", top: img.offsetTop + hit[3] * scale + "px",
        width: (hit[4] - hit[2]) * scale + "px", height: (hit[5] - hit[3]) * scale + "px" });
      mark.hidden = false;
    };
    ["input", "keyup", "click", "select"].forEach((ev) => area.addEventListener(ev, follow));
    render();
  }

  function text(el, value, cls) { el.textContent = value; if (cls) el.className = cls; return el; }
  function say(status, value, cls) { status.replaceChildren(text(document.createElement("div"), value, cls)); }

  function progress(status, url) {
    const line = text(document.createElement("div"), "queued…");
    const bar = document.createElement("div"); bar.className = "bar";
    const fill = document.createElement("i"); bar.appendChild(fill);
    status.replaceChildren(line, bar);
    const tick = async () => {
      const r = await fetch(url, { headers: { Accept: "application/json" } });
      if (!r.ok) { text(line, "lost track of the upload (" + r.status + ")", "err"); return; }
      const s = await r.json();
      const pct = s.pages ? Math.round((100 * s.pages_done) / s.pages) : 0;
      fill.style.width = (s.done ? 100 : pct) + "%";
      text(line, s.filename + ": " + s.state + (s.pages ? " — " + s.pages_done + "/" + s.pages + " pages" : "") +
        (s.status ? " — " + s.status : "") + (s.error_code ? " — error " + s.error_code : "") + " (" + s.seconds + " s)");
      if (!s.done) { setTimeout(tick, 800); return; }
      if (s.url) { const a = document.createElement("a"); a.href = s.url; a.id = "upload-result"; a.textContent = "open the document →"; status.appendChild(a); }
    };
    tick();
  }

  function upload() {
    const form = $("#upload-form"), input = $("#upload-file"), status = $("#upload-status");
    if (!form) return;
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const file = input.files && input.files[0];
      if (!file) return;
      if (file.size > Number(form.dataset.cap)) { say(status, "too large: the limit is " + form.dataset.cap + " bytes", "err"); return; }
      say(status, "uploading " + file.name + "…", "");
      const r = await fetch("/upload?name=" + encodeURIComponent(file.name), {
        method: "POST", body: file, headers: { "X-CSRF-Token": csrf(), "Content-Type": "application/pdf" } });
      const body = await r.json().catch(() => ({ code: "http_" + r.status, message: r.statusText }));
      if (!r.ok) { say(status, "refused: " + body.code + " — " + body.message, "err"); return; }
      progress(status, body.progress);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    keys(tabs()); syncScroll(); upload(); boxes(); editor();
    document.documentElement.dataset.ready = "1";  // keys and tabs are live (tests wait for this)
  });
})();
