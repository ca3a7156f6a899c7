// The report's viewer: filters the results table (and each attempt's section)
// by task, outcome, stop reason and free text. It only reads the page and sets
// `hidden` and textContent: it never builds markup, so the hostile text the page
// holds stays text. It runs under the page's CSP by its hash.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const table = $('results');
  const filters = $('filters'), q = $('q'), task = $('f-task'), outcome = $('f-outcome'), reason = $('f-reason'), shown = $('shown');
  if (!table || !filters || !q || !task || !outcome || !reason || !shown) return;
  const rows = Array.from(table.tBodies[0].rows);
  const keys = rows.map((r) => (r.textContent + ' ' + (r.dataset.reason || '') + ' ' + (r.dataset.title || '')).toLowerCase());
  const sections = rows.map((r) => document.getElementById(r.dataset.id || ''));
  const taskRows = Array.from(document.querySelectorAll('#tasks tbody tr'));
  const apply = () => {
    const words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    let n = 0;
    rows.forEach((r, i) => {
      const ok = (!task.value || r.dataset.task === task.value) &&
        (!outcome.value || r.dataset.outcome === outcome.value) &&
        (!reason.value || r.dataset.reason === reason.value) &&
        words.every((w) => keys[i].includes(w));
      r.hidden = !ok;
      if (sections[i]) sections[i].hidden = !ok;
      if (ok) n++;
    });
    const tasks = new Set(rows.filter((r) => !r.hidden).map((r) => r.dataset.task));
    taskRows.forEach((r) => { r.hidden = !tasks.has(r.dataset.task); });
    shown.textContent = n + ' of ' + rows.length + ' attempts shown';
  };
  for (const el of [q, task, outcome, reason]) {
    el.addEventListener('input', apply);
    el.addEventListener('change', apply);
  }
  const reset = $('reset');
  if (reset) {
    reset.addEventListener('click', () => {
      q.value = task.value = outcome.value = reason.value = '';
      apply();
    });
  }
  filters.hidden = false;
  apply();
  document.documentElement.dataset.viewer = 'ready';
})();
