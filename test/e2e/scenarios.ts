// Scenarios that more than one test file runs, on one process or on several sharing a
// database: a write load that records every acknowledgement (and the check that each
// acknowledged message is stored unchanged), and a slow workflow contended for by two
// processes (and the check that no two of its runs overlap).
import { expect } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { MessageRecord } from "./api";
import { lines, waitFor, type Server, type Spawned, type TestDatabase } from "./harness";

const REQUEST_TIMEOUT_MS = 10_000;

/** The contacts of the write load. */
export const LOAD_PHONES = Array.from({ length: 12 }, (_, i) => `+1415555${3000 + i}`);

/** A message the server acknowledged (200 with its id and timestamp). */
export interface Ack {
  id: string;
  phone: string;
  message: string;
  direction: "outbound" | "inbound";
  timestamp: string;
  round: number;
}

/** Set `stopped` to end the load; errors before that are failures, after it what a kill looks like. */
export interface LoadState {
  stopped: boolean;
  errorsBeforeStop: string[];
}

/** POST of a JSON body with the server's key, bounded at 10 s. */
export async function post(server: Server, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(server.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: res.status, json: await res.json() };
}

/**
 * `workers` clients send (two in three requests) and store inbound messages (one in three,
 * network ids unique to `round`) until `state.stopped`; every acknowledged message goes
 * into `acks`. A client ends at its first connection error.
 */
export function writeLoad(server: Server, round: number, acks: Map<string, Ack>, state: LoadState, workers = 48): Promise<void[]> {
  const worker = async (w: number) => {
    for (let i = 0; !state.stopped; i++) {
      const phone = LOAD_PHONES[(w + i) % LOAD_PHONES.length] as string;
      const inbound = (w + i) % 3 === 0;
      const message = `load r${round} w${w} i${i} ${inbound ? "in" : "out"} ✓`;
      try {
        const res = inbound
          ? await post(server, "/webhooks/loopback", { phone, message, id: `load-${round}-${w}-${i}` })
          : await post(server, "/api/send", { phone, message });
        if (res.status === 200 && res.json?.success === true && typeof res.json.message_id === "string") {
          acks.set(res.json.message_id, { id: res.json.message_id, phone, message, direction: inbound ? "inbound" : "outbound", timestamp: res.json.timestamp, round });
        } else if (!state.stopped) {
          state.errorsBeforeStop.push(`${inbound ? "inbound" : "send"} → ${res.status} ${JSON.stringify(res.json).slice(0, 200)}`);
        }
      } catch (err) {
        if (!state.stopped) state.errorsBeforeStop.push(`${inbound ? "inbound" : "send"}: ${String(err)}`);
        return;
      }
    }
  };
  return Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
}

/** Every message exchanged with `phone`, page by page. */
export async function fullHistory(server: Server, phone: string): Promise<MessageRecord[]> {
  const all: MessageRecord[] = [];
  for (let offset = 0; ; offset += 100) {
    const res = await fetch(`${server.url}/api/messages/${encodeURIComponent(phone)}?limit=100&offset=${offset}`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { messages: MessageRecord[]; total: number };
    all.push(...body.messages);
    if (offset + 100 >= body.total) return all;
  }
}

/** Every message of the load's contacts, by id, as `server` shows them. */
export async function storedLoad(server: Server): Promise<Map<string, MessageRecord>> {
  const all = new Map<string, MessageRecord>();
  for (const phone of LOAD_PHONES) for (const m of await fullHistory(server, phone)) all.set(m.id, m);
  return all;
}

/** Each acknowledged message stored, unchanged, in its final status (loopback delivers a send before answering). */
export function compareAcks(acks: Map<string, Ack>, stored: Map<string, MessageRecord>): { missing: string[]; changed: string[] } {
  const missing: string[] = [];
  const changed: string[] = [];
  for (const ack of acks.values()) {
    const m = stored.get(ack.id);
    if (!m) {
      missing.push(`round ${ack.round}: ${ack.direction} ${ack.id} ${JSON.stringify(ack.message)}`);
      continue;
    }
    const expected = { phone: ack.phone, message: ack.message, direction: ack.direction, timestamp: ack.timestamp, status: ack.direction === "outbound" ? "delivered" : "received" };
    const actual = { phone: m.phone, message: m.message, direction: m.direction, timestamp: m.timestamp, status: m.status };
    if (JSON.stringify(expected) !== JSON.stringify(actual)) changed.push(`${ack.id}: acknowledged ${JSON.stringify(expected)}, stored ${JSON.stringify(actual)}`);
  }
  return { missing, changed };
}

/** What a process running the slow workflow shows: its output, and a graceful stop. */
type Contender = Pick<Spawned, "stdout" | "stop">;

/**
 * Writes the workflow `slow` into `wfDir`: every second, a run of 1.5 s that writes its
 * start and end (process id, token, time) into `trace` and logs its process id.
 */
export function writeSlowWorkflow(wfDir: string, trace: string): void {
  writeFileSync(
    join(wfDir, "slow.ts"),
    `import { appendFileSync } from "node:fs";
export default {
  name: "slow",
  schedule: "* * * * * *",
  async run(ctx) {
    const token = crypto.randomUUID();
    appendFileSync(${JSON.stringify(trace)}, ["start", process.pid, token, Date.now()].join(" ") + "\\n");
    ctx.log.info("slow run", { pid: process.pid });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    appendFileSync(${JSON.stringify(trace)}, ["end", process.pid, token, Date.now()].join(" ") + "\\n");
  },
};
`,
  );
}

interface Interval {
  who: string;
  token: string;
  start: number;
  end: number;
}

/** Fails naming the first two intervals (sorted by start) that overlap. */
function expectNoOverlap(intervals: Interval[], what: string): void {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (cur.start < prev.end) {
      throw new Error(`${what}: run ${cur.token} (${cur.who}) started at ${cur.start}, before run ${prev.token} (${prev.who}) ended at ${prev.end}`);
    }
  }
}

