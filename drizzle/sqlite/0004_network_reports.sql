CREATE TABLE `network_state` (
	`network` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`network`, `key`)
);
--> statement-breakpoint
CREATE TABLE `status_reports` (
	`id` text PRIMARY KEY NOT NULL,
	`message_id` text NOT NULL,
	`network` text NOT NULL,
	`network_status` text NOT NULL,
	`status` text NOT NULL,
	`reported_at` integer NOT NULL,
	`received_at` integer NOT NULL,
	`applied` integer NOT NULL,
	`error` text
);
--> statement-breakpoint
CREATE INDEX `status_reports_message_idx` ON `status_reports` (`message_id`);