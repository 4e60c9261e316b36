// Everything of one subscription the lists show: its collections, their jobs, and each job's last outcome.
// A job's last outcome is read from its history only when its counters or last run changed since the last
// read, so polling a quiet subscription costs one list call per collection.

import type { Api, Collection, HistoryRow, Job, Ref } from "./api";
import { parseId } from "./api";

export interface JobRow {
  job: Job;
  ref: Ref;
  collection: Collection;
  /** The newest history row of the main action (or of any action when none is of the main action). */
  last: HistoryRow | null;
}

export interface CollectionRow {
  collection: Collection;
  ref: Ref;
  jobs: JobRow[];
  /** Set when the collection's jobs could not be listed. */
  error?: string;
}

export interface Snapshot {
  collections: CollectionRow[];
  jobs: JobRow[];
}

/** Failing now: the job's last run of its main action failed, or the service took it out (Faulted). */
export function isFailing(row: JobRow): boolean {
  return row.job.properties.state === "Faulted" || row.last?.properties.status === "Failed";
}

export function lastOutcome(rows: HistoryRow[]): HistoryRow | null {
  return rows.find((row) => row.properties.actionName === "MainAction") ?? rows[0] ?? null;
}

async function inBatches<T, R>(items: T[], size: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let start = 0; start < items.length; start += size) {
    out.push(...(await Promise.all(items.slice(start, start + size).map(work))));
  }
  return out;
}

export class Catalog {
  private outcomes = new Map<string, { key: string; row: HistoryRow | null }>();

  constructor(private readonly api: Api) {}

  async load(): Promise<Snapshot> {
    const collections = await this.api.collections();
    const rows = await inBatches(collections, 6, async (collection): Promise<CollectionRow> => {
      const ref = parseId(collection.id);
      try {
        const jobs = await this.api.jobs(ref);
        const jobRows = await inBatches(jobs, 6, (job) => this.row(job, collection));
        return { collection, ref, jobs: jobRows };
      } catch (error) {
        return { collection, ref, jobs: [], error: (error as Error).message };
      }
    });
    return { collections: rows, jobs: rows.flatMap((row) => row.jobs) };
  }

  private async row(job: Job, collection: Collection): Promise<JobRow> {
    const ref = parseId(job.id);
    const status = job.properties.status ?? {};
    const key = `${status.lastExecutionTime ?? ""}|${status.executionCount ?? 0}|${status.failureCount ?? 0}`;
    const known = this.outcomes.get(job.id);
    if (known && known.key === key) return { job, ref, collection, last: known.row };
    let last: HistoryRow | null = null;
    if (status.lastExecutionTime || status.executionCount || status.failureCount) {
      last = lastOutcome(await this.api.history(ref, 5, 5));
    }
    this.outcomes.set(job.id, { key, row: last });
    return { job, ref, collection, last };
  }
}
