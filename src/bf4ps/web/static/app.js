/* BF4PS: sortable tables, category filters, request polling, auto refresh (the charts are in
   charts.js, drawn with uPlot). Plain JavaScript, no dependencies; loaded with `defer` (the CSP allows no inline script). */
(function () {
  "use strict";

  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var raw = cell.getAttribute("data-sort");
    if (raw !== null && raw !== "" && !isNaN(Number(raw))) return Number(raw);
    return raw !== null ? raw : cell.textContent.trim().toLowerCase();
  }

  function sortTable(table, index, th) {
    var body = table.tBodies[0];
    if (!body) return;
    var descending = th.getAttribute("aria-sort") !== "descending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) {
      c.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      var order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return descending ? -order : order;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  function initSorting() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      if (!table.tHead) return;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
        th.addEventListener("click", function () { sortTable(table, index, th); });
      });
    });
  }

  // Tables that stack on a phone (style.css: the console's, and table.stack): each cell is
  // labelled with its column's heading, shown before the value when the rows stack.
  function labelCells() {
    document.querySelectorAll("body.ops table:not(.u-legend), table.stack").forEach(function (table) {
      if (!table.tHead || !table.tHead.rows.length) return;
      var heads = Array.prototype.map.call(table.tHead.rows[0].cells, function (th) {
        return th.textContent.trim();
      });
      Array.prototype.forEach.call(table.tBodies, function (body) {
        Array.prototype.forEach.call(body.rows, function (row) {
          Array.prototype.forEach.call(row.cells, function (td, i) {
            if (heads[i] && td.colSpan === 1) td.setAttribute("data-label", heads[i]);
          });
        });
      });
    });
  }

  function initFilters() {
    document.querySelectorAll("select[data-filter-table]").forEach(function (select) {
      var table = document.getElementById(select.getAttribute("data-filter-table"));
      if (!table) return;
      select.addEventListener("change", function () {
        var wanted = select.value;
        Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
          var show = !wanted || row.getAttribute("data-category") === wanted;
          row.classList.toggle("hidden", !show);
        });
      });
    });
  }

  function initRequest() {
    var box = document.getElementById("request");
    if (!box || box.getAttribute("data-open") !== "1") return;
    var api = box.getAttribute("data-api");
    var etaEl = document.getElementById("req-eta");
    var doneEl = document.getElementById("req-done");
    var posEl = document.getElementById("req-position");
    var statusEl = document.getElementById("req-status");
    function at(el, name) {
      var v = el && el.getAttribute(name);
      return v ? Date.parse(v) : null;
    }
    var idleEl = document.getElementById("req-idle");
    var target = at(etaEl, "data-at"), doneAt = at(doneEl, "data-at"), sent = etaEl ? etaEl.getAttribute("data-sent") : null;
    var serving = box.getAttribute("data-serving") !== "0";
    var served = at(etaEl, "data-now"), skew = served ? served - Date.now() : 0;

    function countdown(el, when, none) {
      if (!el) return;
      if (when === null || isNaN(when)) { el.textContent = none; return; }
      var left = Math.round((when - (Date.now() + skew)) / 1000);
      el.textContent = left > 0 ? "in ~" + left + " s" : "any moment";
    }

    function tick() {
      if (idleEl) idleEl.hidden = serving;
      // nothing moves while no interactive collector is online: no countdowns then
      if (sent) { if (etaEl) etaEl.textContent = "sent " + sent.substring(11, 19) + " UTC"; }
      else if (!serving) { if (etaEl) etaEl.textContent = "no collector online"; }
      else countdown(etaEl, target, "under way");
      if (serving) countdown(doneEl, doneAt, "–");
      else if (doneEl) doneEl.textContent = "–";
    }

    var STEPS = { lookup: "find the soldier on Battlelog", detailed: "detailed stats",
                  profile: "profile", weapons: "weapons", vehicles: "vehicles" };
    var WORDS = { pending: "waiting", claimed: "next", running: "collecting now" };
    function word(r) {
      var w = r.job_status ? (WORDS[r.job_status] || r.job_status) : (r.state_status === "current" ? "done" : "–");
      return r.attempts > 1 ? w + " (attempt " + r.attempts + ")" : w;
    }
    // a look-up's chain grows once the soldier is found: one row per step, added as they come
    function showSteps(resources) {
      var body = document.querySelector("#req-resources tbody");
      if (!body) return;
      resources.forEach(function (r) {
        var row = body.querySelector('tr[data-resource="' + r.resource + '"]');
        if (!row) {
          row = document.createElement("tr");
          row.setAttribute("data-resource", r.resource);
          ["name", "job", "when", "muted note"].forEach(function (c) {
            var td = document.createElement("td");
            td.className = c;
            row.appendChild(td);
          });
          row.cells[0].textContent = STEPS[r.resource] || r.resource;
          body.appendChild(row);
        }
        row.cells[1].textContent = word(r);
        row.cells[2].textContent = r.last_success_at ? r.last_success_at.substring(0, 19).replace("T", " ") + " UTC" : "–";
        row.cells[3].textContent = r.job_error_class ? "retrying after a " + r.job_error_class + " error" : "";
      });
    }

    function poll() {
      fetch(api, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (d) {
          if (!d) return;
          if (d.status !== box.getAttribute("data-status") && ["done", "failed", "not_found"].indexOf(d.status) >= 0) {
            window.location.reload();
            return;
          }
          if (statusEl) statusEl.textContent = d.status.replace("_", " ");
          if (posEl) posEl.textContent = d.position === null ? "–" : String(d.position);
          if (d.now) skew = Date.parse(d.now) - Date.now();
          target = d.estimated_start_at ? Date.parse(d.estimated_start_at) : null;
          doneAt = d.estimated_done_at ? Date.parse(d.estimated_done_at) : null;
          sent = d.first_request_at || null;
          serving = d.collector_serving !== false;
          showSteps(d.resources || []);
          tick();
        })
        .catch(function () { /* keep polling */ });
    }
    tick();
    setInterval(tick, 1000);
    setInterval(poll, 2000);
  }

  function initAutoRefresh() {
    var node = document.querySelector("[data-autorefresh]");
    if (!node) return;
    var seconds = Number(node.getAttribute("data-autorefresh"));
    if (seconds > 0) setTimeout(function () { window.location.reload(); }, seconds * 1000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    initSorting();
    labelCells();
    initFilters();
    initRequest();
    initAutoRefresh();
  });
})();
