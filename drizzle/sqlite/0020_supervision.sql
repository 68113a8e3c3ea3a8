ALTER TABLE `chats` ADD `mode` text;--> statement-breakpoint
ALTER TABLE `chats` ADD `mode_before` text;--> statement-breakpoint
ALTER TABLE `chats` ADD `human_until` integer;--> statement-breakpoint
CREATE INDEX `chats_human_until_idx` ON `chats` (`human_until`) WHERE human_until IS NOT NULL;--> statement-breakpoint
CREATE INDEX `messages_draft_idx` ON `messages` (`timestamp`) WHERE status = 'draft';