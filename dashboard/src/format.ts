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

/** The seconds of an ISO 8601 duration (PT30S, P1DT2H) or .NET TimeSpan (00:00:30, 1.02:00:00); null when
 * ``text`` is neither. */
export function isoSeconds(text: string | undefined): number | null {
  if (!text) return null;
  const iso = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i.exec(text);
  if (iso) {
    const [, d, hh, mm, ss] = iso;
    return Number(d ?? 0) * 86400 + Number(hh ?? 0) * 3600 + Number(mm ?? 0) * 60 + Number(ss ?? 0);
  }
  const timespan = /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(text);
  if (timespan) {
    const [, d, hh, mm, ss] = timespan;
    return Number(d ?? 0) * 86400 + Number(hh) * 3600 + Number(mm) * 60 + Number(ss);
  }
  return null;
}

/** An ISO 8601 duration (PT30S) or .NET TimeSpan (00:00:30), as written, in words where simple. */
export function duration(text: string | undefined): string {
  if (!text) return "—";
  const seconds = isoSeconds(text);
  return seconds === null ? text : span(seconds);
}

// ------------------------------------------------------------------------------------ absolute times

/** How absolute times are shown: in UTC (the API's time), in the browser's zone, or in the job's own zone
 * (recurrence.timeZone; UTC for a job without one, or one the browser cannot name). Kept for the tab's
 * visit, in memory only (nothing is stored). */
export type TimeMode = "utc" | "local" | "job";
let timeMode: TimeMode = "utc";
const listeners: (() => void)[] = [];

export function getTimeMode(): TimeMode {
  return timeMode;
}

export function setTimeMode(mode: TimeMode): void {
  timeMode = mode;
  for (const listener of listeners) listener();
}

export function onTimeMode(listener: () => void): void {
  listeners.push(listener);
}

/** The browser's own zone (IANA name). */
export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Whether the browser knows ``zone`` as a time zone (an IANA name). */
function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-GB", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The IANA zone an absolute time is shown in under the current mode; null = UTC. ``jobZone``: the job's
 * zone as the server named it (IANA) or as its recurrence has it (a Windows name the browser may not know). */
export function zoneFor(jobZone?: string | null): string | null {
  if (timeMode === "local") return browserZone();
  if (timeMode === "job" && jobZone && knownZone(jobZone)) return jobZone;
  return null;
}

