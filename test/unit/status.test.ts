import { describe, expect, test } from "bun:test";
import { canMoveTo, isFinalStatus, OUTBOUND_STATUSES, statusesBefore, type MessageStatus } from "../../src/vocabulary/message-status";

const ALL: MessageStatus[] = [...OUTBOUND_STATUSES, "received"];

describe("statuses move forward: queued → sent → delivered, or failed", () => {
  test.each([
    ["queued", "sent"],
    ["sent", "delivered"],
    ["queued", "delivered"],
    ["queued", "failed"],
    ["sent", "failed"],
  ] as const)("%s → %s is allowed", (from, to) => {
    expect(canMoveTo(from, to)).toBe(true);
  });
});

describe("no backward or sideways moves", () => {
  test.each([
    ["sent", "queued"],
    ["queued", "queued"],
    ["sent", "sent"],
    ["delivered", "queued"],
    ["failed", "queued"],
  ] as const)("%s → %s is refused", (from, to) => {
    expect(canMoveTo(from, to)).toBe(false);
  });
});

describe("delivered and failed are final", () => {
  test("isFinalStatus", () => {
    expect(isFinalStatus("delivered")).toBe(true);
    expect(isFinalStatus("failed")).toBe(true);
    expect(isFinalStatus("queued")).toBe(false);
    expect(isFinalStatus("sent")).toBe(false);
  });

  test("inbound received is final too", () => {
    expect(isFinalStatus("received")).toBe(true);
  });

  test.each(["delivered", "failed", "canceled", "rejected", "received"] as const)("nothing moves out of %s", (from) => {
    for (const to of ALL) expect(canMoveTo(from, to)).toBe(false);
  });

  test("a late sent after delivered is refused", () => {
    expect(canMoveTo("delivered", "sent")).toBe(false);
  });

  test("delivered and failed never replace each other", () => {
    expect(canMoveTo("delivered", "failed")).toBe(false);
    expect(canMoveTo("failed", "delivered")).toBe(false);
  });
});

describe("scheduled leaves only to queued or canceled; canceled is final", () => {
  test.each([
    ["scheduled", "queued", true],
    ["scheduled", "canceled", true],
    ["scheduled", "sent", false],
    ["scheduled", "delivered", false],
    ["scheduled", "failed", false],
    ["queued", "canceled", false],
    ["sent", "canceled", false],
    ["queued", "scheduled", false],
    ["canceled", "scheduled", false],
    ["canceled", "queued", false],
    // A draft leaves only when a person decides: approved (queued, or scheduled before its send_at) or rejected.
    ["draft", "queued", true],
    ["draft", "scheduled", true],
    ["draft", "rejected", true],
    ["draft", "sent", false],
    ["draft", "failed", false],
    ["draft", "canceled", false],
    ["queued", "rejected", false],
    ["scheduled", "rejected", false],
    ["queued", "draft", false],
  ] as const)("%s → %s: %p", (from, to, allowed) => {
    expect(canMoveTo(from, to)).toBe(allowed);
  });

  test("canceled is final, scheduled is not", () => {
    expect(isFinalStatus("canceled")).toBe(true);
    expect(isFinalStatus("scheduled")).toBe(false);
    for (const to of ALL) expect(canMoveTo("canceled", to)).toBe(false);
  });
});

describe("statusesBefore lists exactly the statuses a change may start from", () => {
  test.each([
    ["draft", []],
    ["scheduled", ["draft"]],
    ["queued", ["draft", "scheduled"]],
    ["sent", ["queued"]],
    ["delivered", ["queued", "sent"]],
    ["failed", ["queued", "sent"]],
    ["canceled", ["scheduled"]],
    ["rejected", ["draft"]],
  ] as const)("before %s: %p", (to, expected) => {
    expect([...statusesBefore(to)].sort()).toEqual([...expected].sort());
  });

  test("agrees with canMoveTo for every pair", () => {
    for (const to of ALL) {
      for (const from of ALL) expect(statusesBefore(to).includes(from)).toBe(canMoveTo(from, to));
    }
  });
});
