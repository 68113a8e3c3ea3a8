import { describe, expect, test } from "bun:test";
import { cleanInboundText, codePointLength, messageTextProblem, TRUNCATION_MARK } from "../../src/messages/text";

describe("codePointLength counts Unicode code points", () => {
  test("ASCII: one per character", () => {
    expect(codePointLength("")).toBe(0);
    expect(codePointLength("hello")).toBe(5);
  });

  test("emoji and other astral characters count 1 each, not 2 UTF-16 units", () => {
    expect("😀".length).toBe(2);
    expect(codePointLength("😀")).toBe(1);
    expect(codePointLength("😀😀😀")).toBe(3);
    expect(codePointLength("𝄞")).toBe(1);
    expect(codePointLength("a😀b")).toBe(3);
  });

  test("combining marks and emoji modifiers count separately", () => {
    expect(codePointLength("e\u0301")).toBe(2);
    expect(codePointLength("👍🏽")).toBe(2);
    expect(codePointLength("👨‍👩‍👧")).toBe(5);
  });

  test("lone surrogates count 1 each", () => {
    expect(codePointLength("\uD800")).toBe(1);
    expect(codePointLength("\uD800a")).toBe(2);
    expect(codePointLength("a\uDC00")).toBe(2);
    expect(codePointLength("\uDC00\uD800")).toBe(2);
  });

  test("agrees with the string iterator on mixed text", () => {
    const text = "Olá 👋 e\u0301 𝄞 中文 \uD83D\uDE00 \uD800 end";
    expect(codePointLength(text)).toBe([...text].length);
  });
});

describe("messageTextProblem accepts ordinary text", () => {
  test("plain text is fine", () => {
    expect(messageTextProblem("Hello there", 100)).toBeNull();
  });

  test("tab, LF and CR are allowed", () => {
    expect(messageTextProblem("a\tb\nc\r\nd", 100)).toBeNull();
  });

  test("emoji and combining marks are allowed", () => {
    expect(messageTextProblem("Café e\u0301 👍🏽", 100)).toBeNull();
  });
});

describe("messageTextProblem refuses empty and blank text", () => {
  test("empty", () => {
    expect(messageTextProblem("", 100)).toBe("must not be empty");
  });

  test.each([
    ["spaces", "   "],
    ["tab, LF and CR", "\t\n\r"],
    ["no-break space", "\u00A0"],
    ["em space", "\u2003"],
    ["ideographic space", "\u3000"],
    ["line separator", "\u2028"],
    ["byte order mark", "\uFEFF"],
  ])("only whitespace (%s)", (_why, text) => {
    expect(messageTextProblem(text, 100)).toBe("must not be only whitespace");
  });
});

describe("messageTextProblem refuses control characters other than tab, LF, CR", () => {
  test.each([
    ["NUL", "\u0000"],
    ["BEL", "\u0007"],
    ["backspace", "\u0008"],
    ["vertical tab", "\u000B"],
    ["form feed", "\u000C"],
    ["ESC", "\u001B"],
    ["DEL", "\u007F"],
    ["C1 first (U+0080)", "\u0080"],
    ["C1 NEL (U+0085)", "\u0085"],
    ["C1 last (U+009F)", "\u009F"],
  ])("%s", (_why, ch) => {
    expect(messageTextProblem(`hello${ch}world`, 100)).toBe("must not contain control characters other than tab, LF and CR");
  });
});

describe("messageTextProblem refuses text that is not valid Unicode", () => {
  test.each([
    ["lone high surrogate", "hi \uD800"],
    ["lone low surrogate", "\uDC00 hi"],
    ["reversed pair", "\uDE00\uD83D"],
  ])("%s", (_why, text) => {
    expect(messageTextProblem(text, 100)).toBe("must be valid Unicode text (no lone surrogates)");
  });
});

describe("messageTextProblem enforces the length limit in code points", () => {
  test("exactly the maximum is fine", () => {
    expect(messageTextProblem("a".repeat(10), 10)).toBeNull();
  });

  test("one over the maximum is refused, with the count", () => {
    expect(messageTextProblem("a".repeat(11), 10)).toBe("must be at most 10 characters (got 11)");
  });

  test("astral characters count as one each against the limit", () => {
    expect(messageTextProblem("😀".repeat(10), 10)).toBeNull();
    expect(messageTextProblem("😀".repeat(11), 10)).toBe("must be at most 10 characters (got 11)");
  });
});

describe("cleanInboundText: inbound text made to pass the message rules", () => {
  test("a text that passes is unchanged", () => {
    expect(cleanInboundText("Hola 😀\tok\r\nbye", 100)).toEqual({ text: "Hola 😀\tok\r\nbye", changes: {} });
  });

  test("C0, DEL and C1 control characters are removed and counted; tab, LF, CR stay", () => {
    const { text, changes } = cleanInboundText("a\u0000b\u0007c\u007fd\u0085e\u009ff\tg\nh\ri", 100);
    expect(text).toBe("abcdef\tg\nh\ri");
    expect(changes).toEqual({ controlCharacters: 5 });
    expect(messageTextProblem(text!, 100)).toBeNull();
  });

  test("lone surrogates become U+FFFD", () => {
    const { text, changes } = cleanInboundText("x\uD800y", 100);
    expect(text).toBe("x\uFFFDy");
    expect(changes).toEqual({ replacedInvalid: true });
  });

  test("over the limit: the first max-1 code points and the mark, never a split surrogate pair", () => {
    const { text, changes } = cleanInboundText("😀😀😀😀😀", 3);
    expect(text).toBe(`😀😀${TRUNCATION_MARK}`);
    expect(codePointLength(text!)).toBe(3);
    expect(changes).toEqual({ truncatedFrom: 5 });
    expect(messageTextProblem(text!, 3)).toBeNull();
  });

  test("nothing readable left: null", () => {
    expect(cleanInboundText("\u0001 \u0002", 100).text).toBeNull();
    expect(cleanInboundText("", 100).text).toBeNull();
  });
});
