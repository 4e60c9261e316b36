// The job page's two charts, drawn by Chart.js (bundled, tree-shaken to the parts used): outcomes over time
// (stacked bars per time bucket) and lateness per execution (a line). Each canvas is an image with a text
// summary for screen readers; the history table below them holds the same data as text.

import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from "chart.js";
import type { HistoryRow } from "./api";
import { secondsBetween, span } from "./format";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip);
Chart.defaults.animation = false;
Chart.defaults.font.family = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
Chart.defaults.color = "#1f2328";

const COLORS: Record<string, string> = { Completed: "#1a7f37", Failed: "#cf222e", Postponed: "#9a6700" };
const BUCKETS = [60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400].map((seconds) => seconds * 1000);
const MAX_BUCKETS = 24;

export interface Outcomes {
  labels: string[];
  counts: Record<string, number[]>;
  bucketMs: number;
}

function label(ms: number, bucketMs: number): string {
  const iso = new Date(ms).toISOString();
  return bucketMs >= 86400000 ? iso.slice(0, 10) : bucketMs >= 3600000 ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 16);
}

/** History rows counted by status per time bucket, the bucket the smallest that keeps at most 24 of them. */
export function outcomes(rows: HistoryRow[]): Outcomes {
  const times = rows.map((row) => new Date(row.properties.startTime).getTime()).filter((t) => !Number.isNaN(t));
  if (times.length === 0) return { labels: [], counts: {}, bucketMs: BUCKETS[0] };
  const first = Math.min(...times);
  const last = Math.max(...times);
  const bucketMs = BUCKETS.find((size) => Math.floor(last / size) - Math.floor(first / size) < MAX_BUCKETS) ?? BUCKETS[BUCKETS.length - 1];
  const start = Math.floor(first / bucketMs);
  const buckets = Math.floor(last / bucketMs) - start + 1;
  const labels = Array.from({ length: buckets }, (_, index) => label((start + index) * bucketMs, bucketMs));
  const counts: Record<string, number[]> = {};
  for (const row of rows) {
    const time = new Date(row.properties.startTime).getTime();
    if (Number.isNaN(time)) continue;
    const series = (counts[row.properties.status] ??= new Array<number>(buckets).fill(0));
    series[Math.floor(time / bucketMs) - start] += 1;
  }
  return { labels, counts, bucketMs };
}

/** Whether a history row is the first attempt of a scheduled occurrence: the only kind whose start against
 * its expected time says how late the scheduler was (a retry starts at its retry time, an error action after
 * the last retry, a run on demand or a backfill when it was asked for). */
export function scheduledRun(row: HistoryRow): boolean {
  const p = row.properties;
  const trigger = p.trigger ?? "Scheduled";
  return p.actionName !== "ErrorAction" && (p.retryCount ?? 0) === 0 && trigger === "Scheduled";
}

/** Lateness (start - expected, seconds) of each scheduled run ({@link scheduledRun}), oldest first. */
export function latenessSeries(rows: HistoryRow[]): { labels: string[]; values: number[] } {
  const points = rows
    .filter(scheduledRun)
    .map((row) => ({ start: row.properties.startTime, late: secondsBetween(row.properties.expectedExecutionTime, row.properties.startTime) }))
    .filter((point): point is { start: string; late: number } => point.late !== null)
    .sort((a, b) => a.start.localeCompare(b.start));
  return { labels: points.map((p) => p.start.slice(11, 19)), values: points.map((p) => Math.round(p.late * 1000) / 1000) };
}

export class HistoryCharts {
  readonly element: HTMLElement;
  private readonly outcomeCanvas: HTMLCanvasElement;
  private readonly latenessCanvas: HTMLCanvasElement;
  private outcomeChart: Chart | null = null;
  private latenessChart: Chart | null = null;

  constructor() {
    this.outcomeCanvas = canvas("chart-outcomes");
    this.latenessCanvas = canvas("chart-lateness");
    this.element = document.createElement("div");
    this.element.className = "charts";
    this.element.append(figure("Outcomes over time", this.outcomeCanvas), figure("Lateness (seconds after the due time)", this.latenessCanvas));
  }

  update(rows: HistoryRow[]): void {
    const data = outcomes(rows);
    const statuses = Object.keys(data.counts).sort();
    const datasets = statuses.map((status) => ({
      label: status,
      data: data.counts[status],
      backgroundColor: COLORS[status] ?? "#57606a",
      stack: "outcomes",
      maxBarThickness: 48,
    }));
    const total = (status: string) => (data.counts[status] ?? []).reduce((a, b) => a + b, 0);
    this.outcomeCanvas.setAttribute(
      "aria-label",
      rows.length
        ? `Outcomes over time, per ${span(data.bucketMs / 1000)}: ${statuses.map((s) => `${total(s)} ${s}`).join(", ")}.`
        : "Outcomes over time: no executions yet.",
    );
    if (!this.outcomeChart) {
      this.outcomeChart = new Chart(this.outcomeCanvas, {
        type: "bar",
        data: { labels: data.labels, datasets },
        options: {
          responsive: true,
          maintainAspectRatio: false,
          scales: { x: { stacked: true, title: { display: true, text: "UTC" } }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "executions" } } },
        },
      });
    } else {
      this.outcomeChart.data.labels = data.labels;
      this.outcomeChart.data.datasets = datasets;
      this.outcomeChart.update("none");
    }

    const late = latenessSeries(rows);
    const worst = late.values.length ? Math.max(...late.values) : 0;
    this.latenessCanvas.setAttribute(
      "aria-label",
      late.values.length
        ? `Lateness of the last ${late.values.length} executions (scheduled runs; retries, error actions, runs on demand and backfills left out); at most ${span(worst)}.`
        : "Lateness: no scheduled run yet (retries, error actions, runs on demand and backfills are left out).",
    );
    const dataset = { label: "lateness (s)", data: late.values, borderColor: "#0969da", backgroundColor: "#0969da", pointRadius: 3 };
    if (!this.latenessChart) {
      this.latenessChart = new Chart(this.latenessCanvas, {
        type: "line",
        data: { labels: late.labels, datasets: [dataset] },
        options: {
          responsive: true,
          maintainAspectRatio: false,
          plugins: { legend: { display: false } },
          scales: { x: { title: { display: true, text: "start (UTC)" } }, y: { beginAtZero: true, title: { display: true, text: "seconds" } } },
        },
      });
    } else {
      this.latenessChart.data.labels = late.labels;
      this.latenessChart.data.datasets = [dataset];
      this.latenessChart.update("none");
    }
  }

  dispose(): void {
    this.outcomeChart?.destroy();
    this.latenessChart?.destroy();
  }
}

function canvas(id: string): HTMLCanvasElement {
  const element = document.createElement("canvas");
  element.id = id;
  element.setAttribute("role", "img");
  return element;
}

function figure(caption: string, chart: HTMLCanvasElement): HTMLElement {
  const element = document.createElement("figure");
  const box = document.createElement("div");
  box.className = "chart-box";
  box.append(chart);
  const text = document.createElement("figcaption");
  text.textContent = caption;
  element.append(text, box);
  return element;
}
