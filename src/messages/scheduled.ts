import { keepTrying, startClaimLoop, writeOrRetry } from "../background";
import type { MessageRepository, MessageRow } from "../db/port";
import { AppError } from "../errors";
import { errorText } from "../log";
import { MAX_PAGE } from "./schemas";
import { canceledAnswer, pageAnswer, toRecords } from "./records";
import type { Recorder } from "../observability/recorder";
import { withSpan } from "../observability/trace";
import { sendStored, type MessagingDeps } from "./service";
import { decideSend } from "./send-policy";

/** Why a scheduled message whose contact opted out before its time was not sent. */
export const OPTED_OUT_AT_SEND_TIME = "the contact opted out by replying STOP";

/** Claims at most this many due messages at once. */
const CLAIM_BATCH = 50;
/** Sends in flight in one process at most; due messages beyond wait in the database. */
const MAX_IN_FLIGHT = 64;
/** The wait when nothing was due: a message goes out within this (plus a claim) of its time. */
const IDLE_MS = 500;
/** The longest wait after failed claims (a busy or unreachable database). */
const MAX_CLAIM_BACKOFF_MS = 5_000;
/** How long a claimed message's opt-out check is retried before it is left to the stale-send rule. */
const CHECK_GIVE_UP_MS = 60_000;

/** A scheduled message leaves `scheduled` only by being claimed (to `queued`) or canceled. */
export async function cancelScheduled(deps: { storage: { messages: MessageRepository }; metrics?: Pick<Recorder, "message"> }, id: string) {
  const { messages } = deps.storage;
  const row = await messages.cancelScheduled(id);
  if (row) deps.metrics?.message("outbound", row.network, "canceled");
  if (row) return canceledAnswer((await toRecords(messages, [row]))[0]!);
  const now = await messages.get(id);
  if (!now) throw new AppError("NOT_FOUND", `message ${id} not found`);
  throw new AppError("CONFLICT", `message ${id} is ${now.status}; only a scheduled message can be canceled`);
}

/** Messages waiting for their time, soonest first; `limit` is clamped to 100. */
export async function listScheduled(messages: MessageRepository, input: { limit: number; offset: number }) {
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, total } = await messages.scheduled(limit, input.offset);
  return pageAnswer(await toRecords(messages, rows), total, limit, input.offset);
}

export interface ScheduledSender {
  /** Stops claiming and waits for sends in flight, at most `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

/**
 * Sends scheduled messages when their time comes, until stopped. Each round claims the due
 * ones (messages.claimDueScheduled moves each to `queued` in one statement, so exactly one
 * process sends it; on SQLite it reads first and writes only when something is due) and
 * sends each through sendStored, the network half of every send, concurrently up to
 * MAX_IN_FLIGHT (startClaimLoop in src/background.ts). Claims again at once while work is
 * due, else waits IDLE_MS: overdue messages (after downtime) go at once. Errors are
 * logged, never thrown.
 */
export function startScheduledSender(deps: MessagingDeps): ScheduledSender {
  const { storage, log } = deps;

  const send = async (row: MessageRow) => {
    deps.metrics?.message("outbound", row.network, "queued");
    const mlog = log.child({ messageId: row.id });
    let contact = { optedOut: false, ourTyping: false };
    const checked = await keepTrying("checking a scheduled message's contact", async () => {
      contact = await storage.contacts.beforeSend(row.phone);
    }, mlog, { giveUpAfterMs: CHECK_GIVE_UP_MS });
    // Left `queued`: the stale-send rule of maintenance fails it (docs/operations.md).
    if (!checked) return;
    // A scheduled send is a person's (an automated one was drafted or refused when scheduled): it goes in every mode.
    const verdict = decideSend({ automated: false, group: row.chatId !== null, optedOut: contact.optedOut, muted: false, mode: "auto" });
    if (verdict.action !== "send") {
      await writeOrRetry("failing a scheduled message", () => storage.messages.setStatus(row.id, "failed", { error: OPTED_OUT_AT_SEND_TIME }), mlog);
      deps.metrics?.message("outbound", row.network, "failed");
      mlog.info("scheduled message not sent: the contact opted out");
      return;
    }
    try {
      const record = await withSpan("send", { "textwire.network": row.network, "textwire.line": row.lineId, "textwire.scheduled": true, "textwire.message.id": row.id }, () => sendStored(deps, row, contact.ourTyping));
      mlog.info("scheduled message sent", { status: record.status });
    } catch (err) {
      if (err instanceof AppError && err.code === "GATEWAY_TIMEOUT") mlog.warn("scheduled message: the network did not answer in time; the status will follow");
      else if (err instanceof AppError) mlog.warn("scheduled message failed", { error: err.message });
      else mlog.error("scheduled message failed unexpectedly", { error: errorText(err) });
    }
  };

  const loop = startClaimLoop({
    what: "due scheduled messages",
    log,
    // A round takes at most CLAIM_BATCH, within MAX_IN_FLIGHT sends at once.
    maxInFlight: MAX_IN_FLIGHT,
    idleMs: IDLE_MS,
    maxBackoffMs: MAX_CLAIM_BACKOFF_MS,
    claim: (room) => storage.messages.claimDueScheduled(Math.min(CLAIM_BATCH, room)),
    work: send,
    describe: (row) => ({ messageId: row.id }),
  });

  return {
    async stop(graceMs) {
      const left = await loop.stop(graceMs);
      if (left > 0) log.warn("scheduled sends still in flight at shutdown; the network's reports settle them", { count: left });
    },
  };
}
