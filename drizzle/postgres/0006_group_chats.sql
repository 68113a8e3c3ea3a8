CREATE TABLE "chat_mutes" (
	"chat_id" text NOT NULL,
	"phone" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "chat_mutes_chat_id_phone_pk" PRIMARY KEY("chat_id","phone")
);
--> statement-breakpoint
CREATE TABLE "chats" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"name" text,
	"participants" text[] NOT NULL,
	"network" text,
	"network_id" text,
	"created_at" bigint NOT NULL,
	"last_message_at" bigint,
	"messages" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "chat_id" text;--> statement-breakpoint
ALTER TABLE "chat_mutes" ADD CONSTRAINT "chat_mutes_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "public"."chats"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "chats_network_id_uq" ON "chats" USING btree ("network","network_id");--> statement-breakpoint
CREATE INDEX "chats_last_message_idx" ON "chats" USING btree ("last_message_at");--> statement-breakpoint
CREATE INDEX "messages_chat_timestamp_idx" ON "messages" USING btree ("chat_id","timestamp","id") WHERE chat_id IS NOT NULL;--> statement-breakpoint
-- Every message stored before groups is in its contact's direct chat (src/vocabulary/chats.ts directChatId).
INSERT INTO "chats" ("id", "kind", "participants", "created_at", "last_message_at", "messages")
  SELECT 'dm_' || substr("phone", 2), 'direct', ARRAY["phone"], min("timestamp"), max("timestamp"), count(*) FROM "messages" GROUP BY "phone";
--> statement-breakpoint
-- A contact's count (its history's total) is of its direct chat only: a group message is not in it.
DROP TRIGGER "messages_count_insert" ON "messages";
--> statement-breakpoint
CREATE TRIGGER "messages_count_insert" AFTER INSERT ON "messages" FOR EACH ROW WHEN (NEW."chat_id" IS NULL) EXECUTE FUNCTION "messages_count"();
--> statement-breakpoint
DROP TRIGGER "messages_count_delete" ON "messages";
--> statement-breakpoint
CREATE TRIGGER "messages_count_delete" AFTER DELETE ON "messages" FOR EACH ROW WHEN (OLD."chat_id" IS NULL) EXECUTE FUNCTION "messages_count"();
--> statement-breakpoint
-- A direct chat is made by its first message; every message counts in its chat and moves its last_message_at.
CREATE FUNCTION "messages_chat"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE "chats" SET "messages" = "messages" - 1 WHERE "id" = coalesce(OLD."chat_id", 'dm_' || substr(OLD."phone", 2));
  ELSIF NEW."chat_id" IS NULL THEN
    INSERT INTO "chats" ("id", "kind", "participants", "created_at", "last_message_at", "messages")
      VALUES ('dm_' || substr(NEW."phone", 2), 'direct', ARRAY[NEW."phone"], NEW."timestamp", NEW."timestamp", 1)
      ON CONFLICT ("id") DO UPDATE SET "messages" = "chats"."messages" + 1, "last_message_at" = greatest("chats"."last_message_at", excluded."last_message_at");
  ELSE
    UPDATE "chats" SET "messages" = "messages" + 1, "last_message_at" = greatest("last_message_at", NEW."timestamp") WHERE "id" = NEW."chat_id";
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "messages_chat" AFTER INSERT OR DELETE ON "messages" FOR EACH ROW EXECUTE FUNCTION "messages_chat"();
