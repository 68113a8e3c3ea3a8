/** Control characters other than tab, LF and CR (C0, DEL and C1). */
const FORBIDDEN_CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

/** Length in Unicode code points, the unit of MAX_MESSAGE_LENGTH. */
export function codePointLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Why `text` cannot be a message body, or null when it can. */
export function messageTextProblem(text: string, maxLength: number): string | null {
  if (text.length === 0) return "must not be empty";
  if (!text.isWellFormed()) return "must be valid Unicode text (no lone surrogates)";
  if (FORBIDDEN_CONTROL.test(text)) return "must not contain control characters other than tab, LF and CR";
  if (text.trim().length === 0) return "must not be only whitespace";
  const length = codePointLength(text);
  if (length > maxLength) return `must be at most ${maxLength} characters (got ${length})`;
  return null;
}

/** FORBIDDEN_CONTROL for every occurrence. */
const FORBIDDEN_CONTROL_ALL = new RegExp(FORBIDDEN_CONTROL.source, "g");
/** Ends a text cut at the length limit, so a reader sees it was cut. */
export const TRUNCATION_MARK = "…";

/** What cleanInboundText did to a text (each flag set only when it happened). */
export interface InboundTextChanges {
  /** Control characters other than tab, LF and CR removed. */
  controlCharacters?: number;
  /** Lone surrogates replaced by U+FFFD. */
  replacedInvalid?: boolean;
  /** The code point length received, when the text was cut to the limit. */
  truncatedFrom?: number;
}

/**
 * Inbound text as the network delivered it, made to pass the rules of a sent message
 * (messageTextProblem) without losing the message: control characters other than tab,
 * LF and CR are removed, lone surrogates become U+FFFD, and a text longer than
 * `maxLength` code points keeps its first `maxLength - 1` followed by TRUNCATION_MARK.
 * `text` is null when nothing readable is left (empty or only whitespace).
 * The rules are described in docs/networks.md.
 */
export function cleanInboundText(raw: string, maxLength: number): { text: string | null; changes: InboundTextChanges } {
  const changes: InboundTextChanges = {};
  let text = raw;
  if (!text.isWellFormed()) {
    text = text.toWellFormed();
    changes.replacedInvalid = true;
  }
  const controls = text.match(FORBIDDEN_CONTROL_ALL);
  if (controls) {
    text = text.replace(FORBIDDEN_CONTROL_ALL, "");
    changes.controlCharacters = controls.length;
  }
  const length = codePointLength(text);
  if (length > maxLength) {
    const kept = Array.from(text).slice(0, Math.max(0, maxLength - 1)).join("");
    text = kept + TRUNCATION_MARK;
    changes.truncatedFrom = length;
  }
  return { text: text.trim().length === 0 ? null : text, changes };
}
