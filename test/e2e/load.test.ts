/**
 * Load: 200 concurrent clients on 127.0.0.1 for LOAD_SECONDS (default 30), mixing every
 * route: send, inbound webhooks (unique ids, and some ids shared between clients at the
 * same moment), history, poll (with the cursor rule of docs/api.md), health.
 *
 * Asserted: no 5xx, no network error, no other non-2xx either (the limiter is off and
 * every request is valid), the invariants of each answer, and afterwards every
 * acknowledged message is in its contact's history, exactly once, unchanged, with its
 * acknowledged timestamp; a cursor poller saw every inbound message exactly once.
 * Requests/s and latency percentiles are printed, never asserted.
 *
 *   LOAD_SECONDS=60 LOAD_CLIENTS=200 LOAD_MAX_ITERATIONS=100000 bun test test/e2e/load.test.ts
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { startServer, type Server } from "./harness";
import type { MessageRecord } from "./api";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const LOAD_SECONDS = positive("LOAD_SECONDS", 30);
const CLIENTS = positive("LOAD_CLIENTS", 200);
const MAX_ITERATIONS = positive("LOAD_MAX_ITERATIONS", 20_000);
const REQUEST_TIMEOUT_MS = 30_000;
const PHONES = Array.from({ length: 50 }, (_, i) => `+1415555${2000 + i}`);
const SHARED_IDS = 300;

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number (got ${raw})`);
  return n;
}


interface Ack {
  id: string;
  phone: string;
  message: string;
  direction: "outbound" | "inbound";
  timestamp: string;
}

const pick = <T,>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

class Stats {
  latencies: number[] = [];
  statuses = new Map<string, number>();
  networkErrors: string[] = [];
  serverErrors: string[] = [];
  otherNon2xx: string[] = [];
  violations: string[] = [];
  requests = 0;

  violation(text: string) {
    if (this.violations.length < 50) this.violations.push(text);
    else if (this.violations.length === 50) this.violations.push("… more violations not shown");
  }
}

let server: Server;
const stats = new Stats();
const acks = new Map<string, Ack>();
const sharedAcks = new Map<number, Set<string>>();

/** One request, timed; the parsed body on 2xx, null otherwise (and the failure counted). */
async function request(op: string, method: string, path: string, body?: unknown): Promise<any | null> {
  const started = performance.now();
  stats.requests++;
  let res: Response;
  let text: string;
  try {
    res = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${server.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (err) {
    if (stats.networkErrors.length < 20) stats.networkErrors.push(`${op} ${method} ${path}: ${String(err)}`);
    else stats.networkErrors.push("…");
    return null;
  }
  stats.latencies.push(performance.now() - started);
  const key = `${op} ${res.status}`;
  stats.statuses.set(key, (stats.statuses.get(key) ?? 0) + 1);
  if (res.status >= 500) {
    stats.serverErrors.push(`${op} ${method} ${path} → ${res.status} ${text.slice(0, 200)}`);
    return null;
  }
  if (res.status < 200 || res.status >= 300) {
    stats.otherNon2xx.push(`${op} ${method} ${path} → ${res.status} ${text.slice(0, 200)}`);
    return null;
  }
  try {
    return JSON.parse(text);
  } catch {
    stats.violation(`${op}: 2xx body is not JSON: ${text.slice(0, 100)}`);
    return null;
  }
}

function recordAck(ack: Ack) {
  const earlier = acks.get(ack.id);
  if (earlier && (earlier.message !== ack.message || earlier.phone !== ack.phone || earlier.direction !== ack.direction)) {
    stats.violation(`message_id ${ack.id} acknowledged for two different messages: ${JSON.stringify(earlier)} and ${JSON.stringify(ack)}`);
  }
  acks.set(ack.id, ack);
}

function checkAckShape(op: string, body: any): body is { success: true; message_id: string; timestamp: string } {
  const ok = body?.success === true && typeof body.message_id === "string" && typeof body.timestamp === "string";
  if (!ok) stats.violation(`${op}: acknowledgement without success/message_id/timestamp: ${JSON.stringify(body).slice(0, 200)}`);
  return ok;
}

const byNewest = (a: MessageRecord, b: MessageRecord) => (a.timestamp === b.timestamp ? (a.id < b.id ? 1 : -1) : a.timestamp < b.timestamp ? 1 : -1);

async function client(c: number, deadline: number) {
  let cursor: string | undefined;
  const seen = new Set<string>();
  for (let i = 0; i < MAX_ITERATIONS && performance.now() < deadline; i++) {
    const roll = Math.random();
    const phone = pick(PHONES);
    if (roll < 0.3) {
      const message = `load c${c} i${i} ${pick(["", "é", "🙂", "مرحبا", "\n\t"])}${Math.random().toString(36).slice(2)}`;
      const body = await request("send", "POST", "/api/send", { phone, message });
      if (body && checkAckShape("send", body)) recordAck({ id: body.message_id, phone, message, direction: "outbound", timestamp: body.timestamp });
    } else if (roll < 0.55) {
      if (Math.random() < 0.15) {
        // Several clients deliver the same network id at about the same moment: one message.
        const k = Math.floor(Math.random() * SHARED_IDS);
        const sharedPhone = PHONES[k % PHONES.length] as string;
        const message = `shared inbound ${k}`;
        const body = await request("inbound-shared", "POST", "/webhooks/loopback", { phone: sharedPhone, message, id: `shared-${k}` });
        if (body && checkAckShape("inbound-shared", body)) {
          recordAck({ id: body.message_id, phone: sharedPhone, message, direction: "inbound", timestamp: body.timestamp });
          let ids = sharedAcks.get(k);
          if (!ids) sharedAcks.set(k, (ids = new Set()));
          ids.add(body.message_id);
        }
      } else {
        const message = `inbound c${c} i${i} ${Math.random().toString(36).slice(2)}`;
        const body = await request("inbound", "POST", "/webhooks/loopback", { phone, message, id: `load-${c}-${i}` });
        if (body && checkAckShape("inbound", body)) recordAck({ id: body.message_id, phone, message, direction: "inbound", timestamp: body.timestamp });
      }
    } else if (roll < 0.75) {
      const limit = pick([1, 10, 50, 100, 500]);
      const offset = pick([0, 0, 0, 5, 50]);
      const body = await request("history", "GET", `/api/messages/${encodeURIComponent(phone)}?limit=${limit}&offset=${offset}`);
      if (body) {
        const messages = body.messages as MessageRecord[];
        if (body.success !== true || !Array.isArray(messages)) stats.violation(`history: bad body ${JSON.stringify(body).slice(0, 200)}`);
        else {
          if (body.limit !== Math.min(limit, 100) || body.offset !== offset) stats.violation(`history: limit/offset ${body.limit}/${body.offset} for ${limit}/${offset}`);
          if (messages.length > Math.min(limit, 100)) stats.violation(`history: ${messages.length} messages for limit ${limit}`);
          // Page and total come from one snapshot: the page is exactly what total leaves.
          const expected = typeof body.total === "number" ? Math.max(0, Math.min(Math.min(limit, 100), body.total - offset)) : -1;
          if (messages.length !== expected) stats.violation(`history: ${messages.length} messages at offset ${offset} limit ${limit} of total ${body.total}`);
          if (messages.some((m) => m.phone !== phone)) stats.violation(`history of ${phone} holds another phone's message`);
          const sorted = [...messages].sort(byNewest);
          if (sorted.some((m, j) => m.id !== messages[j]?.id)) stats.violation(`history of ${phone} is not newest first`);
        }
      }
    } else if (roll < 0.92) {
      // The cursor rule: pass the last timestamp as `since`; never a message twice.
      const byPhone = Math.random() < 0.3;
      const query = byPhone ? `phone=${encodeURIComponent(phone)}&limit=20` : cursor ? `since=${encodeURIComponent(cursor)}` : "";
      const body = await request("poll", "GET", `/api/messages/poll${query ? `?${query}` : ""}`);
      if (body) {
        const messages = body.messages as MessageRecord[];
        if (body.success !== true || !Array.isArray(messages) || body.count !== messages.length || typeof body.has_more !== "boolean") {
          stats.violation(`poll: bad body ${JSON.stringify(body).slice(0, 200)}`);
        } else {
          if (messages.some((m) => m.direction !== "inbound" || m.status !== "received")) stats.violation("poll: a message that is not inbound/received");
          if (messages.some((m, j) => j > 0 && m.timestamp <= (messages[j - 1] as MessageRecord).timestamp)) stats.violation("poll: timestamps not strictly ascending");
          if (byPhone && messages.some((m) => m.phone !== phone)) stats.violation(`poll?phone=${phone}: another phone's message`);
          if (!byPhone) {
            for (const m of messages) {
              if (seen.has(m.id)) stats.violation(`poll cursor: client ${c} got ${m.id} twice`);
              seen.add(m.id);
            }
            const last = messages[messages.length - 1];
            if (last) cursor = last.timestamp;
          }
        }
      }
    } else {
      const body = await request("health", "GET", "/health");
      if (body && body.status !== "ok") stats.violation(`health: ${JSON.stringify(body)}`);
    }
  }
}

/** A poller that follows the cursor through the whole run, then drains. */
async function cursorPoller(deadline: number, seen: Map<string, number>) {
  let cursor: string | undefined;
  const pollOnce = async (): Promise<boolean> => {
    const body = await request("poll-cursor", "GET", `/api/messages/poll${cursor ? `?since=${encodeURIComponent(cursor)}` : ""}`);
    if (!body || !Array.isArray(body.messages)) return false;
    for (const m of body.messages as MessageRecord[]) seen.set(m.id, (seen.get(m.id) ?? 0) + 1);
    const last = (body.messages as MessageRecord[]).at(-1);
    if (last) cursor = last.timestamp;
    return body.has_more === true;
  };
  while (performance.now() < deadline) {
    const more = await pollOnce();
    if (!more) await Bun.sleep(25);
  }
  return pollOnce;
}

async function fullHistory(phone: string): Promise<{ messages: MessageRecord[]; total: number }> {
  const all: MessageRecord[] = [];
  let total = -1;
  for (let offset = 0; ; offset += 100) {
    const body = await request("verify", "GET", `/api/messages/${encodeURIComponent(phone)}?limit=100&offset=${offset}`);
    if (!body) throw new Error(`history of ${phone} at offset ${offset} failed: ${stats.serverErrors.at(-1) ?? stats.otherNon2xx.at(-1) ?? stats.networkErrors.at(-1)}`);
    if (total !== -1 && body.total !== total) throw new Error(`history total of ${phone} changed while paging with no writers: ${total} → ${body.total}`);
    total = body.total as number;
    all.push(...(body.messages as MessageRecord[]));
    if (offset + 100 >= total) return { messages: all, total };
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

beforeAll(async () => {
  server = await startServer({ env: { RATE_LIMIT_PER_MINUTE: "0", OPENAI_API_KEY: "" } });
}, 60_000);

afterAll(async () => {
  await server?.stop("SIGTERM");
  await server?.db.cleanup();
}, 30_000);

test(
  `${CLIENTS} concurrent clients for ${LOAD_SECONDS} s: no 5xx, no network error, every acknowledged message kept`,
  async () => {
    const started = performance.now();
    const deadline = started + LOAD_SECONDS * 1000;
    const pollerSeen = new Map<string, number>();
    const [drain] = await Promise.all([
      cursorPoller(deadline, pollerSeen),
      ...Array.from({ length: CLIENTS }, (_, c) => client(c, deadline)),
    ]);
    const elapsed = (performance.now() - started) / 1000;
    const loadRequests = stats.requests;

    const sorted = [...stats.latencies].sort((a, b) => a - b);
    const summary = [...stats.statuses.entries()].sort().map(([k, n]) => `${k}:${n}`).join(" ");
    console.log(
      `load: ${CLIENTS} clients, ${elapsed.toFixed(1)} s, ${loadRequests} requests, ${(loadRequests / elapsed).toFixed(0)} req/s, ` +
        `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${percentile(sorted, 100).toFixed(1)} ms; ` +
        `${acks.size} acknowledged messages; ${summary}`,
    );

    expect(stats.networkErrors).toEqual([]);
    expect(stats.serverErrors.slice(0, 20)).toEqual([]);
    expect(stats.otherNon2xx.slice(0, 20)).toEqual([]);
    expect(stats.violations).toEqual([]);
    expect(acks.size).toBeGreaterThan(CLIENTS);

    // The same network id from several clients: one message, one message_id.
    const split = [...sharedAcks.entries()].filter(([, ids]) => ids.size > 1).map(([k, ids]) => `shared-${k}: ${[...ids].join(", ")}`);
    expect(split).toEqual([]);

    // Every acknowledged message is in its contact's history, exactly once and unchanged;
    // no message is there that nobody acknowledged (every request was acknowledged).
    const missing: string[] = [];
    const changed: string[] = [];
    const extra: string[] = [];
    const timestamps = new Set<string>();
    let stored = 0;
    for (const phone of PHONES) {
      const { messages, total } = await fullHistory(phone);
      expect(messages.length).toBe(total);
      const ids = new Set<string>();
      for (const m of messages) {
        if (ids.has(m.id)) changed.push(`${m.id} listed twice in the history of ${phone}`);
        ids.add(m.id);
        timestamps.add(m.timestamp);
        const ack = acks.get(m.id);
        if (!ack) {
          extra.push(`${m.id} (${m.direction} ${JSON.stringify(m.message)}) in the history of ${phone}`);
          continue;
        }
        const expected = { id: ack.id, phone: ack.phone, message: ack.message, direction: ack.direction, timestamp: ack.timestamp, status: ack.direction === "outbound" ? "delivered" : "received" };
        const actual = { id: m.id, phone: m.phone, message: m.message, direction: m.direction, timestamp: m.timestamp, status: m.status };
        if (JSON.stringify(actual) !== JSON.stringify(expected)) changed.push(`expected ${JSON.stringify(expected)}, stored ${JSON.stringify(actual)}`);
      }
      stored += messages.length;
      for (const ack of acks.values()) if (ack.phone === phone && !ids.has(ack.id)) missing.push(`${ack.direction} ${ack.id} to ${phone}`);
    }
    console.log(`load: verified ${stored} stored messages against ${acks.size} acknowledgements`);
    expect(missing.slice(0, 20)).toEqual([]);
    expect(changed.slice(0, 20)).toEqual([]);
    expect(extra.slice(0, 20)).toEqual([]);
    expect(stored).toBe(acks.size);
    // One clock: every stored message has its own timestamp (docs/api.md).
    expect(timestamps.size).toBe(stored);

    // The cursor poller, drained, saw every inbound message exactly once.
    for (let pages = 0; (await drain()) && pages < 10_000; pages++);
    const inbound = [...acks.values()].filter((a) => a.direction === "inbound");
    const unseen = inbound.filter((a) => !pollerSeen.has(a.id)).map((a) => a.id);
    const twice = [...pollerSeen.entries()].filter(([, n]) => n > 1).map(([id, n]) => `${id} ×${n}`);
    expect(unseen.slice(0, 20)).toEqual([]);
    expect(twice.slice(0, 20)).toEqual([]);
    expect(stats.networkErrors).toEqual([]);
    expect(stats.serverErrors.slice(0, 20)).toEqual([]);
  },
  LOAD_SECONDS * 1000 + 60_000,
);
