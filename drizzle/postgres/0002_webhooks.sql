CREATE TABLE "event_clock" (
	"id" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"t" bigint NOT NULL,
	CONSTRAINT "event_clock_one_row" CHECK ("event_clock"."id")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"timestamp" bigint NOT NULL,
	"message_id" text,
	"status" text,
	"previous_status" text,
	"error" text,
	"run_id" text
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"endpoint_id" text NOT NULL,
	"event_id" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer NOT NULL,
	"last_status" integer,
	"last_error" text,
	"last_attempt_at" bigint,
	"next_attempt_at" bigint,
	"lease_owner" text,
	"lease_until" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"events" text[],
	"description" text,
	"enabled" boolean NOT NULL,
	"disabled_reason" text,
	"secret" text NOT NULL,
	"previous_secret" text,
	"previous_secret_until" bigint,
	"failing_since" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "events_timestamp_uq" ON "events" USING btree ("timestamp");--> statement-breakpoint
CREATE INDEX "events_type_timestamp_idx" ON "events" USING btree ("type","timestamp");--> statement-breakpoint
CREATE INDEX "events_run_idx" ON "events" USING btree ("run_id") WHERE run_id IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_endpoint_event_uq" ON "webhook_deliveries" USING btree ("endpoint_id","event_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("endpoint_id","next_attempt_at") WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_created_idx" ON "webhook_deliveries" USING btree ("endpoint_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" USING btree ("event_id");--> statement-breakpoint
INSERT INTO "event_clock" ("id", "t") VALUES (true, 0);
--> statement-breakpoint
-- Stores one event: the event clock moves first and its row lock is held to commit, so
-- event timestamps increase in the order events become visible, whichever process writes them.
CREATE FUNCTION "record_event"("p_type" text, "p_message_id" text, "p_status" text, "p_previous_status" text, "p_error" text, "p_run_id" text)
RETURNS void LANGUAGE sql AS $$
  WITH "clock" AS (
    UPDATE "event_clock" SET "t" = greatest("t" + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint) RETURNING "t"
  )
  INSERT INTO "events" ("id", "type", "timestamp", "message_id", "status", "previous_status", "error", "run_id")
  SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), p_type, "clock"."t", p_message_id, p_status, p_previous_status, p_error, p_run_id
  FROM "clock";
$$;
--> statement-breakpoint
CREATE FUNCTION "messages_event"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM "record_event"('message.received', NEW."id", NEW."status", NULL, NEW."error", NULL);
  ELSE
    PERFORM "record_event"('message.status_updated', NEW."id", NEW."status", OLD."status", NEW."error", NULL);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "events_message_received" AFTER INSERT ON "messages"
  FOR EACH ROW WHEN (NEW."direction" = 'inbound') EXECUTE FUNCTION "messages_event"();
--> statement-breakpoint
-- Only an applied change fires: the status rule is in the UPDATE's WHERE, so a refused report changes no row.
CREATE TRIGGER "events_message_status_updated" AFTER UPDATE OF "status" ON "messages"
  FOR EACH ROW WHEN (NEW."direction" = 'outbound' AND NEW."status" IS DISTINCT FROM OLD."status") EXECUTE FUNCTION "messages_event"();
--> statement-breakpoint
CREATE FUNCTION "workflow_runs_event"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "record_event"('workflow.run_failed', NULL, NULL, NULL, NULL, NEW."id");
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "events_workflow_run_failed" AFTER UPDATE OF "status" ON "workflow_runs"
  FOR EACH ROW WHEN (OLD."status" = 'running' AND NEW."status" IN ('error', 'timeout') AND NOT NEW."dry_run") EXECUTE FUNCTION "workflow_runs_event"();
--> statement-breakpoint
-- Each event is queued at once for every enabled endpoint subscribed to its type (events NULL: every type).
CREATE FUNCTION "events_fan_out"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "webhook_deliveries" ("id", "endpoint_id", "event_id", "state", "attempts", "next_attempt_at", "created_at", "updated_at")
  SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), e."id", NEW."id", 'pending', 0, n.ms, n.ms, n.ms
  FROM "webhook_endpoints" e, (SELECT floor(extract(epoch FROM now()) * 1000)::bigint AS ms) n
  WHERE e."enabled" AND (e."events" IS NULL OR NEW."type" = ANY (e."events"));
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "events_fan_out" AFTER INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION "events_fan_out"();
