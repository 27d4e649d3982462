/* BF4PS charts: the soldier's history and per-weapon / per-vehicle history, drawn with uPlot
   (vendored in /static/vendor/uplot). One point per collection, a real time axis (local time),
   rounded ticks, a legend with the values under the cursor and a tooltip. */
(function () {
  "use strict";
  var ACCENT = "#f5a524", MUTED = "#8b9bab", GRID = "#2a3846";

  function compact(v) {
    if (v === null || v === undefined || isNaN(v)) return "–";
    var a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 1 : 2).replace(/\.0+$/, "") + " B";
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 1 : 2).replace(/\.0+$/, "") + " M";
    if (a >= 1e4) return (v / 1e3).toFixed(a >= 1e5 ? 0 : 1).replace(/\.0$/, "") + " k";
    if (a >= 100) return String(Math.round(v));
    return String(Math.round(v * 100) / 100);
  }

  /* y ticks: compact, with as many decimals as the tick step needs (0.005 apart: 1.205,
     1.210, never "1.21, 1.21") */
  function ticks(u, splits) {
    var step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : 1;
    var digits = step >= 1 || step === 0 ? 0 : Math.min(4, Math.ceil(-Math.log10(step) - 1e-9));
    return splits.map(function (v) {
      return Math.abs(v) >= 1e4 || digits === 0 ? compact(v) : v.toFixed(digits);
    });
  }

  function stamp(t) {
    var d = new Date(t * 1000);
    return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric",
                                        hour: "2-digit", minute: "2-digit" });
  }

  function tooltipPlugin(label) {
    var tip;
    return { hooks: {
      init: function (u) {
        tip = document.createElement("div");
        tip.className = "chart-tip";
        tip.hidden = true;
        u.over.appendChild(tip);
      },
      setCursor: function (u) {
        var i = u.cursor.idx;
        if (i === null || i === undefined || u.data[1][i] === null || u.data[1][i] === undefined) {
          tip.hidden = true;
          return;
        }
        tip.hidden = false;
        tip.textContent = stamp(u.data[0][i]) + " · " + label() + " " + compact(u.data[1][i]);
        var x = u.valToPos(u.data[0][i], "x"), y = u.valToPos(u.data[1][i], "y");
        tip.style.left = Math.min(x + 10, u.over.clientWidth - tip.offsetWidth - 4) + "px";
        tip.style.top = Math.max(y - 34, 0) + "px";
      }
    } };
  }

  /* the y range: the data's, widened to at least the metric's minimum span (data-min-span on
     its button) around the data's middle, never below 0 for a metric that never is; so noise
     (a K/D moving by 0.0001) stays flat instead of filling the chart */
  function yRange(ys, minSpan) {
    var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys);
    if (!(minSpan > 0) || hi - lo >= minSpan) return null;
    var mid = (lo + hi) / 2, a = mid - minSpan / 2, b = mid + minSpan / 2;
    if (lo >= 0 && a < 0) { b -= a; a = 0; }
    return [a, b];
  }

  function draw(box, t, values, label, minSpan) {
    while (box.firstChild) box.removeChild(box.firstChild);
    var xs = [], ys = [];
    for (var i = 0; i < t.length; i++) {
      if (values[i] !== null && values[i] !== undefined) { xs.push(t[i]); ys.push(values[i]); }
    }
    if (!xs.length) {
      var msg = document.createElement("p");
      msg.className = "muted";
      msg.textContent = "No values of this metric yet.";
      box.appendChild(msg);
      return null;
    }
    var lo = xs[0], hi = xs[xs.length - 1];
    if (hi - lo < 3600) { lo -= 1800; hi += 1800; }  // one point: an hour around it
    var width = Math.max(280, box.clientWidth || 600), yr = yRange(ys, minSpan);
    box.setAttribute("data-y-range", yr ? yr.join(",") : "");
    var opts = {
      width: width, height: width < 500 ? 220 : 280,
      legend: { show: true, live: true },
      cursor: { points: { size: 9 } },
      scales: { x: { time: true, range: function () { return [lo, hi]; } },
                y: yr ? { range: function () { return yr; } } : {} },
      axes: [
        { stroke: MUTED, grid: { stroke: GRID, width: 1 }, ticks: { stroke: GRID }, space: 70 },
        { stroke: MUTED, grid: { stroke: GRID, width: 1 }, ticks: { stroke: GRID }, size: 60,
          values: ticks }
      ],
      series: [
        { value: function (u, v) { return v === null ? "–" : stamp(v); } },
        { label: label, stroke: ACCENT, width: 2.5, fill: "rgba(245, 165, 36, 0.10)",
          points: { show: true, size: 7, fill: ACCENT },
          value: function (u, v) { return compact(v); } }
      ],
      plugins: [tooltipPlugin(function () { return label; })]
    };
    return new uPlot(opts, [xs, ys], box);
  }

  function metricButtons(group, onPick) {
    var buttons = group ? group.querySelectorAll("button") : [];
    buttons.forEach(function (b) {
      b.addEventListener("click", function () {
        buttons.forEach(function (o) { o.classList.toggle("active", o === b); });
        onPick();
      });
    });
    return function () {
      var active = group && group.querySelector("button.active");
      return active ? [active.getAttribute("data-metric"), active.textContent.trim(),
                       Number(active.getAttribute("data-min-span")) || 0] : null;
    };
  }

  function onResize(box, redraw) {
    var width = box.clientWidth, pending = null;
    window.addEventListener("resize", function () {
      if (pending !== null || box.clientWidth === width) return;
      pending = setTimeout(function () { pending = null; width = box.clientWidth; redraw(); }, 150);
    });
  }

  function initHistory() {
    var box = document.getElementById("history-chart");
    if (!box || typeof uPlot === "undefined") return;
    var points;
    try { points = JSON.parse(box.getAttribute("data-points") || "[]"); } catch (e) { return; }
    if (!points.length) return;
    var t = points.map(function (p) { return Math.round(Date.parse(p.fetched_at) / 1000); });
    var current = metricButtons(document.getElementById("chart-metrics"), redraw);
    function redraw() {
      var m = current() || ["kd", "K/D", 0];
      draw(box, t, points.map(function (p) { return p[m[0]]; }), m[1], m[2]);
    }
    redraw();
    onResize(box, redraw);
  }

  function initItems(prefix) {
    var box = document.getElementById(prefix + "-chart");
    if (!box || typeof uPlot === "undefined") return;
    var items;
    try { items = JSON.parse(box.getAttribute("data-items") || "[]"); } catch (e) { return; }
    if (!items.length) return;
    var select = document.getElementById(prefix + "-item");
    var current = metricButtons(document.getElementById(prefix + "-metrics"), redraw);
    function redraw() {
      var item = items[select ? Number(select.value) || 0 : 0];
      var m = current() || ["kills", "Kills", 0];
      draw(box, item.t, item[m[0]], m[1], m[2]);
    }
    if (select) select.addEventListener("change", redraw);
    redraw();
    onResize(box, redraw);
  }

  document.addEventListener("DOMContentLoaded", function () {
    initHistory();
    initItems("weapon-history");
    initItems("vehicle-history");
  });
})();
