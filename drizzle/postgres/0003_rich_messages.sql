CREATE TABLE "media" (
	"id" text PRIMARY KEY NOT NULL,
	"message_id" text NOT NULL,
	"position" integer NOT NULL,
	"content_type" text NOT NULL,
	"size" integer NOT NULL,
	"store_key" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "opted_out" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "opted_out_at" bigint;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "reply_to" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "send_at" bigint;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "media_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "media" ADD CONSTRAINT "media_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "media_message_position_uq" ON "media" USING btree ("message_id","position");--> statement-breakpoint
CREATE INDEX "messages_scheduled_idx" ON "messages" USING btree ("send_at","timestamp") WHERE status = 'scheduled';