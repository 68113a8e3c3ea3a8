-- Message times move from milliseconds to microseconds since the epoch (docs/operations.md),
-- with every column compared with them: a message's updated_at and each workflow's cursor.
UPDATE `messages` SET `timestamp` = `timestamp` * 1000, `updated_at` = `updated_at` * 1000;
--> statement-breakpoint
UPDATE `workflows` SET `cursor` = `cursor` * 1000;
--> statement-breakpoint
CREATE INDEX `workflow_runs_started_idx` ON `workflow_runs` (`started_at`);
