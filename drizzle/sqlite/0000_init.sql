CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`hash` text NOT NULL,
	`prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash_unique` ON `api_keys` (`hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_active_name_uq` ON `api_keys` (`name`) WHERE revoked_at IS NULL;--> statement-breakpoint
CREATE TABLE `messages` (
	`id` text PRIMARY KEY NOT NULL,
	`phone` text NOT NULL,
	`body` text NOT NULL,
	`direction` text NOT NULL,
	`status` text NOT NULL,
	`timestamp` integer NOT NULL,
	`network` text NOT NULL,
	`network_id` text,
	`error` text,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `messages_timestamp_uq` ON `messages` (`timestamp`);--> statement-breakpoint
CREATE INDEX `messages_phone_timestamp_idx` ON `messages` (`phone`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `messages_inbound_timestamp_idx` ON `messages` (`timestamp`) WHERE direction = 'inbound';--> statement-breakpoint
CREATE INDEX `messages_inbound_phone_timestamp_idx` ON `messages` (`phone`,`timestamp`) WHERE direction = 'inbound';--> statement-breakpoint
CREATE UNIQUE INDEX `messages_network_id_uq` ON `messages` (`network`,`direction`,`network_id`);