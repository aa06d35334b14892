// The chart in an expanded row: response time as cameras are added, one line
// per image size (one image per camera), the target as a dashed line. It
// uses the vendored Chart.js (window.Chart, loaded as a classic script), which
// draws title and legend on the canvas, so the PNG download carries them.
import { judgedTTFT, deviceLabel } from './logic.js';

const SIZE_COLOURS = { '480p': '#2a9d8f', '720p': '#1d4ed8', '1080p': '#b45309', '2K': '#7c3aed' };
const EXTRA_COLOURS = ['#be185d', '#4d7c0f', '#0e7490', '#57534e'];

// chartWhiteBackground paints the canvas white before each draw: without it
// the PNG has a transparent background that turns black in many viewers.
const chartWhiteBackground = {
  id: 'vlmfleetWhiteBackground',
  beforeDraw(chart) {
    const { ctx } = chart;
    ctx.save();
    ctx.globalCompositeOperation = 'destination-over';
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, chart.width, chart.height);
    ctx.restore();
  },
};

// chartSeries lists, per image size, the one-image points at a frame
// interval (0 back to back) by cameras, at the response time the statistic
// judges (a level whose percentile never started is left out); only sizes
// with a measurement appear.
export function chartSeries(row, sizes, interval = 0, statistic = 'mean') {
  const out = [];
  for (const size of sizes) {
    const pts = row.points
      .filter((p) => p.size === size && p.images === 1 && p.completed > 0 && (p.frame_interval_sec || 0) === interval && judgedTTFT(p, statistic) != null)
      .sort((a, b) => a.cameras - b.cameras)
      .map((p) => ({ x: p.cameras, y: Math.round(judgedTTFT(p, statistic) * 100) / 100 }));
    if (pts.length) out.push({ size, pts });
  }
  return out;
}

// powerSeries is the selected size's one-image points at a frame interval
// that have power samples, by cameras: the draw as cameras are added.
export function powerSeries(row, size, interval = 0) {
  return row.points
    .filter((p) => p.size === size && p.images === 1 && (p.frame_interval_sec || 0) === interval && p.power_w != null)
    .sort((a, b) => a.cameras - b.cameras)
    .map((p) => ({ x: p.cameras, y: Math.round(p.power_w * 10) / 10 }));
}

// chartWorthDrawing: the chart appears where several cameras were measured.
export function chartWorthDrawing(row) {
  const cams = new Set();
  for (const p of row.points) if (p.images === 1) cams.add(p.cameras);
  return cams.size > 1;
}

export function chartTitle(row) {
  return `${row.model} · ${row.quantization} · ${row.engine} · ${deviceLabel(row)}`;
}

// drawChart draws into canvas and returns the Chart instance (or null when
// the library is missing). selectedSize is drawn thicker; interval is the
// frame clock whose levels are drawn (0 back to back), statistic the
// response time drawn (the mean, p90 or p95).
export function drawChart(canvas, row, sizes, target, selectedSize, interval = 0, statistic = 'mean') {
  const ChartJS = globalThis.Chart;
  if (!ChartJS) return null;
  const series = chartSeries(row, sizes, interval, statistic);
  let xmin = Infinity;
  let xmax = -Infinity;
  for (const s of series) for (const p of s.pts) { xmin = Math.min(xmin, p.x); xmax = Math.max(xmax, p.x); }
  // Nothing to draw at this statistic (a row with means only, by p90): the
  // target alone, over one camera.
  if (series.length === 0) { xmin = 1; xmax = 1; }
  const ticks = [...new Set(series.flatMap((s) => s.pts.map((p) => p.x)))].sort((a, b) => a - b);
  const datasets = series.map((s, i) => sizeDataset(s, i, s.size === selectedSize));
  datasets.push({
    label: `Target ${target} s (dashed)`,
    data: [{ x: xmin, y: target }, { x: xmax, y: target }],
    borderColor: '#dc2626',
    backgroundColor: '#dc2626',
    borderDash: [6, 5],
    borderWidth: 2,
    pointRadius: 0,
    pointHitRadius: 0,
  });
  // Power against cameras on a second axis, where the level was sampled.
  const power = powerSeries(row, selectedSize, interval);
  if (power.length) {
    datasets.push({
      label: `Power (W), ${selectedSize} (dotted)`,
      data: power,
      yAxisID: 'y2',
      borderColor: '#047857',
      backgroundColor: '#047857',
      borderDash: [2, 3],
      borderWidth: 2,
      pointRadius: 3,
      tension: 0,
    });
  }
  return new ChartJS(canvas, {
    type: 'line',
    data: { datasets },
    plugins: [chartWhiteBackground],
    options: chartOptions(row, interval, statistic, { xmin, xmax, ticks, power: power.length > 0 }),
  });
}

// sizeDataset is the line of one image size; the selected size's is the
// thicker.
function sizeDataset(s, i, selected) {
  const colour = SIZE_COLOURS[s.size] || EXTRA_COLOURS[i % EXTRA_COLOURS.length];
  return {
    label: `${s.size}, 1 image`,
    data: s.pts,
    borderColor: colour,
    backgroundColor: colour,
    borderWidth: selected ? 3 : 2,
    pointRadius: selected ? 4 : 3,
    tension: 0,
  };
}

// chartOptions are the chart's title, legend, tooltips and axes: cameras
// from axis.xmin to axis.xmax with a tick at each level measured, response
// time, and power on a second axis where axis.power.
function chartOptions(row, interval, statistic, axis) {
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    parsing: false,
    plugins: {
      title: { display: true, text: [chartTitle(row), `Response time${statistic === 'mean' ? '' : ` (${statistic})`} as cameras are added${interval > 0 ? `, one frame every ${interval} s per camera` : ''}`], color: '#111827', font: { size: 14 } },
      legend: { display: true, position: 'bottom', labels: { color: '#111827', usePointStyle: true, pointStyle: 'line', pointStyleWidth: 28 } },
      tooltip: { callbacks: { label: (c) => (c.dataset.yAxisID === 'y2' ? `${c.dataset.label}: ${c.parsed.y.toFixed(1)} W at ${c.parsed.x} camera(s)` : `${c.dataset.label}: ${c.parsed.y.toFixed(2)} s at ${c.parsed.x} camera(s)`) } },
    },
    scales: {
      x: {
        type: 'linear',
        min: axis.xmin,
        max: axis.xmax,
        title: { display: true, text: 'Cameras', color: '#374151' },
        afterBuildTicks: (a) => { a.ticks = axis.ticks.map((v) => ({ value: v })); },
        ticks: { color: '#374151', precision: 0 },
      },
      y: {
        beginAtZero: true,
        title: { display: true, text: 'Response time (s)', color: '#374151' },
        ticks: { color: '#374151' },
      },
      y2: {
        display: axis.power,
        position: 'right',
        beginAtZero: true,
        grid: { drawOnChartArea: false },
        title: { display: true, text: 'Power (W)', color: '#374151' },
        ticks: { color: '#374151' },
      },
    },
  };
}

// chartPNG renders the chart as a PNG data URL (white background, title and
// legend included).
export function chartPNG(chart) {
  chart.update('none');
  return chart.toBase64Image('image/png', 1);
}
