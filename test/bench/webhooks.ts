/**
 * Outbound webhooks in `bun run bench` (test/bench/run.ts): events delivered per second to a
 * local receiver (Bun.serve on 127.0.0.1 in this process, answering 204 and counting
 * webhook-ids; one delivery in 50 is verified with `standardwebhooks`, so the receiver's own
 * CPU stays small).
 *
 * Two measurements on one Textwire (`bun run start`, ALLOW_PRIVATE_URLS=true):
 * - backlog: EVENTS inbound messages are stored first, then an endpoint is created and
 *   replayed from the start: the time from the replay's answer to the last delivery is pure
 *   delivery (claim, sign, POST, record).
 * - live: a second endpoint, then EVENTS more inbound messages sent by CONCURRENCY clients at
 *   once: the time from the first request to the last delivery at that endpoint is the whole
 *   path (store the message and its event, then deliver) while the API is loaded.
 */
import { Webhook } from "standardwebhooks";

export interface WebhookBenchResult {
  events: number;
  backlogSeconds: number;
  backlogPerSecond: number;
  liveSeconds: number;
  livePerSecond: number;
  /** Inbound messages stored per second during the live run. */
  liveWritesPerSecond: number;
  /** Deliveries that arrived more than once (at least once: allowed, counted). */
  duplicates: number;
  /** Deliveries whose signature did not verify (must be 0). */
  badSignatures: number;
}

const CONCURRENCY = 16;

export async function webhookDelivery(url: string, key: string, events: number, log: (m: string) => void): Promise<WebhookBenchResult> {
  const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const seen = new Map<string, Set<string>>();
  const secrets = new Map<string, Webhook>();
  let duplicates = 0;
  let badSignatures = 0;
  let sampled = 0;
  const done = new Map<string, () => void>();
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const endpoint = new URL(req.url).pathname.slice(1);
      const raw = await req.text();
      const id = req.headers.get("webhook-id") ?? "";
      if (sampled++ % 50 === 0) {
        try {
          secrets.get(endpoint)?.verify(raw, Object.fromEntries(req.headers));
        } catch {
          badSignatures++;
        }
      }
      const ids = seen.get(endpoint) ?? new Set<string>();
      seen.set(endpoint, ids);
      if (ids.has(id)) duplicates++;
      ids.add(id);
      if (ids.size === events) done.get(endpoint)?.();
      return new Response(null, { status: 204 });
    },
  });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, { method, headers: auth, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as any;
  };
  const subscribe = async (name: string) => {
    const { endpoint } = await api("POST", "/api/webhook-endpoints", { url: `http://127.0.0.1:${receiver.port}/${name}`, events: ["message.received"] });
    secrets.set(name, new Webhook(endpoint.secret));
    return endpoint.id as string;
  };
  const allArrived = (name: string, ms: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: ${seen.get(name)?.size ?? 0} of ${events} deliveries after ${ms / 1000} s`)), ms);
      done.set(name, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  /** EVENTS inbound messages, CONCURRENCY at a time (each its own network id). */
  const writeInbound = async (tag: string) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < events; i = next++) {
          const phone = `+1202555${String(1000 + (i % 9000)).padStart(4, "0")}`;
          await api("POST", "/webhooks/loopback", { phone, message: `bench ${tag} ${i}`, id: `${tag}-${i}` });
        }
      }),
    );
  };

  try {
    log(`webhooks: storing ${events} inbound messages, then replaying them to a new endpoint`);
    const t0 = new Date(Date.now() - 1000).toISOString();
    await writeInbound("backlog");
    const backlogId = await subscribe("backlog");
    const backlog = allArrived("backlog", 300_000);
    const r0 = performance.now();
    const { queued } = await api("POST", `/api/webhook-endpoints/${backlogId}/replay`, { since: t0 });
    if (queued !== events) throw new Error(`replay queued ${queued}, expected ${events}`);
    await backlog;
    const backlogSeconds = (performance.now() - r0) / 1000;
    log(`webhooks: backlog of ${events} delivered in ${backlogSeconds.toFixed(2)} s (${Math.round(events / backlogSeconds)}/s)`);

    await api("PATCH", `/api/webhook-endpoints/${backlogId}`, { enabled: false });
    await subscribe("live");
    const live = allArrived("live", 300_000);
    const l0 = performance.now();
    await writeInbound("live");
    const liveWriteSeconds = (performance.now() - l0) / 1000;
    await live;
    const liveSeconds = (performance.now() - l0) / 1000;
    log(`webhooks: live, ${events} written in ${liveWriteSeconds.toFixed(2)} s and delivered by ${liveSeconds.toFixed(2)} s (${Math.round(events / liveSeconds)}/s)`);
    return {
      events,
      backlogSeconds,
      backlogPerSecond: events / backlogSeconds,
      liveSeconds,
      livePerSecond: events / liveSeconds,
      liveWritesPerSecond: events / liveWriteSeconds,
      duplicates,
      badSignatures,
    };
  } finally {
    await receiver.stop(true);
  }
}
