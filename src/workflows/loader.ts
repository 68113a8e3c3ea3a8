import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { fieldIssues, issuesMessage } from "../errors";
import { errorText } from "../log";
import { workflowShape, type Workflow } from "./define";

export interface LoadProblem {
  path: string;
  reason: string;
}

const WORKFLOW_FILE = /\.(ts|js|mjs)$/;
const NOT_WORKFLOW = /\.(test|spec)\.(ts|js|mjs)$|\.d\.ts$/;

/**
 * The workflows of a folder: the default export of each `*.ts`/`*.js` file (not tests).
 * A file that fails to import, has a bad shape or repeats a name is reported and skipped.
 */
export async function loadWorkflows(dir: string): Promise<{ workflows: Workflow[]; problems: LoadProblem[] }> {
  const root = resolve(dir);
  const workflows: Workflow[] = [];
  const problems: LoadProblem[] = [];
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    return { workflows, problems: [{ path: root, reason: "WORKFLOWS_DIR is not a folder" }] };
  }
  const files = readdirSync(root)
    .filter((f) => WORKFLOW_FILE.test(f) && !NOT_WORKFLOW.test(f))
    .sort();
  const seen = new Map<string, string>();
  for (const file of files) {
    const path = join(root, file);
    let exported: unknown;
    try {
      exported = (await import(pathToFileURL(path).href)).default;
    } catch (err) {
      problems.push({ path, reason: `failed to load: ${errorText(err)}` });
      continue;
    }
    if (exported === undefined) {
      problems.push({ path, reason: "has no default export (export default defineWorkflow({ ... }))" });
      continue;
    }
    const parsed = workflowShape.safeParse(exported);
    if (!parsed.success) {
      problems.push({ path, reason: `bad workflow: ${issuesMessage(fieldIssues(parsed.error.issues))}` });
      continue;
    }
    const wf = exported as Workflow;
    const first = seen.get(wf.name);
    if (first) {
      problems.push({ path, reason: `duplicate workflow name "${wf.name}" (already defined in ${first})` });
      continue;
    }
    seen.set(wf.name, path);
    workflows.push(wf);
  }
  return { workflows, problems };
}
