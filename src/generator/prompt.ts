import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatPromptTemplate, MessagesPlaceholder } from "@langchain/core/prompts";

export const replyPrompt = ChatPromptTemplate.fromMessages([
  [
    "system",
    [
      "You write replies to text messages (SMS) on behalf of a business, to a contact.",
      "Write only the text of the next message: short, plain text, no markdown, no quotes around it, no signature.",
      "Language: {language}",
      "The contact's phone number is from {country}; let that inform spelling, units and formality.",
      "Instructions from the sender: {instructions}",
    ].join("\n"),
  ],
  new MessagesPlaceholder("conversation"),
]);

export interface ContextTurn {
  role: "user" | "assistant";
  content: string;
}

/** The conversation as chat messages: the contact's turns as user, ours as assistant. */
export function conversationMessages(context: ContextTurn[]): BaseMessage[] {
  return context.map((turn) => (turn.role === "user" ? new HumanMessage(turn.content) : new AIMessage(turn.content)));
}

const languageNames = new Intl.DisplayNames(["en"], { type: "language", fallback: "none" });
const regionNames = new Intl.DisplayNames(["en"], { type: "region", fallback: "none" });

/** "Spanish (es)" for a BCP 47 tag, the name itself for a name such as "Spanish". */
export function languageLabel(language: string): string {
  try {
    const [tag] = Intl.getCanonicalLocales(language);
    const name = tag ? languageNames.of(tag) : undefined;
    if (tag && name && name.toLowerCase() !== tag.toLowerCase()) return `${name} (${tag})`;
  } catch {
    // Not a tag: a language name.
  }
  return language;
}

/** Whether `language` is a BCP 47 tag or a plausible language name. */
export function isLanguage(language: string): boolean {
  if (/^[\p{L}][\p{L} ()-]{1,49}$/u.test(language)) return true;
  try {
    return Intl.getCanonicalLocales(language).length === 1;
  } catch {
    return false;
  }
}

/** "United States (US)" for a country code, or "an unknown country". */
export function countryLabel(country: string | undefined): string {
  if (!country) return "an unknown country";
  const name = regionNames.of(country);
  return name ? `${name} (${country})` : country;
}

export function promptValues(input: { context: ContextTurn[]; instructions?: string; language?: string; country?: string }) {
  return {
    language: input.language
      ? `write the reply in ${languageLabel(input.language)}.`
      : "write the reply in the language of the contact's last message.",
    country: countryLabel(input.country),
    instructions: input.instructions?.trim() || "none; be helpful, friendly and brief.",
    conversation: conversationMessages(input.context),
  };
}
