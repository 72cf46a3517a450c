// Kafka Latency Lab trend report: legend hover highlights one series (no dependencies).
(function () {
  "use strict";
  function onEnter(ev) {
    var item = ev.currentTarget;
    var chart = item.closest("svg");
    var key = item.getAttribute("data-series");
    if (!chart || key === null) { return; }
    chart.querySelectorAll(".series").forEach(function (s) {
      if (s.getAttribute("data-series") !== key) { s.classList.add("dim"); }
    });
  }
  function onLeave(ev) {
    var chart = ev.currentTarget.closest("svg");
    if (!chart) { return; }
    chart.querySelectorAll(".series.dim").forEach(function (s) { s.classList.remove("dim"); });
  }
  document.querySelectorAll("svg.chart .legend-item").forEach(function (item) {
    item.addEventListener("mouseenter", onEnter);
    item.addEventListener("mouseleave", onLeave);
  });
  // Served by Airflow's api-server, the Data Docs live at their own path (see
  // kafkalab.report.build.data_docs_link); from the files, the relative href stays.
  document.querySelectorAll("a[data-served-href]").forEach(function (a) {
    var under = a.getAttribute("data-served-under");
    if (under && window.location.protocol.indexOf("http") === 0 &&
        window.location.pathname.indexOf(under) >= 0) {
      a.setAttribute("href", a.getAttribute("data-served-href"));
    }
  });
})();
