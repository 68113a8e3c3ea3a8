CREATE TABLE `workflow_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`workflow` text NOT NULL,
	`trigger` text NOT NULL,
	`dry_run` integer NOT NULL,
	`started_at` integer NOT NULL,
	`ended_at` integer,
	`status` text NOT NULL,
	`error` text,
	`handled` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workflow_runs_workflow_started_idx` ON `workflow_runs` (`workflow`,`started_at`);--> statement-breakpoint
CREATE TABLE `workflow_state` (
	`workflow` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`workflow`, `key`)
);
--> statement-breakpoint
CREATE TABLE `workflows` (
	`name` text PRIMARY KEY NOT NULL,
	`cursor` integer NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	`backoff_until` integer,
	`lease_owner` text,
	`lease_until` integer,
	`created_at` integer NOT NULL
);
