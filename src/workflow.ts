/** What workflow authors import: `import { defineWorkflow } from "../src/workflow"`. */
export { defineWorkflow } from "./workflows/define";
export type { ContextTurn, MessageRecord, SentMessage, Workflow, WorkflowContext } from "./workflows/define";
