CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"hash" text NOT NULL,
	"prefix" text NOT NULL,
	"created_at" bigint NOT NULL,
	"revoked_at" bigint,
	CONSTRAINT "api_keys_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "contacts" (
	"phone" text PRIMARY KEY NOT NULL,
	"messages" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "generations" (
	"id" text PRIMARY KEY NOT NULL,
	"phone" text NOT NULL,
	"body" text NOT NULL,
	"model" text NOT NULL,
	"language" text,
	"created_at" bigint NOT NULL,
	"message_id" text
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"scope" text NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"state" text NOT NULL,
	"response" text,
	"message_id" text,
	"locked_until" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "idempotency_keys_scope_key_pk" PRIMARY KEY("scope","key")
);
--> statement-breakpoint
CREATE TABLE "leases" (
	"name" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"until" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "message_clock" (
	"id" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"t" bigint NOT NULL,
	CONSTRAINT "message_clock_one_row" CHECK ("message_clock"."id")
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"phone" text NOT NULL,
	"body" text NOT NULL,
	"direction" text NOT NULL,
	"status" text NOT NULL,
	"timestamp" bigint NOT NULL,
	"network" text NOT NULL,
	"network_id" text,
	"error" text,
	"updated_at" bigint NOT NULL,
	"opt_out_type" text
);
--> statement-breakpoint
CREATE TABLE "network_state" (
	"network" text NOT NULL,
	"key" text NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "network_state_network_key_pk" PRIMARY KEY("network","key")
);
--> statement-breakpoint
CREATE TABLE "status_reports" (
	"id" text PRIMARY KEY NOT NULL,
	"message_id" text NOT NULL,
	"network" text NOT NULL,
	"network_status" text NOT NULL,
	"status" text NOT NULL,
	"reported_at" bigint NOT NULL,
	"received_at" bigint NOT NULL,
	"applied" boolean NOT NULL,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "workflow_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"workflow" text NOT NULL,
	"trigger" text NOT NULL,
	"dry_run" boolean NOT NULL,
	"started_at" bigint NOT NULL,
	"ended_at" bigint,
	"status" text NOT NULL,
	"error" text,
	"handled" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workflow_state" (
	"workflow" text NOT NULL,
	"key" text NOT NULL,
	"value" text NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "workflow_state_workflow_key_pk" PRIMARY KEY("workflow","key")
);
--> statement-breakpoint
CREATE TABLE "workflows" (
	"name" text PRIMARY KEY NOT NULL,
	"cursor" bigint NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	"backoff_until" bigint,
	"lease_owner" text,
	"lease_until" bigint,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_active_name_uq" ON "api_keys" USING btree ("name") WHERE revoked_at IS NULL;--> statement-breakpoint
CREATE INDEX "idempotency_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_timestamp_uq" ON "messages" USING btree ("timestamp");--> statement-breakpoint
CREATE INDEX "messages_phone_timestamp_idx" ON "messages" USING btree ("phone","timestamp","id");--> statement-breakpoint
CREATE INDEX "messages_inbound_timestamp_idx" ON "messages" USING btree ("timestamp") WHERE direction = 'inbound';--> statement-breakpoint
CREATE INDEX "messages_inbound_phone_timestamp_idx" ON "messages" USING btree ("phone","timestamp") WHERE direction = 'inbound';--> statement-breakpoint
CREATE UNIQUE INDEX "messages_network_id_uq" ON "messages" USING btree ("network","direction","network_id");--> statement-breakpoint
CREATE INDEX "messages_queued_idx" ON "messages" USING btree ("updated_at") WHERE status = 'queued';--> statement-breakpoint
CREATE INDEX "status_reports_message_idx" ON "status_reports" USING btree ("message_id");--> statement-breakpoint
CREATE INDEX "workflow_runs_workflow_started_idx" ON "workflow_runs" USING btree ("workflow","started_at");--> statement-breakpoint
CREATE INDEX "workflow_runs_started_idx" ON "workflow_runs" USING btree ("started_at");