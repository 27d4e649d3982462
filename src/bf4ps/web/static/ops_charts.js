/* The operator console's fleet-history charts (uPlot, vendored): coverage per resource with the
   projected completion, requests per egress against its pacing limit, backlog age per class.
   Data: the page's <script type="application/json" id="ops-history">. Each chart is as wide
   as its card (phone widths included) and is redrawn at the new width on resize. */
(function () {
  "use strict";
  var COLORS = ["#2f6fde", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c",
                "#5c940d"];

  function color(i) { return COLORS[i % COLORS.length]; }

  function merge(times, extra) {
    /* x values: the records' times plus the projections' (sorted, unique) */
    var all = times.concat(extra).sort(function (a, b) { return a - b; });
    return all.filter(function (t, i) { return i === 0 || t !== all[i - 1]; });
  }

  function align(xs, times, values) {
    var at = {};
    times.forEach(function (t, i) { at[t] = values[i]; });
    return xs.map(function (t) { return t in at ? at[t] : null; });
  }

  function coverageChart(h) {
    var now = h.times.length ? h.times[h.times.length - 1] : Date.now() / 1000;
    var ends = h.projections.filter(function (p) { return p.completes_at; });
    var xs = merge(h.times, ends.map(function (p) { return p.completes_at; }));
    var data = [xs], series = [{}];
    Object.keys(h.coverage).forEach(function (res, i) {
      data.push(align(xs, h.times, h.coverage[res]));
      series.push({label: res + " %", stroke: color(i), width: 2});
    });
    ends.forEach(function (p) {
      var i = Object.keys(h.coverage).indexOf(p.resource);
      data.push(align(xs, [now, p.completes_at], [p.share_now, 100]));
      series.push({label: p.resource + " projected", stroke: color(i), dash: [6, 4],
                   width: 1.5, spanGaps: true});
    });
    return {data: data, series: series, y: "attempted %"};
  }

  function byKey(h, group, y, lines) {
    /* a chart over the records' times: for each key of h[group], the lines lines(key) gives
       ([values, label, style], ...), drawn in that key's colour */
    var data = [h.times], series = [{}];
    Object.keys(h[group]).forEach(function (k, i) {
      lines(k).forEach(function (line) {
        data.push(line[0]);
        series.push(Object.assign({label: line[1], stroke: color(i)}, line[2]));
      });
    });
    return {data: data, series: series, y: y};
  }

  function requestsChart(h) {
    return byKey(h, "requests", "requests/h", function (eg) {
      return [[h.requests[eg], eg + " /h", {width: 2}],
              [h.limits[eg], eg + " limit", {dash: [4, 4], width: 1}]];
    });
  }

  function backlogChart(h) {
    return byKey(h, "backlog", "seconds", function (k) {
      return [[h.backlog[k], k + " s", {width: 2}]];
    });
  }

  function axis(extra) {
    /* axes and grid in the page's own text colour (the canvas does not inherit it) */
    var ink = window.getComputedStyle(document.body).color || "#888";
    var out = {stroke: ink, grid: {stroke: "rgba(128,128,128,0.25)"},
               ticks: {stroke: "rgba(128,128,128,0.4)"}};
    Object.keys(extra).forEach(function (k) { out[k] = extra[k]; });
    return out;
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  /* x ticks as HH:MM (the date under the first tick and on a new day), at least 80 px apart,
     so that they never overlap at any width; y ticks compact (12 k, 1.5 M) */
  function timeTicks(u, splits) {
    var day = null;
    return splits.map(function (t) {
      var d = new Date(t * 1000), label = pad(d.getHours()) + ":" + pad(d.getMinutes());
      var today = d.toDateString();
      if (today !== day) { label += "\n" + (d.getMonth() + 1) + "/" + d.getDate(); day = today; }
      return label;
    });
  }

  function compactTicks(u, splits) {
    return splits.map(function (v) {
      var a = Math.abs(v);
      if (a >= 1e6) return (v / 1e6).toFixed(1).replace(/\.0$/, "") + " M";
      if (a >= 1e4) return (v / 1e3).toFixed(0) + " k";
      return String(Math.round(v * 100) / 100);
    });
  }

  function draw(node, spec) {
    var width = Math.max(200, node.clientWidth);
    var opts = {width: width, height: 220, series: spec.series,
                axes: [axis({space: 80, values: timeTicks}),
                       axis({label: spec.y, size: 70, space: 36, values: compactTicks})],
                legend: {live: false},
                scales: {x: {time: true}}};
    node.textContent = "";
    var plot = new window.uPlot(opts, spec.data, node);
    node.setAttribute("data-points", String(spec.data[0].length));
    node.setAttribute("data-series", String(spec.series.length - 1));
    return plot;
  }

  function init() {
    var source = document.getElementById("ops-history");
    if (!source || !window.uPlot) return;
    var h = JSON.parse(source.textContent);
    var charts = [["chart-coverage", coverageChart], ["chart-requests", requestsChart],
                  ["chart-backlog", backlogChart]];
    var plots = [];
    charts.forEach(function (c) {
      var node = document.getElementById(c[0]);
      if (!node) return;
      if (!h.times.length) {
        node.textContent = "No fleet history recorded yet (the scheduler records it).";
        return;
      }
      plots.push([node, draw(node, c[1](h))]);
    });
    window.addEventListener("resize", function () {
      plots.forEach(function (p) {
        p[1].setSize({width: Math.max(200, p[0].clientWidth), height: 220});
      });
    });
  }

  document.addEventListener("DOMContentLoaded", init);
})();