/** "2024-05-01 12:00:05 UTC", or the same instant in ``zone`` ("2024-05-01 14:00:05 CEST"). */
export function absolute(iso: string | undefined | null, zone: string | null = zoneFor()): string {
  if (!iso || zone === null) return utc(iso);
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-GB", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      timeZoneName: "short",
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${parts.timeZoneName}`;
}

/** The zone's label for a column header: "UTC", "Europe/Berlin". */
export function zoneLabel(zone: string | null): string {
  return zone ?? "UTC";
}

// ------------------------------------------------------------------------------------ schedules in words

const DAYS: Record<string, string> = {
  monday: "Mon",
  tuesday: "Tue",
  wednesday: "Wed",
  thursday: "Thu",
  friday: "Fri",
  saturday: "Sat",
  sunday: "Sun",
};
const UNITS: Record<string, string> = { minute: "minute", hour: "hour", day: "day", week: "week", month: "month" };
const ORDINALS: Record<string, string> = { "1": "first", "2": "second", "3": "third", "4": "fourth", "5": "fifth", "-1": "last" };

function numbers(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((n): n is number => typeof n === "number").sort((a, b) => a - b) : [];
}

const pad = (n: number) => String(n).padStart(2, "0");

/** The cron strings of a recurrence (api-version 2026-12-01-preview: ``cron`` is one string or an array of
 * them, whose union fires), as a list; null when it has no ``cron`` (a frequency, or a one-shot job). */
export function cronStrings(recurrence: { cron?: unknown } | undefined | null): string[] | null {
  const cron = recurrence?.cron;
  if (cron === undefined || cron === null) return null;
  return (Array.isArray(cron) ? cron : [cron]).map((item) => String(item));
}

/** The zone a recurrence's times are in, as written: its ``timeZone``, else the zone a cron string names in a
 * ``CRON_TZ=`` (or ``TZ=``) prefix; undefined for UTC. */
export function recurrenceZone(recurrence: { timeZone?: string; cron?: unknown } | undefined | null): string | undefined {
  if (recurrence?.timeZone) return recurrence.timeZone;
  for (const text of cronStrings(recurrence) ?? []) {
    const prefix = /^\s*(?:CRON_TZ|TZ)=(\S+)/i.exec(text);
    if (prefix) return prefix[1];
  }
  return undefined;
}

/** A recurrence in words: "every 5 minutes", "Mon, Wed 08:00", "every 2 weeks: Fri 17:30",
 * "cron 0 9 * * MON-FRI | 0 12 L * *" (a union of cron strings), "once". */
export function scheduleWords(
  recurrence:
    | { frequency?: string; interval?: number; count?: number; endTime?: string; timeZone?: string; schedule?: Record<string, unknown>; cron?: string | string[] }
    | undefined,
  startTime?: string,
): string {
  const crons = cronStrings(recurrence);
  if (recurrence && crons) return `cron ${crons.map((text) => text.trim()).join(" | ")}${limits(recurrence)}`;
  if (!recurrence || !recurrence.frequency) return startTime ? `once, at ${utc(startTime)}` : "once";
  const unit = UNITS[recurrence.frequency.toLowerCase()] ?? recurrence.frequency.toLowerCase();
  const interval = recurrence.interval ?? 1;
  const every = interval === 1 ? `every ${unit}` : `every ${interval} ${unit}s`;
  const schedule = recurrence.schedule ?? {};
  const hours = numbers(schedule.hours);
  const minutes = numbers(schedule.minutes);
  const days = Array.isArray(schedule.weekDays)
    ? (schedule.weekDays as unknown[]).map((day) => String(day)).sort((a, b) => Object.keys(DAYS).indexOf(a.toLowerCase()) - Object.keys(DAYS).indexOf(b.toLowerCase())).map((day) => DAYS[day.toLowerCase()] ?? day)
    : [];
  const monthDays = numbers(schedule.monthDays);
  const monthly = Array.isArray(schedule.monthlyOccurrences) ? (schedule.monthlyOccurrences as { day?: string; occurrence?: number }[]) : [];
  let times = "";
  if (hours.length) {
    const mins = minutes.length ? minutes : [0];
    times = hours.flatMap((hour) => mins.map((minute) => `${pad(hour)}:${pad(minute)}`)).join(", ");
  } else if (minutes.length) {
    times = `at ${minutes.map((minute) => `:${pad(minute)}`).join(", ")}`;
  }
  const on: string[] = [];
  if (days.length) on.push(days.join(", "));
  if (monthDays.length) on.push(`day ${monthDays.join(", ")} of the month`);
  for (const item of monthly) {
    const day = DAYS[String(item.day ?? "").toLowerCase()] ?? String(item.day ?? "");
    on.push(item.occurrence !== undefined ? `${ORDINALS[String(item.occurrence)] ?? `#${item.occurrence}`} ${day}` : `every ${day}`);
  }
  const when = [on.join("; "), times].filter(Boolean).join(" ");
  let text: string;
  if (!when) text = every;
  else if (interval === 1 && on.length) text = when;
  else if (interval === 1) text = `${every} ${when}`;
  else text = `${every}: ${when}`;
  return text + limits(recurrence);
}

/** What follows a recurrence's rule in words: its zone, count and end (" (Europe/Berlin), 10 times"). */
function limits(recurrence: { count?: number; endTime?: string; timeZone?: string }): string {
  let text = "";
  if (recurrence.timeZone) text += ` (${recurrence.timeZone})`;
  if (recurrence.count !== undefined) text += `, ${recurrence.count} time${recurrence.count === 1 ? "" : "s"}`;
  if (recurrence.endTime) text += `, until ${utc(recurrence.endTime)}`;
  return text;
}
