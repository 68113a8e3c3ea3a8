/** What started a workflow run. */
export const RUN_TRIGGERS = ["schedule", "manual"] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

/** A run is `running` until it ends with one of the others. */
export const RUN_STATUSES = ["ok", "error", "timeout", "running"] as const;
/** How a run ended. */
export type RunStatus = Exclude<(typeof RUN_STATUSES)[number], "running">;
