// The management API (Microsoft.Scheduler, ARM paths, api-version 2026-12-01-preview: it shows every job
// property, jitter, overlapPolicy, pauseAfterFailures, missedRunPolicy, exclusions, signing, identity) and
// the dashboard's own API, called with the API key (or an Entra ID access token) as a bearer token. The
// credential lives in session storage only; there are no cookies.
//
// READS AND WRITES TAKE DIFFERENT ROUTES: a GET of a management API path is sent to the dashboard's read
// route, /dashboard/api/arm/subscriptions/... (the same handler, keys and answers, served by the dashboard
// function), so the page's polls are not invocation lines of the management API's function; every write
// (PUT, PATCH, POST, DELETE) goes to the management API itself (/subscriptions/...).

export const API_VERSION = "2026-12-01-preview";
/** The dashboard's route for reads of the management API (GET only). */
export const READ_ROUTE = "/dashboard/api/arm";
const KEY_ITEM = "scheduler.dashboard.apiKey";
// ENTRA ID SIGN-IN (client side): a pasted access token is kept under its own item, so a page knows which kind
// of credential it holds (an expired token asks for a new token, not for a key). The server validates it
// (scheduler_core/auth, issue 17); the page sends it exactly as a key: "Authorization: Bearer <token>".
const TOKEN_ITEM = "scheduler.dashboard.accessToken";
const SUBSCRIPTION_ITEM = "scheduler.dashboard.subscription";

/** How the page authenticates: an API key of the deployment, or an Entra ID access token. */
export type CredentialKind = "key" | "token";

export interface Session {
  /** The API key or the access token, sent as "Authorization: Bearer ...". */
  key: string;
  subscription: string;
  kind?: CredentialKind;
}

export function loadSession(): Session | null {
  const key = sessionStorage.getItem(KEY_ITEM);
  const token = sessionStorage.getItem(TOKEN_ITEM);
  const subscription = sessionStorage.getItem(SUBSCRIPTION_ITEM);
  if (!subscription) return null;
  if (key) return { key, subscription, kind: "key" };
  if (token) return { key: token, subscription, kind: "token" };
  return null;
}

export function saveSession(session: Session): void {
  clearSession();
  sessionStorage.setItem(session.kind === "token" ? TOKEN_ITEM : KEY_ITEM, session.key);
  sessionStorage.setItem(SUBSCRIPTION_ITEM, session.subscription);
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY_ITEM);
  sessionStorage.removeItem(TOKEN_ITEM);
}

export function lastSubscription(): string {
  return sessionStorage.getItem(SUBSCRIPTION_ITEM) ?? "";
}

// ------------------------------------------------------------------------------------------- resources

export interface Collection {
  id: string;
  name: string;
  location?: string;
  properties: {
    sku?: { name?: string };
    state?: string;
    quota?: {
      maxJobCount?: number;
      maxJobOccurrence?: number;
      maxRecurrence?: { frequency?: string; interval?: number };
    };
  };
}

/** The PUT body of a new job collection: its region and plan (the plan's quota applies). */
export interface CollectionDefinition {
  location: string;
  properties: { sku: { name: string } };
}

export interface RetryPolicy {
  retryType?: string;
  retryInterval?: string;
  retryCount?: number;
  maxRetryInterval?: string;
}

export interface Action {
  type: string;
  request?: {
    uri?: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    authentication?: Record<string, unknown> & { type?: string };
  };
  queueMessage?: { storageAccount?: string; queueName?: string; message?: string };
  serviceBusQueueMessage?: Record<string, unknown> & { namespace?: string; queueName?: string };
  serviceBusTopicMessage?: Record<string, unknown> & { namespace?: string; topicPath?: string };
  retryPolicy?: RetryPolicy;
  errorAction?: Action;
}

export interface Recurrence {
  /** api-version 2026-12-01-preview: one cron string or an array of them (their union fires); a recurrence
   * with ``cron`` has no frequency, interval or schedule. */
  cron?: string | string[];
  frequency?: string;
  interval?: number;
  count?: number;
  endTime?: string;
  timeZone?: string;
  schedule?: Record<string, unknown>;
}

export interface Job {
  id: string;
  name: string;
  properties: {
    startTime?: string;
    action: Action;
    recurrence?: Recurrence;
    state: string;
    /** api-version 2026-12-01-preview: the job's tags (ARM's rules: at most 50; names unique without regard to
     * case; never HTML: a name or value may hold anything ARM allows) and its description (at most 1,024
     * characters). */
    tags?: Record<string, string>;
    description?: string;
    [preview: string]: unknown;
    status?: {
      executionCount?: number;
      failureCount?: number;
      faultedCount?: number;
      lastExecutionTime?: string;
      nextExecutionTime?: string;
    };
  };
}

