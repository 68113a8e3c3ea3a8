/** What workflow authors import: `import { defineWorkflow } from "../src/workflow"`. */
export { defineWorkflow, isOptedOut, isSkipped, isUnsupported } from "./workflows/define";
export type {
  ChatMode,
  ContextTurn,
  GroupsMode,
  MessageRecord,
  NetworkCapabilities,
  NetworkInfo,
  PolledMessage,
  Reaction,
  SendOutcome,
  SentMessage,
  SkippedSend,
  SkipReason,
  Workflow,
  WorkflowContext,
} from "./workflows/define";
/** What a text does to its contact's opt-out ("out", "in" or null): the rule Textwire applies to inbound messages. */
export { optOutAction } from "./messages/opt-out";
/** The reaction an iPhone's SMS reaction text names (`Loved “…”`), or undefined: the rule Textwire applies to inbound texts. */
export { parseReactionText } from "./messages/reactions";
/** A chat's history (newest first) as `generate`'s context, oldest first, without messages that have no text; with `senders`, each inbound turn names who wrote it. */
export { historyContext } from "./generator/context";
