import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatPromptTemplate, MessagesPlaceholder } from "@langchain/core/prompts";
import { countryLabel, languageLabel } from "./language";

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
