/**
 * A webhook receiver on 127.0.0.1, as a client of Textwire would run one: it verifies every
 * request with the standardwebhooks library (the secret it holds), records it, and answers
 * as the test tells it (204 by default).
 */
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";

export interface ReceivedRequest {
  path: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string;
  /** Whether the signature verified with the receiver's secret (timestamp within 5 minutes included). */
  verified: boolean;
  /** When it arrived (this process's clock, ms). */
  at: number;
}

/** How the receiver answers a request; it may wait first (a slow or hanging endpoint). */
export type Responder = (req: ReceivedRequest) => Response | Promise<Response>;

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The secret requests are verified with; may be set once the endpoint exists. */
  secret: string | undefined;
  /** Every request, in arrival order. */
  received: ReceivedRequest[];
  /** Requests being answered now. */
  open: number;
  /** The most requests answered at once so far. */
  mostOpen: number;
  respond: Responder;
  /** Requests by webhook-id: how many times each event came. */
  countsById(): Map<string, number>;
  stop(): void;
}

/** A fresh `whsec_` secret, as Textwire makes them. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/** Whether `secret` verifies this request, as a receiver's code would check it. */
export function verifies(secret: string, req: Pick<ReceivedRequest, "headers" | "body">): boolean {
  try {
    new Webhook(secret).verify(req.body, req.headers);
    return true;
  } catch {
    return false;
  }
}

export function startReceiver(secret?: string, respond: Responder = () => new Response(null, { status: 204 })): Receiver {
  const receiver: Receiver = {
    url: "",
    secret,
    received: [],
    open: 0,
    mostOpen: 0,
    respond,
    countsById() {
      const counts = new Map<string, number>();
      for (const r of receiver.received) counts.set(r.headers["webhook-id"]!, (counts.get(r.headers["webhook-id"]!) ?? 0) + 1);
      return counts;
    },
    stop: () => server.stop(true),
  };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    // A hanging responder must outlast the attempt's own limit.
    idleTimeout: 0,
    async fetch(request) {
      const body = await request.text();
      const headers = Object.fromEntries(request.headers);
      const req: ReceivedRequest = { path: new URL(request.url).pathname, headers, body, verified: receiver.secret ? verifies(receiver.secret, { headers, body }) : false, at: Date.now() };
      receiver.received.push(req);
      receiver.open++;
      receiver.mostOpen = Math.max(receiver.mostOpen, receiver.open);
      try {
        return await receiver.respond(req);
      } finally {
        receiver.open--;
      }
    },
  });
  receiver.url = `http://127.0.0.1:${server.port}`;
  return receiver;
}

/** Waits (bounded) until `check` holds; fails with `what` otherwise. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await Bun.sleep(10);
  }
}

/** A URL on 127.0.0.1 where nothing listens (a receiver that is down). */
export async function downUrl(): Promise<string> {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const url = `http://127.0.0.1:${probe.port}/hooks`;
  await probe.stop(true);
  return url;
}
