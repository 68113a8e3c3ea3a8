CREATE TABLE `imessage_availability` (
	`phone` text PRIMARY KEY NOT NULL,
	`available` integer NOT NULL,
	`checked_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `lines` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`network` text NOT NULL,
	`address` text,
	`enabled` integer NOT NULL,
	`is_default` integer NOT NULL,
	`fallback` text,
	`settings` text NOT NULL,
	`credentials` text,
	`managed` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `lines_name_unique` ON `lines` (`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `lines_default_uq` ON `lines` (`is_default`) WHERE is_default;--> statement-breakpoint
ALTER TABLE `chats` ADD `line_id` text DEFAULT 'ln_default' NOT NULL;--> statement-breakpoint
ALTER TABLE `messages` ADD `line_id` text DEFAULT 'ln_default' NOT NULL;--> statement-breakpoint
-- A direct chat's line is its last message's: where the next send to the contact sticks (src/lines/route.ts).
DROP TRIGGER `messages_chat_direct`;
--> statement-breakpoint
CREATE TRIGGER `messages_chat_direct` AFTER INSERT ON `messages` WHEN NEW.`chat_id` IS NULL BEGIN
  INSERT INTO `chats` (`id`, `kind`, `participants`, `created_at`, `last_message_at`, `messages`, `line_id`)
    VALUES ('dm_' || substr(NEW.`phone`, 2), 'direct', json_array(NEW.`phone`), NEW.`timestamp`, NEW.`timestamp`, 1, NEW.`line_id`)
    ON CONFLICT (`id`) DO UPDATE SET `messages` = `messages` + 1, `last_message_at` = max(`last_message_at`, excluded.`last_message_at`), `line_id` = excluded.`line_id`;
END;
