/** What workflow authors import: `import { defineWorkflow } from "../src/workflow"`. */
export { defineWorkflow, isOptedOut } from "./workflows/define";
export type { ContextTurn, MessageRecord, SentMessage, Workflow, WorkflowContext } from "./workflows/define";
/** What a text does to its contact's opt-out ("out", "in" or null): the rule Textwire applies to inbound messages. */
export { optOutAction } from "./messages/opt-out";
