// Times, durations and outcomes, as the views show them. Every instant is shown in UTC (the API's time),
// with the distance from now; a job's own time zone is shown where the server computed it.

/** "2024-05-01 12:00:05 UTC" from an ISO 8601 instant. */
export function utc(iso: string | undefined | null): string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "").replace(/Z$/, "") + " UTC";
}

/** "in 12 s", "3 min ago", ... relative to ``now`` (milliseconds). */
export function relative(iso: string | undefined | null, now = Date.now()): string {
  if (!iso) return "—";
  const then = new Date(iso).getTime();
  if (Number.isNaN(then)) return iso;
  const seconds = Math.round((then - now) / 1000);
  const text = span(Math.abs(seconds));
  if (Math.abs(seconds) < 1) return "now";
  return seconds > 0 ? `in ${text}` : `${text} ago`;
}

/** A duration in seconds, as "850 ms", "12 s", "3 min 5 s", "2 h 4 min", "3 d 2 h". */
export function span(seconds: number): string {
  const s = Math.abs(seconds);
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1).replace(/\.0$/, "") : Math.round(s)} s`;
  const whole = Math.round(s);
  if (whole < 3600) return `${Math.floor(whole / 60)} min${whole % 60 ? ` ${whole % 60} s` : ""}`;
  if (whole < 86400) {
    const minutes = Math.floor((whole % 3600) / 60);
    return `${Math.floor(whole / 3600)} h${minutes ? ` ${minutes} min` : ""}`;
  }
  const hours = Math.floor((whole % 86400) / 3600);
  return `${Math.floor(whole / 86400)} d${hours ? ` ${hours} h` : ""}`;
}

/** Seconds between two ISO instants (``to`` - ``from``), or null when either is missing. */
export function secondsBetween(from: string | undefined, to: string | undefined): number | null {
  if (!from || !to) return null;
  const a = new Date(from).getTime();
  const b = new Date(to).getTime();
  return Number.isNaN(a) || Number.isNaN(b) ? null : (b - a) / 1000;
}

/** A signed lateness: "on time" within 0.5 s, else "2.1 s late" or "1 s early". */
export function lateness(seconds: number | null): string {
  if (seconds === null) return "—";
  if (Math.abs(seconds) < 0.5) return "on time";
  return `${span(seconds)} ${seconds > 0 ? "late" : "early"}`;
}

/** The first ``limit`` characters of ``text`` on one line. */
export function excerpt(text: string, limit = 140): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/** An ISO 8601 duration (PT30S) or .NET TimeSpan (00:00:30), as written, in words where simple. */
export function duration(text: string | undefined): string {
  if (!text) return "—";
  const iso = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i.exec(text);
  if (iso) {
    const [, d, hh, mm, ss] = iso;
    return span(Number(d ?? 0) * 86400 + Number(hh ?? 0) * 3600 + Number(mm ?? 0) * 60 + Number(ss ?? 0));
  }
  const timespan = /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(text);
  if (timespan) {
    const [, d, hh, mm, ss] = timespan;
    return span(Number(d ?? 0) * 86400 + Number(hh) * 3600 + Number(mm) * 60 + Number(ss));
  }
  return text;
}
