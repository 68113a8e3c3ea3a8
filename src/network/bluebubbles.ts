import { timingSafeEqual } from "node:crypto";
import { AppError } from "../errors";
import type { InboundEvent, NetworkDriver, StatusEvent, WebhookEvents } from "./driver";

export interface BlueBubblesConfig {
  url: string;
  password: string;
  /** BlueBubbles cannot sign webhooks: it calls `/webhooks/bluebubbles?secret=<this>`. */
  webhookSecret: string;
}

/** The fields of a BlueBubbles message that Textwire reads. */
interface BbMessage {
  guid?: string;
  tempGuid?: string | null;
  text?: string | null;
  isFromMe?: boolean;
  handle?: { address?: string } | null;
  dateCreated?: number;
  dateDelivered?: number | null;
  error?: number;
}

/** Our message id travels to BlueBubbles as the temp guid and comes back on its echo. */
const TEMP_PREFIX = "textwire-";
const PAGE = 100;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Turns BlueBubbles messages into inbound messages (from others) and reports on ours (from us). */
export function bbEvents(messages: BbMessage[], type = "new-message"): WebhookEvents {
  const inbound: InboundEvent[] = [];
  const statuses: StatusEvent[] = [];
  for (const m of messages) {
    if (!m.guid) continue;
    if (m.isFromMe) {
      const messageId = m.tempGuid?.startsWith(TEMP_PREFIX) ? m.tempGuid.slice(TEMP_PREFIX.length) : undefined;
      const at = m.dateDelivered ?? m.dateCreated;
      const failed = (m.error ?? 0) !== 0 || type === "message-send-error";
      const status = failed ? "failed" : m.dateDelivered ? "delivered" : "sent";
      statuses.push({
        networkId: m.guid,
        ...(messageId ? { messageId } : {}),
        networkStatus: failed ? `error ${m.error ?? ""}`.trim() : status,
        status,
        ...(at ? { at } : {}),
        ...(failed ? { error: `bluebubbles error ${m.error ?? "on send"}` } : {}),
      });
    } else if (type === "new-message" && m.handle?.address && m.text) {
      inbound.push({ phone: m.handle.address, message: m.text, networkId: m.guid });
    }
  }
  return { inbound, statuses };
}

/** iMessage through a BlueBubbles server's REST API, its webhooks and a catch-up query. */
export function createBlueBubblesNetwork(config: BlueBubblesConfig): NetworkDriver {
  const base = config.url.replace(/\/+$/, "");
  const api = (path: string) => `${base}/api/v1/${path}?password=${encodeURIComponent(config.password)}`;

  async function call(path: string, body: unknown): Promise<{ status: number; json: { data?: unknown; message?: string; error?: { message?: string } } }> {
    let res: Response;
    try {
      res = await fetch(api(path), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new AppError("BAD_GATEWAY", `bluebubbles: unreachable (${(err as Error).name})`);
    }
    return { status: res.status, json: (await res.json().catch(() => ({}))) as never };
  }

  return {
    name: "bluebubbles",

    async send({ id, phone, text }) {
      const { status, json } = await call("message/text", {
        chatGuid: `any;-;${phone}`,
        tempGuid: `${TEMP_PREFIX}${id}`,
        message: text,
        method: "apple-script",
      });
      const guid = (json.data as { guid?: string } | undefined)?.guid;
      if (status === 200 && guid) return { networkId: guid, status: "sent" };
      const reason = `bluebubbles: ${json.error?.message ?? json.message ?? `status ${status}`}`;
      throw new AppError(status === 400 ? "BAD_REQUEST" : "BAD_GATEWAY", reason);
    },

    async webhook({ url, subpath, body }) {
      if (!sameSecret(url.searchParams.get("secret") ?? "", config.webhookSecret)) {
        throw new AppError("UNAUTHORIZED", "secret: missing or wrong");
      }
      if (subpath !== "") throw new AppError("NOT_FOUND", `no route POST /webhooks/bluebubbles/${subpath}`);
      let event: { type?: string; data?: BbMessage };
      try {
        event = JSON.parse(body);
      } catch {
        throw new AppError("BAD_REQUEST", "body: malformed JSON");
      }
      const known = event.type === "new-message" || event.type === "updated-message" || event.type === "message-send-error";
      const events = known && event.data ? bbEvents([event.data], event.type) : { inbound: [], statuses: [] };
      return { ...events, response: Response.json({ success: true }) };
    },

    /** BlueBubbles does not retry webhooks: ask for every message since the newest one seen. */
    async catchUp(cursor) {
      // Inclusive of the newest message seen (one ms back): messages of the same ms are
      // not skipped, and the ones seen again are deduplicated by guid.
      // The first time, start from now: the Mac's old history is not news.
      let after = cursor === undefined ? Date.now() : Number(cursor);
      const all: WebhookEvents = { inbound: [], statuses: [] };
      for (let page = 0; page < 50; page++) {
        const { status, json } = await call("message/query", { after: Math.max(0, after - 1), limit: PAGE, offset: 0, sort: "ASC", with: ["handle"] });
        if (status !== 200 || !Array.isArray(json.data)) throw new AppError("BAD_GATEWAY", `bluebubbles: message query failed (status ${status})`);
        const messages = json.data as BbMessage[];
        const events = bbEvents(messages);
        all.inbound.push(...events.inbound);
        all.statuses.push(...events.statuses);
        const newest = Math.max(after, ...messages.map((m) => m.dateCreated ?? 0));
        const done = messages.length < PAGE || newest === after;
        after = newest;
        if (done) break;
      }
      return { ...all, cursor: String(after) };
    },
  };
}
