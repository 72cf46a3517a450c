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
  // kafkalab.report.build.data_docs_link); from the files, the relative href stays. The
  // api-server may sit under a path ([api] base_url ending in /airflow): whatever comes
  // before the reports' own path is kept in front of the Data Docs' path.
  document.querySelectorAll("a[data-served-href]").forEach(function (a) {
    var under = a.getAttribute("data-served-under");
    var path = window.location.pathname;
    var at = under ? path.indexOf(under) : -1;
    if (at >= 0 && window.location.protocol.indexOf("http") === 0) {
      a.setAttribute("href", path.slice(0, at) + a.getAttribute("data-served-href"));
    }
  });
})();