export interface HistoryRow {
  id: string;
  name: string;
  properties: {
    startTime: string;
    endTime?: string;
    expectedExecutionTime?: string;
    actionName: string;
    status: string;
    message: string;
    retryCount: number;
    repeatCount: number;
    /** api-version 2026-12-01-preview: what started the occurrence (Scheduled, Manual, Backfill, Replay). */
    trigger?: string;
    /** api-version 2026-12-01-preview: when the attempt was due, where not its expected time (a retry's retry
     * time, an error action's send, a backfill's start slot). */
    dueTime?: string;
    /** api-version 2026-12-01-preview: how long the attempt waited for its action's flowControl limits (an
     * ISO 8601 duration), not part of its lateness; absent when it did not wait. */
    flowWait?: string;
  };
}

/** A replay the service accepted (POST .../history/{historyId}/rerun, api-version 2026-12-01-preview): the
 * occurrence run again (its expected execution time) and the execution id of the replay's first attempt (the
 * ``name`` of its history row, whose trigger is Replay). */
export interface Replay {
  scheduledTime: string;
  executionId: string;
}

/** The dashboard's dry run of a job PUT (POST /dashboard/api/preview/...): nothing is written. */
export interface JobPreview {
  id: string;
  now: string;
  exists: boolean;
  keepsSeries: boolean;
  state: string;
  completesAtOnce: boolean;
  timeZone: { name: string; iana: string } | null;
  occurrences: { utc: string; local: string | null }[];
  writeOnly: { path: string; set: boolean; wasSet: boolean; fate: string }[];
  droppedSecrets: string[];
}

/** The caller's role in the subscription (GET /dashboard/api/access/...). */
export interface Access {
  subscription: string;
  role: "Reader" | "Contributor";
  canWrite: boolean;
}

export interface JobInsight {
  id: string;
  now: string;
  state: string;
  timeZone: { name: string; iana: string } | null;
  occurrences: { utc: string; local: string | null }[];
  writeOnly: { path: string; set: boolean; meaning: string }[];
}

/** The dashboard's status API: this instance's /health answer and live counts of the subscription. */
export interface ServiceStatus {
  subscription: string;
  health: {
    httpStatus: number;
    status: "healthy" | "degraded" | "unhealthy";
    version: string;
    checked_at?: string;
    storage?: "reachable" | "unreachable" | "unresponsive";
    last_tick?: string | null;
    tick_age_seconds?: number | null;
    execution_queue_depth?: number | null;
    execution_queue_due?: number | null;
    execution_queue_staged?: number | null;
    poison_queue_length?: number | null;
    warnings: string[];
    reason?: string;
  };
  counts: {
    collections: number;
    jobs: number;
    jobsByState: Record<string, number>;
    executions: number;
    failures: number;
    faults: number;
    dueSoon: number;
    dueSoonSeconds: number;
    countedAt: string;
  } | null;
}

/** Names of a resource id: /subscriptions/S/resourceGroups/R/providers/Microsoft.Scheduler/jobCollections/C[/jobs/J]. */
export interface Ref {
  subscription: string;
  group: string;
  collection: string;
  job?: string;
}

export function parseId(id: string): Ref {
  const parts = id.split("/");
  // ["", "subscriptions", S, "resourceGroups", R, "providers", "Microsoft.Scheduler", "jobCollections", C, "jobs", J]
  return { subscription: parts[2], group: parts[4], collection: parts[8], job: parts[10] };
}

export function collectionPath(ref: Ref): string {
  const e = encodeURIComponent;
  return (
    `/subscriptions/${e(ref.subscription)}/resourceGroups/${e(ref.group)}` +
    `/providers/Microsoft.Scheduler/jobCollections/${e(ref.collection)}`
  );
}

export function jobPath(ref: Ref): string {
  return `${collectionPath(ref)}/jobs/${encodeURIComponent(ref.job ?? "")}`;
}

// ---------------------------------------------------------------------------------------------- client

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** The field an ARM validation error names: its message starts with the JSON path ("properties.x.y: ..."). A
   * tag's path holds its name, which may hold any character ARM allows (spaces, colons, Unicode): an error of
   * a tag names ``properties.tags``. */
  get field(): string | null {
    if (this.status !== 400 && this.status !== 409) return null;
    if (/^properties\.tags(?::\s|\.)/.test(this.message)) return "properties.tags";
    const match = /^(properties(?:\.[A-Za-z0-9_$-]+|\[\d+\])*|[a-z][A-Za-z]*):\s/.exec(this.message);
    return match ? match[1] : null;
  }
}

