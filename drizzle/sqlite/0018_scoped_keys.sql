ALTER TABLE `api_keys` ADD `scopes` text DEFAULT '*' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `lines` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `reach` text DEFAULT 'any' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `created_by` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `last_used_at` integer;