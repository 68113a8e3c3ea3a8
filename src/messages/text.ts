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
