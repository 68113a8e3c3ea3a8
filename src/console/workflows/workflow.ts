import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../../api/router";

type Outputs = inferRouterOutputs<AppRouter>["workflows"];
export type Workflow = Outputs["list"]["workflows"][number];
export type Run = Outputs["runs"]["runs"][number];
export type RunResult = Outputs["run"];
export type RunInput = inferRouterInputs<AppRouter>["workflows"]["run"];
