// The usage page's chart: this month's operations per day, drawn with Chart.js from the
// numbers in the canvas's data attribute (the same numbers are in the table below it).
"use strict";
(() => {
  const canvas = document.getElementById("usage-chart");
  if (!canvas || typeof Chart === "undefined") return;
  const days = JSON.parse(canvas.getAttribute("data-days") || "[]");
  const period = canvas.getAttribute("data-period") || "";
  const chart = new Chart(canvas, {
    type: "bar",
    data: {
      labels: days.map((_, i) => String(i + 1)),
      datasets: [{ label: "Operations", data: days, backgroundColor: "#2f5fd0", borderRadius: 3 }],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { title: (items) => `${period}-${String(Number(items[0].label)).padStart(2, "0")}` } },
      },
      scales: {
        x: { title: { display: true, text: `Day of ${period} (UTC)` }, grid: { display: false } },
        y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "Operations" } },
      },
    },
  });
  canvas.setAttribute("data-ready", String(chart.data.datasets[0].data.length));
})();
