CREATE INDEX `generations_created_idx` ON `generations` (`created_at`);--> statement-breakpoint
CREATE INDEX `status_reports_received_idx` ON `status_reports` (`received_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_settled_idx` ON `webhook_deliveries` (`updated_at`) WHERE state <> 'pending';