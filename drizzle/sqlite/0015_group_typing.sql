ALTER TABLE `chats` ADD `our_typing_until` integer;--> statement-breakpoint
CREATE INDEX `chats_our_typing_idx` ON `chats` (`our_typing_until`) WHERE our_typing_until IS NOT NULL;