// A worker's own listener (docs/operations.md#a-workers-health-and-metrics): with WORKER_PORT,
// `bun run start worker` serves /health, /health/live, /health/ready and /metrics with the
// API's answers, and nothing else; its metrics count the runs it made; ready is 503 from
// SIGTERM on, while its runs finish. Without WORKER_PORT nothing listens; in `all` mode it is
// ignored with a warning.
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import parse, { type MetricFamily } from "parse-prometheus-text-format";
import { call, newPhone } from "./api";
import { fileServers, lines, spawnServer, testDatabase, waitFor, type Server } from "./harness";

setDefaultTimeout(60_000);

const TOKEN = "metrics_" + "w".repeat(24);
const NO_ROUTE = (method: string, path: string) => ({ success: false, error: { code: "NOT_FOUND", message: `no route ${method} ${path}` } });

const files = fileServers();
/** The messages of a process's log lines, in order. */
const logged = (out: string) => lines(out).flatMap((l) => (l.startsWith("{") ? [(JSON.parse(l) as { msg: string }).msg] : []));

async function scrape(server: Server): Promise<MetricFamily[]> {
  const res = await server.fetch("/metrics", {}, TOKEN);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`scrape: ${res.status} ${text}`);
  expect(res.headers.get("content-type")).toStartWith("text/plain");
  return parse(text);
}

/** The sum of a metric's samples whose labels include `labels`; undefined when the metric is absent. */
function valueOf(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.find((f) => f.name === name);
  if (!family) return undefined;
  return family.metrics
    .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    .reduce((sum, m) => sum + Number(m.value), 0);
}

/** A folder of workflow files in the database's folder. */
function workflowsDir(dir: string, files: Record<string, string>): string {
  const wf = join(dir, "workflows");
  mkdirSync(wf, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(wf, name), text);
  return wf;
}

