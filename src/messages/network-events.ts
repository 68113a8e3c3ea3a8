import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { networkState } from "../db/schema";
import type { Logger } from "../log";
import type { NetworkDriver, WebhookEvents } from "../network/driver";
import { isE164 } from "./phone";
import { recordInbound } from "./service";
import type { MessageStore } from "./store";

export interface AppliedEvents {
  /** Inbound messages stored now. */
  stored: number;
  /** Inbound messages already stored (the same network id). */
  duplicates: number;
  /** Reports that moved a message's status. */
  applied: number;
  /** Reports kept but not applied: out of order, after a final status, or about no message of ours. */
  ignored: number;
}

/**
 * Stores what a network reported: inbound messages (once per network id) and delivery
 * reports (each kept with its time; the status rule decides whether it moves the message).
 */
export function applyNetworkEvents(store: MessageStore, network: string, events: WebhookEvents, log: Logger): AppliedEvents {
  const result: AppliedEvents = { stored: 0, duplicates: 0, applied: 0, ignored: 0 };
  for (const m of events.inbound) {
    if (!isE164(m.phone)) {
      log.warn("inbound message from a non-phone address skipped", { network, networkId: m.networkId });
      continue;
    }
    const { duplicate } = recordInbound({ store }, network, { phone: m.phone, message: m.message, networkId: m.networkId });
    if (duplicate) result.duplicates++;
    else result.stored++;
  }
  for (const report of events.statuses) {
    const message =
      (report.messageId ? store.get(report.messageId) : undefined) ??
      (report.networkId ? store.byNetworkId(network, "outbound", report.networkId) : undefined);
    if (!message || message.direction !== "outbound") {
      result.ignored++;
      log.debug("status report about no message of ours", { network, networkId: report.networkId });
      continue;
    }
    const patch = { ...(message.networkId ? {} : { networkId: report.networkId ?? null }), ...(report.error ? { error: report.error } : {}) };
    const applied = store.setStatus(message.id, report.status, patch);
    store.recordStatusReport({
      messageId: message.id,
      network,
      networkStatus: report.networkStatus,
      status: report.status,
      reportedAt: report.at ?? Date.now(),
      applied,
      error: report.error ?? null,
    });
    if (applied) result.applied++;
    else result.ignored++;
  }
  return result;
}

/** The catch-up cursor of a network, kept in the database. */
export function networkCursor(db: Db, network: string) {
  const where = and(eq(networkState.network, network), eq(networkState.key, "catch-up"));
  return {
    get: () => db.select({ value: networkState.value }).from(networkState).where(where).get()?.value,
    set: (value: string) =>
      db.insert(networkState)
        .values({ network, key: "catch-up", value })
        .onConflictDoUpdate({ target: [networkState.network, networkState.key], set: { value } })
        .run(),
  };
}

/** Stores what the network's webhooks missed (for networks that do not retry them). */
export async function catchUpNetwork(deps: { db: Db; store: MessageStore; network: NetworkDriver; log: Logger }): Promise<AppliedEvents | null> {
  if (!deps.network.catchUp) return null;
  const cursor = networkCursor(deps.db, deps.network.name);
  const events = await deps.network.catchUp(cursor.get());
  const applied = applyNetworkEvents(deps.store, deps.network.name, events, deps.log);
  if (events.cursor) cursor.set(events.cursor);
  return applied;
}
