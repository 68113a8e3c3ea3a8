ALTER TABLE "api_keys" ADD COLUMN "scopes" text DEFAULT '*' NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "lines" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "reach" text DEFAULT 'any' NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "created_by" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "last_used_at" bigint;