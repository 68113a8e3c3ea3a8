CREATE TABLE `generations` (
	`id` text PRIMARY KEY NOT NULL,
	`phone` text NOT NULL,
	`body` text NOT NULL,
	`model` text NOT NULL,
	`language` text,
	`created_at` integer NOT NULL,
	`message_id` text
);
