import { hasScope, scopeRefusal, type KeyAuth } from "../auth/policy";
import type { Repositories } from "../db/port";
import { AppError } from "../errors";
import type { ChatMode, SkipReason } from "../vocabulary/chat-modes";
import { directChatId } from "../vocabulary/chats";
import { OPTED_OUT_MESSAGE } from "./opt-out";

/**
 * The one decision every send asks for (REST, tRPC, workflows, MCP, generate, scheduled sends
 * and approvals): send it, hold it as a draft, skip it (with its reason) or refuse it (with
 * the error). Opt-outs, muted groups, chat modes and the key's scopes and reach all answer
 * here; the paths act on the verdict (docs/supervision.md).
 */
export type Verdict =
  /** `handoff`: a person takes the chat over; `keepsHuman`: a person's send into a human chat, which restarts its time. */
  | { action: "send"; handoff: boolean; keepsHuman: boolean }
  | { action: "draft" }
  /** Refused by policy: the API answers `error`; a workflow returns `{ skipped: reason }`. */
  | { action: "skip"; reason: SkipReason; error: AppError }
  | { action: "refuse"; error: AppError };

/** What the decision needs to know of one send. */
export interface SendFacts {
  /** An automated send (a workflow's, generate with auto_send, MCP's, `automated: true`); a person's otherwise. */
  automated: boolean;
  /** The key that sends; none for this process's own workflows and the scheduled sender. */
  key?: Pick<KeyAuth, "scopes" | "reach"> | undefined;
  /** Into a group chat (else to one contact). */
  group: boolean;
  /** The contact opted out (a direct send). */
  optedOut: boolean;
  /** Someone's STOP mutes the group. */
  muted: boolean;
  mode: ChatMode;
  /** For a `reach: "known"` key: whether the contact `phone` wrote to us first (a direct send). */
  wroteFirst?: boolean | undefined;
  phone?: string | undefined;
  /** A person's send that takes the chat over (`handoff: true`). */
  handoff?: boolean | undefined;
}

/** A key that may only propose: it holds drafts:write but not messages:send. Every send of it is automated and drafted. */
export const isDraftingKey = (key: Pick<KeyAuth, "scopes"> | undefined): boolean =>
  key !== undefined && !hasScope(key, "messages:send") && hasScope(key, "drafts:write");

const skipErrors: Record<SkipReason, (group: boolean) => AppError> = {
  opted_out: () => new AppError("FORBIDDEN", OPTED_OUT_MESSAGE, {}, { reason: "OPTED_OUT" }),
  muted: () =>
    new AppError("FORBIDDEN", "chat_id: a participant replied STOP in this group: automated sends to it wait until they send START there", {}, { reason: "CHAT_MUTED" }),
  human: (group) =>
    new AppError(
      "CONFLICT",
      `${group ? "chat_id" : "phone"}: the chat's mode is human (a person replied): automated sends wait until it is handed back (PATCH /api/chats/{id} { mode })`,
      {},
      { reason: "CHAT_HUMAN" },
    ),
};

/** The pure decision, in this order: scope, reach, opt-out, mute, mode (test/unit/send-policy.test.ts holds its table). */
export function decideSend(facts: SendFacts): Verdict {
  const { key, group } = facts;
  if (key) {
    const refusal = scopeRefusal(key, "messages:send", "drafts:write");
    if (refusal) return { action: "refuse", error: refusal };
  }
  const drafting = isDraftingKey(key);
  const automated = facts.automated || drafting;
  if (key?.reach === "known" && !group && facts.wroteFirst === false) {
    return { action: "refuse", error: new AppError("FORBIDDEN", `phone: this key may only write to contacts who wrote first (${facts.phone ?? "the contact"} has not)`) };
  }
  const skip = (reason: SkipReason): Verdict => ({ action: "skip", reason, error: skipErrors[reason](group) });
  if (!group && facts.optedOut) return automated ? skip("opted_out") : { action: "refuse", error: skipErrors.opted_out(group) };
  if (!automated) return { action: "send", handoff: facts.handoff === true && facts.mode !== "human", keepsHuman: facts.mode === "human" };
  if (group && facts.muted) return skip("muted");
  if (facts.mode === "human") return skip("human");
  if (drafting || facts.mode === "supervised") return { action: "draft" };
  return { action: "send", handoff: false, keepsHuman: false };
}

/** Approving drafts needs drafts:approve, and never from a key that may only draft: no key approves what it proposed. */
export function approvalRefusal(key: Pick<KeyAuth, "scopes">): AppError | null {
  if (isDraftingKey(key)) return new AppError("FORBIDDEN", "scope: a key that may only draft (drafts:write without messages:send) cannot approve or reject drafts");
  return scopeRefusal(key, "drafts:approve");
}

/** The skip reason an error of a refused send carries (here or from a remote server's answer), if any. */
export function skipReasonOf(details: { reason?: string | undefined } | undefined): SkipReason | undefined {
  switch (details?.reason) {
    case "OPTED_OUT":
      return "opted_out";
    case "CHAT_MUTED":
      return "muted";
    case "CHAT_HUMAN":
      return "human";
    default:
      return undefined;
  }
}

/** Where a send goes, as the decision reads its facts: a contact's phone, or a group chat's id. */
export type PolicyTarget = { phone: string; groupId?: undefined } | { phone: ""; groupId: string };

/**
 * Reads the facts of a send to `target` and decides. `contact`: the contact's opt-out as the
 * send path already read it (contacts.beforeSend), else read here.
 */
export async function sendVerdict(
  storage: Pick<Repositories, "contacts" | "chats" | "messages">,
  target: PolicyTarget,
  who: { automated: boolean; key?: Pick<KeyAuth, "scopes" | "reach"> | undefined; handoff?: boolean | undefined },
  contact?: { optedOut: boolean },
): Promise<Verdict> {
  const group = target.groupId !== undefined;
  const chatId = target.groupId ?? directChatId(target.phone);
  const optedOut = group ? false : (contact ?? (await storage.contacts.beforeSend(target.phone))).optedOut;
  const knownOnly = who.key?.reach === "known" && !group;
  const [mode, muted, wroteFirst] = await Promise.all([
    storage.chats.modeOf(chatId),
    group ? storage.chats.muted(chatId) : false,
    knownOnly ? storage.messages.inboundAfter(-1, 1, target.phone, true).then((page) => page.rows.length > 0) : undefined,
  ]);
  return decideSend({ automated: who.automated, key: who.key, group, optedOut, muted, mode, wroteFirst, phone: target.phone, handoff: who.handoff });
}
