CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`timestamp` integer NOT NULL,
	`message_id` text,
	`status` text,
	`previous_status` text,
	`error` text,
	`run_id` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_timestamp_uq` ON `events` (`timestamp`);--> statement-breakpoint
CREATE INDEX `events_type_timestamp_idx` ON `events` (`type`,`timestamp`);--> statement-breakpoint
CREATE INDEX `events_run_idx` ON `events` (`run_id`) WHERE run_id IS NOT NULL;--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`endpoint_id` text NOT NULL,
	`event_id` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer NOT NULL,
	`last_status` integer,
	`last_error` text,
	`last_attempt_at` integer,
	`next_attempt_at` integer,
	`lease_owner` text,
	`lease_until` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`event_id`) REFERENCES `events`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_endpoint_event_uq` ON `webhook_deliveries` (`endpoint_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due_idx` ON `webhook_deliveries` (`endpoint_id`,`next_attempt_at`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint_created_idx` ON `webhook_deliveries` (`endpoint_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_event_idx` ON `webhook_deliveries` (`event_id`);--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`events` text,
	`description` text,
	`enabled` integer NOT NULL,
	`disabled_reason` text,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_until` integer,
	`failing_since` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
-- Events are written by the database in the transaction of the change they report, each
-- after the newest (one writer at a time): timestamps unique and increasing in commit order.
CREATE TRIGGER `events_message_received` AFTER INSERT ON `messages` WHEN NEW.`direction` = 'inbound' BEGIN
  INSERT INTO `events` (`id`, `type`, `timestamp`, `message_id`, `status`, `error`)
  VALUES ('evt_' || lower(hex(randomblob(16))), 'message.received',
          max(coalesce((SELECT max(`timestamp`) FROM `events`), 0) + 1, NEW.`timestamp`), NEW.`id`, NEW.`status`, NEW.`error`);
END;
--> statement-breakpoint
-- Only an applied change fires: the status rule is in the UPDATE's WHERE, so a refused report changes no row.
CREATE TRIGGER `events_message_status_updated` AFTER UPDATE OF `status` ON `messages`
WHEN NEW.`direction` = 'outbound' AND NEW.`status` IS NOT OLD.`status` BEGIN
  INSERT INTO `events` (`id`, `type`, `timestamp`, `message_id`, `status`, `previous_status`, `error`)
  VALUES ('evt_' || lower(hex(randomblob(16))), 'message.status_updated',
          max(coalesce((SELECT max(`timestamp`) FROM `events`), 0) + 1, NEW.`updated_at`), NEW.`id`, NEW.`status`, OLD.`status`, NEW.`error`);
END;
--> statement-breakpoint
CREATE TRIGGER `events_workflow_run_failed` AFTER UPDATE OF `status` ON `workflow_runs`
WHEN OLD.`status` = 'running' AND NEW.`status` IN ('error', 'timeout') AND NOT NEW.`dry_run` BEGIN
  INSERT INTO `events` (`id`, `type`, `timestamp`, `run_id`)
  VALUES ('evt_' || lower(hex(randomblob(16))), 'workflow.run_failed',
          max(coalesce((SELECT max(`timestamp`) FROM `events`), 0) + 1, coalesce(NEW.`ended_at`, 0) * 1000), NEW.`id`);
END;
--> statement-breakpoint
-- Each event is queued at once for every enabled endpoint subscribed to its type (events NULL: every type).
CREATE TRIGGER `events_fan_out` AFTER INSERT ON `events` BEGIN
  INSERT INTO `webhook_deliveries` (`id`, `endpoint_id`, `event_id`, `state`, `attempts`, `next_attempt_at`, `created_at`, `updated_at`)
  SELECT 'dlv_' || lower(hex(randomblob(16))), e.`id`, NEW.`id`, 'pending', 0, NEW.`timestamp` / 1000, NEW.`timestamp` / 1000, NEW.`timestamp` / 1000
  FROM `webhook_endpoints` e
  WHERE e.`enabled` AND (e.`events` IS NULL OR EXISTS (SELECT 1 FROM json_each(e.`events`) WHERE `value` = NEW.`type`));
END;
