import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/errors";
import { fallbackOf, routeSend, type Route, type RouteLine, type RouteRequest } from "../../src/lines/route";

/** A deployment: an SMS default line, a second SMS number, an iMessage line falling back to SMS, a disabled line. */
const line = (id: string, extra: Partial<RouteLine> = {}): RouteLine => ({ id, name: id.slice(3), enabled: true, isDefault: false, imessage: false, fallback: null, ...extra });
const SMS = line("ln_sms", { isDefault: true });
const SALES = line("ln_sales");
const IMESSAGE = line("ln_imessage", { imessage: true, fallback: "ln_sms" });
const OFF = line("ln_off", { enabled: false });
const LINES = [SMS, SALES, IMESSAGE, OFF];

/** What a route says, in a word: the line's id and why, or which line it asks about iMessage. */
const said = (route: Route) => ("ask" in route ? `ask ${route.ask.id}` : `${route.line.id} ${route.reason}`);

describe("routeSend: first match wins", () => {
  test.each<[string, RouteRequest, string]>([
    ["an explicit line by id", { line: "ln_sales", stickyLine: "ln_sms" }, "ln_sales requested"],
    ["an explicit line by name", { line: "imessage" }, "ln_imessage requested"],
    ["an explicit line beats the reply's", { line: "sales", replyLine: "ln_imessage" }, "ln_sales requested"],
    ["a reply goes out on the line it answers", { replyLine: "ln_sales", stickyLine: "ln_sms" }, "ln_sales reply"],
    ["sticky: the line of the last message with the phone", { stickyLine: "ln_sales" }, "ln_sales sticky"],
    ["sticky to an iMessage line asks nothing", { stickyLine: "ln_imessage" }, "ln_imessage sticky"],
    ["a sticky line since disabled is passed over", { stickyLine: "ln_off", imessage: false }, "ln_sms default"],
    ["a sticky line since deleted is passed over", { stickyLine: "ln_gone", imessage: false }, "ln_sms default"],
    ["a new phone: ask the iMessage line first", {}, "ask ln_imessage"],
    ["a new phone with iMessage", { imessage: true }, "ln_imessage imessage"],
    ["a new phone without iMessage (or unknown): the default line", { imessage: false }, "ln_sms default"],
  ])("%s", (_, request, expected) => {
    expect(said(routeSend(request, LINES))).toBe(expected);
  });

  test("without an enabled iMessage line a new phone goes to the default at once", () => {
    expect(said(routeSend({}, [SMS, SALES, { ...IMESSAGE, enabled: false }]))).toBe("ln_sms default");
    expect(said(routeSend({}, [SMS, SALES]))).toBe("ln_sms default");
  });

  test("the default line that is itself an iMessage line is the one asked", () => {
    const lines = [{ ...SMS, isDefault: false }, { ...IMESSAGE, isDefault: true }, line("ln_other_imessage", { imessage: true })];
    expect(said(routeSend({}, lines))).toBe("ask ln_imessage");
    // Not on iMessage: still the default line (its fallback is the send path's to take, before sending).
    expect(said(routeSend({ imessage: false }, lines))).toBe("ln_imessage default");
  });

  test.each<[string, RouteRequest, readonly RouteLine[], string, string]>([
    ["an unknown line is 400 naming it", { line: "nope" }, LINES, "BAD_REQUEST", 'line: no line "nope" (GET /api/lines lists them)'],
    ["a disabled line is 409", { line: "off" }, LINES, "CONFLICT", "line: the line off is disabled"],
    ["a reply whose line is disabled is 409", { replyLine: "ln_off" }, LINES, "CONFLICT", "line: the conversation is on the line off, which is disabled"],
    ["a reply whose line was deleted is 409", { replyLine: "ln_gone" }, LINES, "CONFLICT", "line: the conversation is on the line ln_gone, which is deleted"],
    ["a disabled default line is 409 for a new phone", { imessage: false }, [{ ...SMS, enabled: false }, SALES], "CONFLICT", "line: the default line sms is disabled; name a line or mark another one default"],
  ])("%s", (_, request, lines, code, message) => {
    let thrown: unknown;
    try {
      routeSend(request, lines);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect([(thrown as AppError).code, (thrown as AppError).message]).toEqual([code, message]);
  });
});

describe("fallbackOf", () => {
  test.each<[string, RouteLine, readonly RouteLine[], string | undefined]>([
    ["the line's fallback", IMESSAGE, LINES, "ln_sms"],
    ["none set", SMS, LINES, undefined],
    ["a disabled fallback is none", { ...IMESSAGE, fallback: "ln_off" }, LINES, undefined],
    ["a deleted fallback is none", { ...IMESSAGE, fallback: "ln_gone" }, LINES, undefined],
    ["a line is never its own fallback", { ...IMESSAGE, fallback: "ln_imessage" }, LINES, undefined],
  ])("%s", (_, from, lines, expected) => {
    expect(fallbackOf(from, lines, "unreachable")?.id).toBe(expected);
  });
});
