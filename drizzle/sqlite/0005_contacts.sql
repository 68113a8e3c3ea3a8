CREATE TABLE `contacts` (
	`phone` text PRIMARY KEY NOT NULL,
	`messages` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `contacts` (`phone`, `messages`) SELECT `phone`, count(*) FROM `messages` GROUP BY `phone`;
--> statement-breakpoint
CREATE TRIGGER `messages_count_insert` AFTER INSERT ON `messages` BEGIN
  INSERT INTO `contacts` (`phone`, `messages`) VALUES (NEW.`phone`, 1)
    ON CONFLICT (`phone`) DO UPDATE SET `messages` = `messages` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `messages_count_delete` AFTER DELETE ON `messages` BEGIN
  UPDATE `contacts` SET `messages` = `messages` - 1 WHERE `phone` = OLD.`phone`;
END;
