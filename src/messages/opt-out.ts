import { AppError } from "../errors";
import type { OptOutType } from "../vocabulary/messages";

/** Words that opt a contact out: the carriers' standard opt-out keywords. */
export const OPT_OUT_WORDS: readonly string[] = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE"];
/** Words that opt a contact back in. */
export const OPT_IN_WORDS: readonly string[] = ["START", "UNSTOP", "YES"];

const OUT = new Set(OPT_OUT_WORDS);
const IN = new Set(OPT_IN_WORDS);

/** Spaces and punctuation at either end of the text (inside it they count: "STOP ALL" is not "STOPALL"). */
const SURROUNDING = /^[\s\p{P}]+|[\s\p{P}]+$/gu;

/** A text as a keyword is matched: any case and width, spaces and punctuation around it ignored. */
export const keywordOf = (text: string) => text.normalize("NFKC").replace(SURROUNDING, "").toUpperCase();

/** Whether an inbound text asks for a person: its whole text one of `keywords` (HANDOFF_KEYWORDS), matched as STOP is. */
export const asksForPerson = (text: string, keywords: readonly string[]) => {
  const word = keywordOf(text);
  return word !== "" && keywords.some((k) => keywordOf(k) === word);
};

/**
 * What an inbound message does to its contact's opt-out: "out", "in" or nothing (null).
 * The whole text must be one keyword, in any case (and any width: "ＳＴＯＰ"), with spaces
 * and punctuation around it ignored: "Stop." and " stop " opt out, "stop please" and
 * "STOP ALL" do not. The network's own classification (Twilio's OptOutType with Advanced
 * Opt-Out, which may know more keywords) decides when it says STOP or START.
 */
export function optOutAction(text: string, networkType?: OptOutType | null): "out" | "in" | null {
  if (networkType === "STOP") return "out";
  if (networkType === "START") return "in";
  const word = keywordOf(text);
  if (OUT.has(word)) return "out";
  if (IN.has(word)) return "in";
  return null;
}

/** The answer to a send to an opted-out contact (403, nothing stored). */
export const OPTED_OUT_MESSAGE = "phone: the contact opted out by replying STOP";

export const optedOutError = () => new AppError("FORBIDDEN", OPTED_OUT_MESSAGE);

/** Twilio's error code for a send to a number that replied STOP ("Attempt to send to unsubscribed recipient"). */
export const TWILIO_UNSUBSCRIBED = 21610;
