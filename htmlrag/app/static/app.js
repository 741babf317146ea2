// htmlrag serve: the little JavaScript the pages use (progress polling, evidence selection, small toggles).
"use strict";

function pollJob() {
  const box = document.getElementById("job");
  if (!box || !["queued", "running"].includes(box.dataset.status)) return;
  const id = box.dataset.job;
  const tick = async () => {
    let job;
    try {
      const r = await fetch(`/api/jobs/${encodeURIComponent(id)}`, {headers: {Accept: "application/json"}});
      if (!r.ok) return;
      job = await r.json();
    } catch (e) { setTimeout(tick, 2000); return; }
    document.getElementById("job-bar").value = job.progress;
    document.getElementById("job-status").textContent = job.status;
    document.getElementById("job-message").textContent = job.message;
    document.getElementById("job-steps").textContent = `${job.done} of ${job.total}`;
    box.dataset.status = job.status;
    if (job.status === "done" || job.status === "failed") {
      window.location.replace(`/documents?job=${encodeURIComponent(id)}`);
    } else {
      setTimeout(tick, 1000);
    }
  };
  setTimeout(tick, 500);
}

// Scroll the viewer (not the page) so that the first highlighted region of the shown evidence is in sight.
function showHighlight() {
  const viewer = document.getElementById("viewer");
  const view = viewer && viewer.querySelector(".view:not([hidden])");
  const hl = view && view.querySelector(".hl");
  if (!hl) return;
  const top = hl.getBoundingClientRect().top - viewer.getBoundingClientRect().top + viewer.scrollTop;
  viewer.scrollTop = Math.max(0, top - viewer.clientHeight / 3);
}

function evidenceSelection() {
  const items = document.querySelectorAll("li.ev");
  const select = (i) => {
    items.forEach((li) => li.classList.toggle("selected", li.dataset.ev === i));
    document.querySelectorAll(".view").forEach((v) => { v.hidden = v.dataset.view !== i; });
    showHighlight();
  };
  document.querySelectorAll(".page-img img").forEach((img) => img.addEventListener("load", () => {
    if (!img.closest(".view").hidden) showHighlight();
  }));
  items.forEach((li) => {
    li.addEventListener("click", () => select(li.dataset.ev));
    li.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(li.dataset.ev); } });
  });
}

function cypherToggle() {
  const sel = document.getElementById("retriever");
  const box = document.getElementById("cypher-box");
  if (!sel || !box) return;
  const update = () => { box.hidden = sel.value !== "cypher"; };
  sel.addEventListener("change", update);
  update();
}

function budgetSlider() {
  const r = document.getElementById("budget");
  const out = document.getElementById("budget-out");
  if (!r || !out || r.type !== "range") return;
  r.addEventListener("input", () => { out.textContent = r.value; });
}

function keptOnly() {
  const cb = document.getElementById("kept-only");
  const table = document.getElementById("block-tree");
  if (!cb || !table) return;
  cb.addEventListener("change", () => table.classList.toggle("kept-only", cb.checked));
}

// Ask before removing a document (the form works without script too).
function confirmRemoval() {
  document.querySelectorAll("form.delete-form").forEach((f) => f.addEventListener("submit", (e) => {
    if (!window.confirm(`Remove ${f.dataset.name}? Its graph nodes, index entries and files are deleted.`)) {
      e.preventDefault(); e.stopImmediatePropagation();
    }
  }));
}

function busyButtons() {
  document.querySelectorAll("form").forEach((f) => f.addEventListener("submit", (e) => {
    if (e.defaultPrevented) return;
    const b = f.querySelector("button[type=submit]");
    if (b) { b.disabled = true; b.textContent = "Working…"; }
  }));
}

document.addEventListener("DOMContentLoaded", () => {
  pollJob(); evidenceSelection(); cypherToggle(); budgetSlider(); keptOnly(); confirmRemoval(); busyButtons();
});
