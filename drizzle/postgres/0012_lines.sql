CREATE TABLE "imessage_availability" (
	"phone" text PRIMARY KEY NOT NULL,
	"available" boolean NOT NULL,
	"checked_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "lines" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"network" text NOT NULL,
	"address" text,
	"enabled" boolean NOT NULL,
	"is_default" boolean NOT NULL,
	"fallback" text,
	"settings" text NOT NULL,
	"credentials" text,
	"managed" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "lines_name_unique" UNIQUE("name")
);
--> statement-breakpoint
ALTER TABLE "chats" ADD COLUMN "line_id" text DEFAULT 'ln_default' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "line_id" text DEFAULT 'ln_default' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "lines_default_uq" ON "lines" USING btree ("is_default") WHERE is_default;--> statement-breakpoint
-- A direct chat's line is its last message's: where the next send to the contact sticks (src/lines/route.ts).
CREATE OR REPLACE FUNCTION "messages_chat"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE "chats" SET "messages" = "messages" - 1 WHERE "id" = coalesce(OLD."chat_id", 'dm_' || substr(OLD."phone", 2));
  ELSIF NEW."chat_id" IS NULL THEN
    INSERT INTO "chats" ("id", "kind", "participants", "created_at", "last_message_at", "messages", "line_id")
      VALUES ('dm_' || substr(NEW."phone", 2), 'direct', ARRAY[NEW."phone"], NEW."timestamp", NEW."timestamp", 1, NEW."line_id")
      ON CONFLICT ("id") DO UPDATE SET "messages" = "chats"."messages" + 1, "last_message_at" = greatest("chats"."last_message_at", excluded."last_message_at"), "line_id" = excluded."line_id";
  ELSE
    UPDATE "chats" SET "messages" = "messages" + 1, "last_message_at" = greatest("last_message_at", NEW."timestamp") WHERE "id" = NEW."chat_id";
  END IF;
  RETURN NULL;
END
$$;