describe("a worker with WORKER_PORT", () => {
  let worker: Server;
  let api: Server;

  beforeAll(async () => {
    const db = files.track(await testDatabase());
    const wf = workflowsDir(db.dir, { "tally.ts": `export default { name: "tally", schedule: "* * * * * *", async run() {} };\n` });
    // An API process on the same database: the answers to compare with, and a scheduled send for the queue gauge.
    // Its WORKER_PORT is ignored (`all` mode).
    api = await files.boot({ db, env: { METRICS_TOKEN: TOKEN, WORKER_PORT: "0" } });
    worker = await files.boot({ db, mode: "worker", env: { METRICS_TOKEN: TOKEN, WORKER_PORT: "0", WORKFLOWS_DIR: wf } });
  });

  test("live, ready and /health answer 200 without a key, as the API's do", async () => {
    for (const path of ["/health/live", "/health/ready", "/health"]) {
      const res = await worker.fetch(path, {}, null);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(await res.json()).toEqual({ status: "ok" });
      // The API's edge: each answer names its request, as in its log line.
      const requestId = res.headers.get("x-request-id");
      expect(requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
      const requestLine = () => lines(worker.stdout).some((l) => l.startsWith("{") && (JSON.parse(l) as { requestId?: string }).requestId === requestId);
      await waitFor(`the request line of ${path}`, 5_000, async () => requestLine());
    }
    expect((await worker.fetch("/health/live", { method: "HEAD" }, null)).status).toBe(200);
  });

  test("/metrics without the token, with a wrong one or with the API key is the no-route 404", async () => {
    const attempts: [string, string | null][] = [
      ["no token", null],
      ["a wrong token", TOKEN.slice(0, -1) + "x"],
      ["the API key", worker.apiKey],
    ];
    for (const [what, key] of attempts) {
      const res = await worker.fetch("/metrics", {}, key);
      expect({ what, status: res.status }).toEqual({ what, status: 404 });
      expect(await res.json()).toEqual(NO_ROUTE("GET", "/metrics"));
    }
  });

  test("every other path, the API's and the console's too, is the API's no-route 404", async () => {
    const requests: [string, string][] = [
      ["GET", "/"],
      ["GET", "/health/nothing"],
      ["POST", "/api/send"],
      ["GET", `/api/messages/${encodeURIComponent(newPhone())}`],
      ["GET", "/trpc/workflows.list"],
      ["GET", "/console"],
      ["GET", "/openapi.json"],
      ["POST", "/mcp"],
    ];
    for (const [method, path] of requests) {
      const res = await worker.fetch(path, { method, ...(method === "POST" ? { body: "{}", headers: { "content-type": "application/json" } } : {}) });
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
      expect(await res.json()).toEqual(NO_ROUTE(method, path));
    }
  });

  test("a method the path does not take gets the API's 405, with the same Allow", async () => {
    for (const server of [worker, api]) {
      const res = await server.fetch("/health/ready", { method: "POST" }, null);
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      expect(await res.json()).toEqual({ success: false, error: { code: "METHOD_NOT_SUPPORTED", message: "method POST not allowed on /health/ready; use GET, HEAD" } });
    }
  });

  test("with the token, a scrape counts the worker's workflow runs and reads the database's queue", async () => {
    const scheduled = await call<{ status: string }>(api, "POST", "/api/send", {
      body: { phone: newPhone(), message: "next month", send_at: new Date(Date.now() + 30 * 86_400_000).toISOString() },
    });
    expect(scheduled.body.status).toBe("scheduled");
    // The API process runs no workflow (WORKFLOWS_DIR=off): every tally run is the worker's.
    const families = await waitFor("a tally run to be counted", 15_000, async () => {
      const now = await scrape(worker);
      return (valueOf(now, "textwire_workflow_runs_total", { workflow: "tally", result: "ok" }) ?? 0) >= 1 ? now : undefined;
    });
    const [runs] = await worker.db.query<{ n: number }>("SELECT count(*) AS n FROM workflow_runs WHERE workflow = 'tally'");
    expect(Number(runs!.n)).toBeGreaterThanOrEqual(1);
    expect(valueOf(families, "textwire_scheduled_messages_pending")).toBe(1);
    expect(valueOf(await scrape(api), "textwire_workflow_runs_total", { workflow: "tally" }) ?? 0).toBe(0);
    // Its own requests are counted by route template.
    expect(valueOf(families, "textwire_http_requests_total", { method: "GET", route: "/health/ready", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(valueOf(families, "textwire_http_requests_total", { route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1);
  });

  // Last: a blocked database may hold up a tally run.
  test("ready is 503 while the database takes no write; live stays 200", async () => {
    const block = await worker.db.blockWrites();
    try {
      const res = await worker.fetch("/health/ready", {}, null);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: "unavailable", reason: "database" });
      expect((await worker.fetch("/health/live", {}, null)).status).toBe(200);
    } finally {
      await block.release();
    }
    expect((await worker.fetch("/health/ready", {}, null)).status).toBe(200);
  });

  test("it logs its own listening line, and the `all` process warns that WORKER_PORT is ignored and listens once", () => {
    expect(lines(worker.stdout).filter((l) => l.includes("listening on"))).toHaveLength(1);
    expect(logged(api.stdout)).toContain("WORKER_PORT is used only by `bun run start worker`; ignored (health and metrics are on PORT)");
    expect(lines(api.stdout).filter((l) => l.includes("listening on"))).toHaveLength(1);
    expect(logged(worker.stdout).some((m) => m.startsWith("WORKER_PORT is used only"))).toBe(false);
  });
});

test("on SIGTERM, ready answers 503 while a workflow run is still in flight; the process exits 0 once it ends", async () => {
  const db = files.track(await testDatabase());
  const started = join(db.dir, "started");
  const release = join(db.dir, "release");
  // A run that holds until the test lets it go: the shutdown waits for it (up to 10 s).
  const hold = `import { existsSync, writeFileSync } from "node:fs";
export default {
  name: "hold",
  schedule: "* * * * * *",
  async run() {
    writeFileSync(${JSON.stringify(started)}, "");
    while (!existsSync(${JSON.stringify(release)})) await new Promise((r) => setTimeout(r, 20));
  },
};
`;
  const wf = workflowsDir(db.dir, { "hold.ts": hold });
  const worker = await files.boot({ db, mode: "worker", env: { WORKER_PORT: "0", WORKFLOWS_DIR: wf } });
  await waitFor("a hold run to start", 15_000, () => existsSync(started), () => worker.stdout);
  expect((await worker.fetch("/health/ready", {}, null)).status).toBe(200);
  worker.proc.kill("SIGTERM");
  const ready = await waitFor("ready to answer 503", 10_000, async () => {
    const res = await worker.fetch("/health/ready", {}, null);
    return res.status === 503 ? res : undefined;
  });
  expect(await ready.json()).toEqual({ status: "unavailable", reason: "shutting down" });
  expect((await worker.fetch("/health/live", {}, null)).status).toBe(200);
  // The run has not been let go: the process is still waiting for it.
  expect(worker.proc.exitCode).toBeNull();
  writeFileSync(release, "");
  expect(await worker.stop()).toBe(0);
  const msgs = logged(worker.stdout);
  expect(msgs).not.toContain("in-flight work did not finish in time; exiting");
  expect(msgs.at(-1)).toBe("stopped");
  const [run] = await db.query<{ status: string }>("SELECT status FROM workflow_runs WHERE workflow = 'hold'");
  expect(run?.status).toBe("ok");
});

test("without WORKER_PORT a worker listens nowhere", async () => {
  const db = files.track(await testDatabase());
  const wf = workflowsDir(db.dir, { "tally.ts": `export default { name: "tally", schedule: "0 0 1 1 *", async run() {} };\n` });
  const worker = await spawnServer({ db, mode: "worker", env: { METRICS_TOKEN: TOKEN, WORKFLOWS_DIR: wf } });
  try {
    await waitFor("the worker to schedule its workflow", 15_000, () => worker.stdout.includes("workflow tally scheduled"), () => worker.stdout + worker.stderr);
    expect(worker.stdout).not.toContain("listening on");
    expect(await worker.stop()).toBe(0);
  } finally {
    worker.kill();
  }
});