/** Called when the API answers 401: the key is gone or no longer valid. */
let onUnauthorized: (error: ApiError) => void = () => {};
export function whenUnauthorized(handler: (error: ApiError) => void): void {
  onUnauthorized = handler;
}

export class Api {
  /** ``reportUnauthorized``: whether a 401 signs the page out (not while a key is being tried). */
  constructor(
    readonly session: Session,
    private readonly reportUnauthorized = true,
  ) {}

  private async call(method: string, url: string, body?: unknown): Promise<unknown> {
    return (await this.exchange(method, url, body)).data;
  }

  /** One request: the answer's JSON and its ETag; an ARM error answer throws an ApiError. */
  private async exchange(
    method: string,
    url: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<{ data: unknown; etag: string | null }> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.session.key}`, Accept: "application/json", ...extra };
    const init: RequestInit = { method, headers, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await fetch(method === "GET" ? readUrl(url) : url, init);
    } catch {
      throw new ApiError(0, "NetworkError", "the scheduler did not answer (is it running?)");
    }
    const text = await response.text();
    let data: unknown = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!response.ok) {
      const error = (data as { error?: { code?: string; message?: string } } | null)?.error;
      const failure = new ApiError(
        response.status,
        error?.code ?? `HTTP${response.status}`,
        error?.message ?? `the scheduler answered ${response.status} ${response.statusText}`,
      );
      if (response.status === 401 && this.reportUnauthorized) onUnauthorized(failure);
      throw failure;
    }
    return { data, etag: response.headers.get("ETag") };
  }

  private arm(path: string, query: Record<string, string> = {}): string {
    const params = new URLSearchParams({ "api-version": API_VERSION, ...query });
    return `${path}?${params.toString()}`;
  }

  /** Every item of a list, following nextLink (same origin: only its path and query are used; a nextLink
   * names the read route when the list was read through it, and one that names the management API's own
   * path is read through the read route too, by ``exchange``). */
  private async list<T>(url: string, limit = 1000): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined = url;
    while (next && items.length < limit) {
      const page = (await this.call("GET", next)) as { value: T[]; nextLink?: string };
      items.push(...page.value);
      next = page.nextLink ? sameOrigin(page.nextLink) : undefined;
    }
    return items;
  }

  collections(): Promise<Collection[]> {
    const sub = encodeURIComponent(this.session.subscription);
    return this.list<Collection>(this.arm(`/subscriptions/${sub}/providers/Microsoft.Scheduler/jobCollections`));
  }

  /** The jobs of a collection; ``filter``: the API's ``$filter`` (api-version 2026-12-01-preview: clauses
   * joined by ``and``, see :func:`jobFilter`), applied by the service. A filter it refuses is a 400 whose
   * message starts with ``$filter:``. */
  jobs(collection: Ref, filter = ""): Promise<Job[]> {
    return this.list<Job>(this.arm(`${collectionPath(collection)}/jobs`, filter ? { $filter: filter } : {}));
  }

  /** One job collection (an ApiError 404 when the resource group has none of the name; names are compared
   * without regard to case). */
  async collection(ref: Ref): Promise<Collection> {
    return (await this.call("GET", this.arm(collectionPath(ref)))) as Collection;
  }

  /** Create a job collection, never replacing one: an ApiError 409 naming ``jobCollectionName`` when the
   * resource group has one of the name already (any casing).
   *
   * NOT ATOMIC: the service does not honour If-None-Match (its PUT reads If-Match only, and "If-Match: *" means
   * "only if it exists"), so the page creates the collection only after a GET answered 404. Another writer
   * could still create the same collection between the two calls; this PUT would then replace its location
   * and plan (never its jobs, and the service refuses a plan its jobs do not fit). */
  async createCollection(ref: Ref, body: CollectionDefinition): Promise<Collection> {
    let existing: Collection | null = null;
    try {
      existing = await this.collection(ref);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 404) throw error;
    }
    if (existing) {
      const as = existing.name !== ref.collection ? ` (as ${existing.name})` : "";
      throw new ApiError(
        409,
        "Conflict",
        `jobCollectionName: a job collection named ${ref.collection} already exists in resource group ${ref.group}${as}`,
      );
    }
    return (await this.call("PUT", this.arm(collectionPath(ref)), body)) as Collection;
  }

  async job(ref: Ref): Promise<Job> {
    return (await this.call("GET", this.arm(jobPath(ref)))) as Job;
  }

  /** The job and its ETag (the version an edit is guarded by, with If-Match). */
  async jobVersion(ref: Ref): Promise<{ job: Job; etag: string | null }> {
    const { data, etag } = await this.exchange("GET", this.arm(jobPath(ref)));
    return { job: data as Job, etag };
  }

  /** Create or replace a job (PUT). ``ifMatch``: the ETag the edit started from; a job changed meanwhile
   * gives 412. */
  async putJob(ref: Ref, body: unknown, ifMatch: string | null): Promise<{ job: Job; etag: string | null }> {
    const { data, etag } = await this.exchange("PUT", this.arm(jobPath(ref)), body, ifMatch ? { "If-Match": ifMatch } : {});
    return { job: data as Job, etag };
  }

  /** The dry run of a PUT: validated as the PUT is, its next occurrences and what happens to its secrets. */
  async previewJob(ref: Ref, body: unknown, count = 10): Promise<JobPreview> {
    const path = jobPath(ref).slice(1);
    return (await this.call("POST", `/dashboard/api/preview/${path}?count=${count}`, body)) as JobPreview;
  }

  /** The caller's role in the subscription; null when the scheduler is a version without the route. */
  async access(): Promise<Access | null> {
    const sub = encodeURIComponent(this.session.subscription);
    try {
      return (await this.call("GET", `/dashboard/api/access/subscriptions/${sub}/providers/Microsoft.Scheduler/jobCollections`)) as Access;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  /** The newest ``top`` history rows (newest first), at most 100 per page. */
  history(ref: Ref, top = 100, limit = top): Promise<HistoryRow[]> {
    return this.list<HistoryRow>(this.arm(`${jobPath(ref)}/history`, { $top: String(Math.min(top, 100)) }), limit);
  }

  async run(ref: Ref): Promise<void> {
    await this.call("POST", this.arm(`${jobPath(ref)}/run`));
  }

  /** Run the occurrence of the history row ``historyId`` (its ``name``, an execution id) again now: the
   * management API's replay (POST, api-version 2026-12-01-preview). A Reader's key is refused (an ApiError
   * 403), an unknown row or job is an ApiError 404. An answer without the occurrence and the execution id is
   * an ApiError too. */
  async rerun(ref: Ref, historyId: string): Promise<Replay> {
    const data = (await this.call("POST", this.arm(`${jobPath(ref)}/history/${encodeURIComponent(historyId)}/rerun`))) as Partial<Replay> | null;
    if (typeof data?.scheduledTime !== "string" || typeof data.executionId !== "string") {
      throw new ApiError(0, "InvalidAnswer", "the scheduler accepted the re-run but did not say which execution it started");
    }
    return { scheduledTime: data.scheduledTime, executionId: data.executionId };
  }

  async setState(ref: Ref, state: "Enabled" | "Disabled"): Promise<Job> {
    return (await this.call("PATCH", this.arm(jobPath(ref)), { properties: { state } })) as Job;
  }

  async remove(ref: Ref): Promise<void> {
    await this.call("DELETE", this.arm(jobPath(ref)));
  }

  /** The status API; null when the scheduler is a version without it (it answers 404 there). */
  async status(): Promise<ServiceStatus | null> {
    const sub = encodeURIComponent(this.session.subscription);
    const url = `/dashboard/api/status/subscriptions/${sub}/providers/Microsoft.Scheduler/jobCollections`;
    try {
      return (await this.call("GET", url)) as ServiceStatus;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  async insight(ref: Ref, count = 10): Promise<JobInsight> {
    const path = jobPath(ref).slice(1);
    return (await this.call("GET", `/dashboard/api/job/${path}?count=${count}`)) as JobInsight;
  }
}

/** An OData string literal: in single quotes, a quote inside doubled. */
export function odataString(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** The ``$filter`` of a collection's jobs: every tag (name, value) and the last outcome must match (an empty
 * string: no filter). A tag name the filter cannot hold (white space, a quote) is sent as it is, for the
 * service to refuse and name. */
export function jobFilter(tags: [string, string][], lastOutcome: string): string {
  const clauses = tags.map(([name, value]) => `tags/${name} eq ${odataString(value)}`);
  if (lastOutcome) clauses.push(`lastOutcome eq ${odataString(lastOutcome)}`);
  return clauses.join(" and ");
}

function sameOrigin(link: string): string {
  const url = new URL(link, window.location.href);
  return url.pathname + url.search;
}

/** Where a GET of ``url`` is sent: a management API path (/subscriptions/...) through the dashboard's read
 * route; any other (the dashboard's own API, a nextLink that names the read route already) as it is. */
export function readUrl(url: string): string {
  return url.toLowerCase().startsWith("/subscriptions/") ? READ_ROUTE + url : url;
}
