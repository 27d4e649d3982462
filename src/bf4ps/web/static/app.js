/* BF4PS: sortable tables, category filters, the history chart, request polling, auto refresh.
   Plain JavaScript, no dependencies; loaded with `defer` (the CSP allows no inline script). */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

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

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function fmt(v) {
    if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString();
    return (Math.round(v * 100) / 100).toString();
  }

  function drawChart(box, points, metric) {
    var data = points.map(function (p) { return { t: Date.parse(p.fetched_at), v: p[metric] }; })
      .filter(function (p) { return p.v !== null && p.v !== undefined && !isNaN(p.t); });
    while (box.firstChild) box.removeChild(box.firstChild);
    if (!data.length) {
      var msg = document.createElement("p");
      msg.className = "muted";
      msg.textContent = "No values of this metric yet.";
      box.appendChild(msg);
      return;
    }
    var W = Math.max(300, Math.round(box.clientWidth)) || 900, H = 280, L = 70, R = 20, T = 16, B = 34;
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "history of " + metric }, box);
    var tMin = data[0].t, tMax = data[data.length - 1].t;
    var vMin = Math.min.apply(null, data.map(function (p) { return p.v; }));
    var vMax = Math.max.apply(null, data.map(function (p) { return p.v; }));
    if (vMin === vMax) { vMin -= Math.abs(vMin) * 0.05 || 1; vMax += Math.abs(vMax) * 0.05 || 1; }
    if (tMin === tMax) { tMin -= 43200000; tMax += 43200000; }
    function x(t) { return L + (t - tMin) / (tMax - tMin) * (W - L - R); }
    function y(v) { return T + (1 - (v - vMin) / (vMax - vMin)) * (H - T - B); }
    for (var i = 0; i <= 4; i++) {
      var v = vMin + (vMax - vMin) * i / 4;
      el("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), "class": "grid" }, svg);
      el("text", { x: L - 8, y: y(v) + 4, "text-anchor": "end" }, svg).textContent = fmt(v);
    }
    el("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, "class": "axis" }, svg);
    [tMin, tMax].forEach(function (t, k) {
      el("text", { x: k ? W - R : L, y: H - 10, "text-anchor": k ? "end" : "start" }, svg)
        .textContent = new Date(t).toISOString().slice(0, 10);
    });
    var path = data.map(function (p, k) { return (k ? "L" : "M") + x(p.t).toFixed(1) + " " + y(p.v).toFixed(1); }).join(" ");
    if (data.length > 1) {
      el("path", { d: path + " L" + x(data[data.length - 1].t).toFixed(1) + " " + (H - B) +
                      " L" + x(data[0].t).toFixed(1) + " " + (H - B) + " Z", "class": "area" }, svg);
      el("path", { d: path, "class": "line" }, svg);
    }
    data.forEach(function (p) {
      var dot = el("circle", { cx: x(p.t), cy: y(p.v), r: 3.5, "class": "point" }, svg);
      el("title", {}, dot).textContent = new Date(p.t).toISOString().slice(0, 16).replace("T", " ") + ": " + fmt(p.v);
    });
  }

  function initChart() {
    var box = document.getElementById("history-chart");
    if (!box) return;
    var points;
    try { points = JSON.parse(box.getAttribute("data-points") || "[]"); } catch (e) { return; }
    if (!points.length) return;
    var buttons = document.querySelectorAll("#chart-metrics button");
    buttons.forEach(function (b) {
      b.addEventListener("click", function () {
        buttons.forEach(function (o) { o.classList.toggle("active", o === b); });
        drawChart(box, points, b.getAttribute("data-metric"));
      });
    });
    function current() {
      var active = document.querySelector("#chart-metrics button.active") || buttons[0];
      return active ? active.getAttribute("data-metric") : "kd";
    }
    drawChart(box, points, current());
    var width = box.clientWidth, pending = null;
    window.addEventListener("resize", function () {  // drawn at the box's own pixel width
      if (pending !== null || box.clientWidth === width) return;
      pending = setTimeout(function () {
        pending = null;
        width = box.clientWidth;
        drawChart(box, points, current());
      }, 150);
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
          (d.resources || []).forEach(function (r) {
            var row = document.querySelector('#req-resources tr[data-resource="' + r.resource + '"] td.job');
            if (row) row.textContent = r.job_status || (r.state_status === "current" ? "done" : "–");
          });
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
    initFilters();
    initChart();
    initRequest();
    initAutoRefresh();
  });
})();