/**
 * Two processes on `db` that both load the slow workflow contend for its ticks until four
 * runs have ended; then the one that ran last stops (gracefully) and the other must run it
 * twice more, then stops too. No two runs overlap, in the trace or in `workflow_runs`, and
 * both processes ran it.
 */
export async function expectRunsNeverOverlap(db: TestDatabase, trace: string, a: Contender, b: Contender): Promise<void> {
  const trail = async () => lines(await Bun.file(trace).text().catch(() => ""));
  const ended = (t: string[]) => t.filter((l) => l.startsWith("end ")).map((l) => l.split(" ")[1]!);
  const context = () => `--- trace ---\n${existsSync(trace) ? readFileSync(trace, "utf8") : ""}\n--- a ---\n${a.stdout.slice(-2000)}\n--- b ---\n${b.stdout.slice(-2000)}`;
  await waitFor("four runs", 20_000, async () => ended(await trail()).length >= 4, context);

  const lastPid = ended(await trail()).at(-1)!;
  const ranIn = (out: string) => out.split("\n").some((l) => l.includes('"msg":"slow run"') && new RegExp(`"pid":${lastPid}[,}]`).test(l));
  const [first, second] = ranIn(a.stdout) ? [a, b] : [b, a];
  expect(ranIn(first.stdout)).toBe(true);
  expect(await first.stop()).toBe(0);
  const before = ended(await trail()).length;
  await waitFor(
    "the other process to run the workflow twice after the first stopped",
    15_000,
    async () => ended(await trail()).slice(before).filter((p) => p !== lastPid).length >= 2,
    context,
  );
  expect(await second.stop()).toBe(0);

  const byToken = new Map<string, Partial<Interval>>();
  for (const line of await trail()) {
    const [kind, pid, token, at] = line.split(" ");
    const entry = byToken.get(token!) ?? { who: `pid ${pid}`, token: token! };
    if (kind === "start") entry.start = Number(at);
    else entry.end = Number(at);
    byToken.set(token!, entry);
  }
  const intervals = [...byToken.values()] as Interval[];
  // Every run that started also ended (the graceful stops waited for them).
  for (const i of intervals) expect({ token: i.token, ended: Number.isFinite(i.end) }).toEqual({ token: i.token, ended: true });
  expect(intervals.length).toBeGreaterThanOrEqual(5);

  expectNoOverlap(intervals, "runs across both processes (lease)");
  const pids = [...new Set(intervals.map((i) => i.who))];
  for (const pid of pids) expectNoOverlap(intervals.filter((i) => i.who === pid), `runs within ${pid} (protect)`);
  // Both processes ran the workflow (the second at least once the first had stopped).
  expect(pids).toHaveLength(2);

  // The run records agree: one per run in the file, all finished, none overlapping.
  const rows = await db.query<{ id: string; status: string; startedAt: number; endedAt: number | null }>(
    `SELECT id, status, started_at AS "startedAt", ended_at AS "endedAt" FROM workflow_runs WHERE workflow = 'slow' ORDER BY started_at`,
  );
  expect(rows.length).toBe(intervals.length);
  expect(rows.filter((r) => r.status !== "ok" || r.endedAt === null)).toEqual([]);
  expectNoOverlap(
    rows.map((r) => ({ who: "workflow_runs", token: r.id, start: r.startedAt, end: r.endedAt! })),
    "workflow_runs rows",
  );
}
