CREATE TABLE `media` (
	`id` text PRIMARY KEY NOT NULL,
	`message_id` text NOT NULL,
	`position` integer NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`store_key` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `media_message_position_uq` ON `media` (`message_id`,`position`);--> statement-breakpoint
ALTER TABLE `contacts` ADD `opted_out` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `contacts` ADD `opted_out_at` integer;--> statement-breakpoint
ALTER TABLE `messages` ADD `reply_to` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `send_at` integer;--> statement-breakpoint
ALTER TABLE `messages` ADD `media_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `messages_scheduled_idx` ON `messages` (`send_at`,`timestamp`) WHERE status = 'scheduled';