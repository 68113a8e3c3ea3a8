import type { Reaction } from "../../vocabulary/reactions";

/** How the console names each tapback: its word, and its emoji as decoration beside it. */
export const REACTION_NAMES: Record<Reaction, { emoji: string; name: string }> = {
  love: { emoji: "❤️", name: "Love" },
  like: { emoji: "👍", name: "Like" },
  dislike: { emoji: "👎", name: "Dislike" },
  laugh: { emoji: "😂", name: "Laugh" },
  emphasize: { emoji: "‼️", name: "Emphasize" },
  question: { emoji: "❓", name: "Question" },
};
