CREATE TABLE `chat_mutes` (
	`chat_id` text NOT NULL,
	`phone` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`chat_id`, `phone`),
	FOREIGN KEY (`chat_id`) REFERENCES `chats`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `chats` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`name` text,
	`participants` text NOT NULL,
	`network` text,
	`network_id` text,
	`created_at` integer NOT NULL,
	`last_message_at` integer,
	`messages` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `chats_network_id_uq` ON `chats` (`network`,`network_id`);--> statement-breakpoint
CREATE INDEX `chats_last_message_idx` ON `chats` (`last_message_at`);--> statement-breakpoint
ALTER TABLE `messages` ADD `chat_id` text;--> statement-breakpoint
CREATE INDEX `messages_chat_timestamp_idx` ON `messages` (`chat_id`,`timestamp`,`id`) WHERE chat_id IS NOT NULL;--> statement-breakpoint
-- Every message stored before groups is in its contact's direct chat (src/vocabulary/chats.ts directChatId).
INSERT INTO `chats` (`id`, `kind`, `participants`, `created_at`, `last_message_at`, `messages`)
  SELECT 'dm_' || substr(`phone`, 2), 'direct', json_array(`phone`), min(`timestamp`), max(`timestamp`), count(*) FROM `messages` GROUP BY `phone`;
--> statement-breakpoint
-- A contact's count (its history's total) is of its direct chat only: a group message is not in it.
DROP TRIGGER `messages_count_insert`;
--> statement-breakpoint
CREATE TRIGGER `messages_count_insert` AFTER INSERT ON `messages` WHEN NEW.`chat_id` IS NULL BEGIN
  INSERT INTO `contacts` (`phone`, `messages`) VALUES (NEW.`phone`, 1)
    ON CONFLICT (`phone`) DO UPDATE SET `messages` = `messages` + 1,
      `typing_until` = CASE WHEN NEW.`direction` = 'inbound' THEN NULL ELSE `typing_until` END;
END;
--> statement-breakpoint
DROP TRIGGER `messages_count_delete`;
--> statement-breakpoint
CREATE TRIGGER `messages_count_delete` AFTER DELETE ON `messages` WHEN OLD.`chat_id` IS NULL BEGIN
  UPDATE `contacts` SET `messages` = `messages` - 1 WHERE `phone` = OLD.`phone`;
END;
--> statement-breakpoint
-- A direct chat is made by its first message; every message counts in its chat and moves its last_message_at.
CREATE TRIGGER `messages_chat_direct` AFTER INSERT ON `messages` WHEN NEW.`chat_id` IS NULL BEGIN
  INSERT INTO `chats` (`id`, `kind`, `participants`, `created_at`, `last_message_at`, `messages`)
    VALUES ('dm_' || substr(NEW.`phone`, 2), 'direct', json_array(NEW.`phone`), NEW.`timestamp`, NEW.`timestamp`, 1)
    ON CONFLICT (`id`) DO UPDATE SET `messages` = `messages` + 1, `last_message_at` = max(`last_message_at`, excluded.`last_message_at`);
END;
--> statement-breakpoint
CREATE TRIGGER `messages_chat_group` AFTER INSERT ON `messages` WHEN NEW.`chat_id` IS NOT NULL BEGIN
  UPDATE `chats` SET `messages` = `messages` + 1, `last_message_at` = max(coalesce(`last_message_at`, 0), NEW.`timestamp`) WHERE `id` = NEW.`chat_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `messages_chat_delete` AFTER DELETE ON `messages` BEGIN
  UPDATE `chats` SET `messages` = `messages` - 1 WHERE `id` = coalesce(OLD.`chat_id`, 'dm_' || substr(OLD.`phone`, 2));
END;
