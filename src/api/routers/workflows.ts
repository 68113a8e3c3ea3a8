import { listRuns, listWorkflows, openWorkflows, runAnswer, runNow, runNowInput, runNowOutput, runsInput, runsOutput, workflowsOutput } from "../../workflows/overview";
import { scoped, documentedOnly, noInput, router } from "../trpc";

/** WORKFLOWS_DIR's workflows, as `bun run textwire workflows` shows and runs them (tRPC only, for the console). */
export const workflowsRouter = router({
  list: scoped("workflows:manage")
    .input(noInput)
    .output(documentedOnly(workflowsOutput))
    .query(async ({ ctx }) => ({ workflows: await listWorkflows(await openWorkflows(ctx.app, ctx.app.log)) })),

  runs: scoped("workflows:manage")
    .input(runsInput)
    .output(documentedOnly(runsOutput))
    .query(async ({ ctx, input }) => ({ runs: await listRuns(await openWorkflows(ctx.app, ctx.app.log), input.name, input.limit) })),

  run: scoped("workflows:manage")
    .input(runNowInput)
    .output(documentedOnly(runNowOutput))
    .mutation(async ({ ctx, input }) => runAnswer(await runNow(await openWorkflows(ctx.app, ctx.app.log), input.name, input.dry_run ?? false))),
});
