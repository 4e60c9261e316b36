// The job page's three charts, drawn by Chart.js (bundled, tree-shaken to the parts used): outcomes over time
// (stacked bars per time bucket), the lateness of each attempt of a scheduled occurrence (a line), and apart
// from it the start delay of runs on demand and backfills (a line). Each canvas is an image with a text
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
import { isoSeconds, secondsBetween, span } from "./format";

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

/** History rows counted by status per time bucket, the bucket the smallest that keeps at most 24 of them; the
 * rows of the job's notifications are not its executions and are not counted. */
export function outcomes(all: HistoryRow[]): Outcomes {
  const rows = all.filter((row) => row.properties.actionName !== "NotificationAction");
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

/** When a history row's attempt was due to start: its dueTime (a retry's retry time, an error action's send, a
 * backfill's start slot), else its expected time for the first attempt of the main action; null when unknown
 * (a later attempt recorded before entries carried dueTime). */
export function dueOf(row: HistoryRow): string | null {
  const p = row.properties;
  if (p.dueTime) return p.dueTime;
  return p.actionName === "MainAction" && (p.retryCount ?? 0) === 0 ? (p.expectedExecutionTime ?? null) : null;
}

/** Whether a history row belongs to an occurrence of the schedule (not a run on demand or a backfill). */
export function scheduledRun(row: HistoryRow): boolean {
  return (row.properties.trigger ?? "Scheduled") === "Scheduled";
}

/** Seconds an attempt waited for its action's flowControl limits (its flowWait); 0 when it did not wait. */
export function flowWait(row: HistoryRow): number {
  return isoSeconds(row.properties.flowWait) ?? 0;
}

/** The scheduler's lateness of an attempt of a scheduled occurrence: seconds from its own due time
 * ({@link dueOf}: a retry against its retry time) to its start, less the time it waited for its flowControl
 * limits ({@link flowWait}, shown apart); null for a run on demand, a backfill, or an attempt whose due time is
 * unknown. */
export function attemptLateness(row: HistoryRow): number | null {
  if (!scheduledRun(row)) return null;
  const since = secondsBetween(dueOf(row) ?? undefined, row.properties.startTime);
  return since === null ? null : Math.max(0, since - flowWait(row));
}

/** A run on demand's or a backfill's start delay: seconds from when it was due (asked for, or its start
 * slot) to its start; null for an attempt of a scheduled occurrence. Shown apart from lateness. */
export function startDelay(row: HistoryRow): number | null {
  return scheduledRun(row) ? null : secondsBetween(dueOf(row) ?? undefined, row.properties.startTime);
}

/** ``measure`` of each row that has one, oldest first, as a chart's labels (start, UTC) and values. */
export function series(rows: HistoryRow[], measure: (row: HistoryRow) => number | null): { labels: string[]; values: number[] } {
  const points = rows
    .map((row) => ({ start: row.properties.startTime, value: measure(row) }))
    .filter((point): point is { start: string; value: number } => point.value !== null)
    .sort((a, b) => a.start.localeCompare(b.start));
  return { labels: points.map((p) => p.start.slice(11, 19)), values: points.map((p) => Math.round(p.value * 1000) / 1000) };
}

/** Lateness of each attempt of a scheduled occurrence ({@link attemptLateness}), oldest first. */
export function latenessSeries(rows: HistoryRow[]): { labels: string[]; values: number[] } {
  return series(rows, attemptLateness);
}

export class HistoryCharts {
  readonly element: HTMLElement;
  private readonly outcomeCanvas: HTMLCanvasElement;
  private readonly latenessCanvas: HTMLCanvasElement;
  private readonly delayCanvas: HTMLCanvasElement;
  private outcomeChart: Chart | null = null;
  private latenessChart: Chart | null = null;
  private delayChart: Chart | null = null;

  constructor() {
    this.outcomeCanvas = canvas("chart-outcomes");
    this.latenessCanvas = canvas("chart-lateness");
    this.delayCanvas = canvas("chart-on-demand");
    this.element = document.createElement("div");
    this.element.className = "charts";
    this.element.append(
      figure("Outcomes over time", this.outcomeCanvas),
      figure("Lateness (seconds after each attempt's due time)", this.latenessCanvas),
      figure("Runs on demand and backfills (seconds from due to start)", this.delayCanvas),
    );
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
    this.latenessCanvas.setAttribute(
      "aria-label",
      late.values.length
        ? `Lateness of the last ${late.values.length} executions (the attempts of scheduled occurrences, each against its own due time: a retry against its retry time; runs on demand and backfills are in the next chart); at most ${span(Math.max(...late.values))}.`
        : "Lateness: no scheduled run yet (runs on demand and backfills are in the next chart).",
    );
    this.latenessChart = line(this.latenessChart, this.latenessCanvas, late, "lateness (s)", "#0969da");
    const delay = series(rows, startDelay);
    this.delayCanvas.setAttribute(
      "aria-label",
      delay.values.length
        ? `Start delay of the last ${delay.values.length} runs on demand and backfills (from when each was asked for or its start slot, not lateness); at most ${span(Math.max(...delay.values))}.`
        : "Runs on demand and backfills: none yet.",
    );
    this.delayChart = line(this.delayChart, this.delayCanvas, delay, "start delay (s)", "#8250df");
  }

  dispose(): void {
    this.outcomeChart?.destroy();
    this.latenessChart?.destroy();
    this.delayChart?.destroy();
  }
}

/** Draw (or redraw in place) a line chart of seconds per execution. */
function line(chart: Chart | null, element: HTMLCanvasElement, data: { labels: string[]; values: number[] }, name: string, color: string): Chart {
  const dataset = { label: name, data: data.values, borderColor: color, backgroundColor: color, pointRadius: 3 };
  if (chart) {
    chart.data.labels = data.labels;
    chart.data.datasets = [dataset];
    chart.update("none");
    return chart;
  }
  return new Chart(element, {
    type: "line",
    data: { labels: data.labels, datasets: [dataset] },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      plugins: { legend: { display: false } },
      scales: { x: { title: { display: true, text: "start (UTC)" } }, y: { beginAtZero: true, title: { display: true, text: "seconds" } } },
    },
  });
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
