CREATE TABLE `console_sessions` (
	`id_hash` text PRIMARY KEY NOT NULL,
	`key_hash` text NOT NULL,
	`csrf_token` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `console_sessions_expires_idx` ON `console_sessions` (`expires_at`);