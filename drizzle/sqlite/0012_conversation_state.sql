CREATE TABLE `reactions` (
	`message_id` text NOT NULL,
	`direction` text NOT NULL,
	`phone` text NOT NULL,
	`reaction` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`message_id`, `direction`, `phone`),
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `contacts` ADD `typing_until` integer;--> statement-breakpoint
ALTER TABLE `contacts` ADD `our_typing_until` integer;--> statement-breakpoint
CREATE INDEX `contacts_our_typing_idx` ON `contacts` (`our_typing_until`) WHERE our_typing_until IS NOT NULL;--> statement-breakpoint
ALTER TABLE `events` ADD `data` text;--> statement-breakpoint
ALTER TABLE `messages` ADD `reaction_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `messages` ADD `read_at` integer;--> statement-breakpoint
ALTER TABLE `messages` ADD `edited_at` integer;--> statement-breakpoint
ALTER TABLE `messages` ADD `edit_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `messages` ADD `unsent_at` integer;--> statement-breakpoint
CREATE INDEX `messages_unread_idx` ON `messages` (`phone`) WHERE direction = 'inbound' AND read_at IS NULL;--> statement-breakpoint
-- Inbound messages stored before read state existed count as read: an upgrade shows no old message as unread.
UPDATE `messages` SET `read_at` = `timestamp` / 1000 WHERE `direction` = 'inbound';
--> statement-breakpoint
-- Each message's reactions are counted, so a page reads reactions only for rows that have some
-- (a replaced reaction is an upsert's UPDATE: it counts once).
CREATE TRIGGER `reactions_count_insert` AFTER INSERT ON `reactions` BEGIN
  UPDATE `messages` SET `reaction_count` = `reaction_count` + 1 WHERE `id` = NEW.`message_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `reactions_count_delete` AFTER DELETE ON `reactions` BEGIN
  UPDATE `messages` SET `reaction_count` = `reaction_count` - 1 WHERE `id` = OLD.`message_id`;
END;
--> statement-breakpoint
-- The contact's message ends their typing: kept by the counter trigger (0005_contacts.sql), no statement more per message.
DROP TRIGGER `messages_count_insert`;
--> statement-breakpoint
CREATE TRIGGER `messages_count_insert` AFTER INSERT ON `messages` BEGIN
  INSERT INTO `contacts` (`phone`, `messages`) VALUES (NEW.`phone`, 1)
    ON CONFLICT (`phone`) DO UPDATE SET `messages` = `messages` + 1,
      `typing_until` = CASE WHEN NEW.`direction` = 'inbound' THEN NULL ELSE `typing_until` END;
END;
