CREATE TABLE "reactions" (
	"message_id" text NOT NULL,
	"direction" text NOT NULL,
	"phone" text NOT NULL,
	"reaction" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "reactions_message_id_direction_phone_pk" PRIMARY KEY("message_id","direction","phone")
);
--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "typing_until" bigint;--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "our_typing_until" bigint;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "data" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "reaction_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "read_at" bigint;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "edited_at" bigint;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "edit_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "unsent_at" bigint;--> statement-breakpoint
ALTER TABLE "reactions" ADD CONSTRAINT "reactions_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "contacts_our_typing_idx" ON "contacts" USING btree ("our_typing_until") WHERE our_typing_until IS NOT NULL;--> statement-breakpoint
CREATE INDEX "messages_unread_idx" ON "messages" USING btree ("phone") WHERE direction = 'inbound' AND read_at IS NULL;--> statement-breakpoint
-- Inbound messages stored before read state existed count as read: an upgrade shows no old message as unread.
UPDATE "messages" SET "read_at" = "timestamp" / 1000 WHERE "direction" = 'inbound';
--> statement-breakpoint
-- Each message's reactions are counted, so a page reads reactions only for rows that have some
-- (a replaced reaction is an upsert's UPDATE: it counts once).
CREATE FUNCTION "reactions_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE "messages" SET "reaction_count" = "reaction_count" + 1 WHERE "id" = NEW."message_id";
  ELSE
    UPDATE "messages" SET "reaction_count" = "reaction_count" - 1 WHERE "id" = OLD."message_id";
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "reactions_count" AFTER INSERT OR DELETE ON "reactions" FOR EACH ROW EXECUTE FUNCTION "reactions_count"();
--> statement-breakpoint
-- The contact's message ends their typing: kept by the counter trigger (0001_clock_and_contacts.sql), no statement more per message.
CREATE OR REPLACE FUNCTION "messages_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "contacts" ("phone", "messages") VALUES (NEW."phone", 1)
      ON CONFLICT ("phone") DO UPDATE SET "messages" = "contacts"."messages" + 1,
        "typing_until" = CASE WHEN NEW."direction" = 'inbound' THEN NULL ELSE "contacts"."typing_until" END;
  ELSE
    UPDATE "contacts" SET "messages" = "messages" - 1 WHERE "phone" = OLD."phone";
  END IF;
  RETURN NULL;
END
$$;
