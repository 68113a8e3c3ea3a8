import { describe, expect, test } from "bun:test";
import { OPT_IN_WORDS, OPT_OUT_WORDS, optOutAction } from "../../src/messages/opt-out";

describe("optOutAction: the whole text is one keyword", () => {
  const table: [string, "out" | "in" | null][] = [
    ["STOP", "out"],
    ["stop", "out"],
    ["Stop.", "out"],
    [" stop ", "out"],
    ["STOP!!!", "out"],
    ["¡Stop!", "out"],
    ["\"stop\"", "out"],
    ["\tStop\n", "out"],
    ["ＳＴＯＰ", "out"],
    ["StopAll", "out"],
    ["unsubscribe", "out"],
    ["Cancel", "out"],
    ["end", "out"],
    ["QUIT", "out"],
    ["optout", "out"],
    ["revoke.", "out"],
    ["START", "in"],
    ["start", "in"],
    ["Unstop", "in"],
    ["yes!", "in"],
    ["Yes.", "in"],
    // Not the whole text, or not one word: an ordinary message.
    ["stop please", null],
    ["please stop", null],
    ["STOP ALL", null],
    ["opt out", null],
    ["S.T.O.P", null],
    ["stopp", null],
    ["stop 🛑", null],
    ["yes please", null],
    ["HELP", null],
    ["", null],
    ["  ", null],
    ["...", null],
  ];
  for (const [text, action] of table) {
    test(`${JSON.stringify(text)} → ${action}`, () => {
      expect(optOutAction(text)).toBe(action);
    });
  }

  test("every listed word, in lower case with a full stop, does what its list says", () => {
    for (const w of OPT_OUT_WORDS) expect(optOutAction(`${w.toLowerCase()}.`)).toBe("out");
    for (const w of OPT_IN_WORDS) expect(optOutAction(`${w.toLowerCase()}.`)).toBe("in");
  });
});

describe("optOutAction: the network's classification", () => {
  test("Twilio's OptOutType STOP or START decides, whatever the text (a keyword of the account's own)", () => {
    expect(optOutAction("ARRET", "STOP")).toBe("out");
    expect(optOutAction("hello", "START")).toBe("in");
    expect(optOutAction("stop", "START")).toBe("in");
  });

  test("HELP, or no type, leaves it to the text", () => {
    expect(optOutAction("help", "HELP")).toBeNull();
    expect(optOutAction("stop", "HELP")).toBe("out");
    expect(optOutAction("start", null)).toBe("in");
  });
});
