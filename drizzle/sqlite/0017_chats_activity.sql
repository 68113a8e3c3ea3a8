DROP INDEX `chats_last_message_idx`;--> statement-breakpoint
CREATE INDEX `chats_kind_activity_idx` ON `chats` (`kind`, coalesce(last_message_at, created_at), `id`);