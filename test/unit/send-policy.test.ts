// The one decision every send asks (src/messages/send-policy.ts): a table of cases.
import { describe, expect, test } from "bun:test";
import { approvalRefusal, decideSend, isDraftingKey, skipReasonOf, type SendFacts } from "../../src/messages/send-policy";
import type { Scope } from "../../src/vocabulary/scopes";

const ALL = { scopes: ["*"] as const, reach: "any" as const };
const key = (...scopes: Scope[]) => ({ scopes, reach: "any" as const });
const known = (...scopes: Scope[]) => ({ scopes, reach: "known" as const });
const SENDER = key("messages:send");
const DRAFTER = key("drafts:write");
const READER = key("messages:read");

const base: SendFacts = { automated: false, group: false, optedOut: false, muted: false, mode: "auto" };
type Expect = "send" | "send+handoff" | "draft" | `skip:${string}` | `refuse:${string}`;
const outcome = (facts: Partial<SendFacts>): Expect => {
  const v = decideSend({ ...base, ...facts });
  if (v.action === "send") return v.handoff ? "send+handoff" : "send";
  if (v.action === "draft") return "draft";
  if (v.action === "skip") return `skip:${v.reason}`;
  return `refuse:${v.error.code}`;
};

describe("decideSend", () => {
  test.each<[string, Partial<SendFacts>, Expect]>([
    // A person's send (the API with a sending key, the console) goes in every mode.
    ["a person, auto", { key: ALL }, "send"],
    ["a person, supervised", { key: SENDER, mode: "supervised" }, "send"],
    ["a person, human", { key: SENDER, mode: "human" }, "send"],
    ["a person into a muted group", { key: SENDER, group: true, muted: true }, "send"],
    ["a person to an opted-out contact", { key: SENDER, optedOut: true }, "refuse:FORBIDDEN"],
    ["a person's handoff, auto", { key: SENDER, handoff: true }, "send+handoff"],
    ["a person's handoff, supervised", { key: SENDER, handoff: true, mode: "supervised" }, "send+handoff"],
    ["a person's handoff into a chat already human: nothing to change", { key: SENDER, handoff: true, mode: "human" }, "send"],
    // Automated sends (workflows: no key; generate auto_send, MCP, automated: true).
    ["automated, auto", { automated: true }, "send"],
    ["automated, supervised", { automated: true, mode: "supervised" }, "draft"],
    ["automated, human", { automated: true, mode: "human" }, "skip:human"],
    ["automated to an opted-out contact", { automated: true, optedOut: true }, "skip:opted_out"],
    ["automated into a muted group", { automated: true, group: true, muted: true }, "skip:muted"],
    ["automated into a muted group, supervised: muted first", { automated: true, group: true, muted: true, mode: "supervised" }, "skip:muted"],
    ["automated into a group, supervised", { automated: true, group: true, mode: "supervised" }, "draft"],
    ["an opt-out in a group's sender does not stop a group send", { automated: true, group: true, optedOut: true }, "send"],
    ["automated handoff is no handoff", { automated: true, handoff: true }, "send"],
    // A drafting key (drafts:write without messages:send): every send is automated and a draft.
    ["a drafting key, auto", { key: DRAFTER }, "draft"],
    ["a drafting key, supervised", { key: DRAFTER, mode: "supervised" }, "draft"],
    ["a drafting key, human", { key: DRAFTER, mode: "human" }, "skip:human"],
    ["a drafting key to an opted-out contact", { key: DRAFTER, optedOut: true }, "skip:opted_out"],
    ["a drafting key into a muted group", { key: DRAFTER, group: true, muted: true }, "skip:muted"],
    ["a key with both drafts:write and messages:send sends", { key: key("drafts:write", "messages:send") }, "send"],
    // Scopes and reach.
    ["a key that may only read", { key: READER }, "refuse:FORBIDDEN"],
    ["a known-reach key to a phone that never wrote", { key: known("messages:send"), wroteFirst: false }, "refuse:FORBIDDEN"],
    ["a known-reach key to a phone that wrote", { key: known("messages:send"), wroteFirst: true }, "send"],
    ["a known-reach key into a group (the chat exists)", { key: known("messages:send"), group: true, wroteFirst: false }, "send"],
    ["a known-reach drafting key to a phone that never wrote", { key: known("drafts:write"), wroteFirst: false, mode: "supervised" }, "refuse:FORBIDDEN"],
  ])("%s → %s", (_, facts, expected) => {
    expect(outcome(facts)).toBe(expected);
  });

  test("refusals name what refused them, and a skip's error says why to the API", () => {
    const scope = decideSend({ ...base, key: READER });
    expect(scope.action === "refuse" && scope.error.message).toBe("scope: this key lacks messages:send");
    const human = decideSend({ ...base, automated: true, mode: "human" });
    expect(human.action === "skip" && [human.error.code, human.error.message, skipReasonOf(human.error.details)]).toEqual([
      "CONFLICT",
      "phone: the chat's mode is human (a person replied): automated sends wait until it is handed back (PATCH /api/chats/{id} { mode })",
      "human",
    ]);
    const groupHuman = decideSend({ ...base, automated: true, group: true, mode: "human" });
    expect(groupHuman.action === "skip" && groupHuman.error.message).toStartWith("chat_id: the chat's mode is human");
    const stop = decideSend({ ...base, automated: true, optedOut: true });
    expect(stop.action === "skip" && [stop.error.code, stop.error.message, skipReasonOf(stop.error.details)]).toEqual(["FORBIDDEN", "phone: the contact opted out by replying STOP", "opted_out"]);
    const muted = decideSend({ ...base, automated: true, group: true, muted: true });
    expect(muted.action === "skip" && [muted.error.code, skipReasonOf(muted.error.details)]).toEqual(["FORBIDDEN", "muted"]);
    const reach = decideSend({ ...base, key: known("messages:send"), wroteFirst: false, phone: "+14155550123" });
    expect(reach.action === "refuse" && reach.error.message).toBe("phone: this key may only write to contacts who wrote first (+14155550123 has not)");
  });

  test("no key approves what it proposed: a drafting key is refused even with drafts:approve", () => {
    expect(isDraftingKey(DRAFTER)).toBe(true);
    expect(isDraftingKey(ALL)).toBe(false);
    expect(isDraftingKey(undefined)).toBe(false);
    expect(approvalRefusal(key("drafts:write", "drafts:approve"))?.message).toStartWith("scope: a key that may only draft");
    expect(approvalRefusal(key("messages:send"))?.message).toBe("scope: this key lacks drafts:approve");
    expect(approvalRefusal(key("drafts:approve"))).toBeNull();
    expect(approvalRefusal(ALL)).toBeNull();
    expect(skipReasonOf({ reason: "IDEMPOTENCY_KEY_REUSED" })).toBeUndefined();
  });
});
