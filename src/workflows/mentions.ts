/** The words MENTION_PATTERNS holds by default. */
export const DEFAULT_MENTION_PATTERNS = ["textwire"] as const;

const escape = (word: string) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Whether a text mentions us: it holds one of `patterns` as a whole word, any case
 * ("Textwire," and "@textwire" do, "textwired" does not). No patterns: nothing mentions.
 */
export function mentionMatcher(patterns: readonly string[]): (text: string) => boolean {
  if (patterns.length === 0) return () => false;
  // Letters and digits of any script bound a word, so \b (ASCII only) is not enough.
  const re = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${patterns.map(escape).join("|")})(?![\\p{L}\\p{N}_])`, "iu");
  return (text) => re.test(text);
}
