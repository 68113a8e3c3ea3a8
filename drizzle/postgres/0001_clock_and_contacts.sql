-- The message clock's one row, starting after every stored timestamp.
INSERT INTO "message_clock" ("id", "t") SELECT true, coalesce(max("timestamp"), 0) FROM "messages";
--> statement-breakpoint
INSERT INTO "contacts" ("phone", "messages") SELECT "phone", count(*) FROM "messages" GROUP BY "phone";
--> statement-breakpoint
-- Each contact's message count follows every insert and delete on messages.
CREATE FUNCTION "messages_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "contacts" ("phone", "messages") VALUES (NEW."phone", 1)
      ON CONFLICT ("phone") DO UPDATE SET "messages" = "contacts"."messages" + 1;
  ELSE
    UPDATE "contacts" SET "messages" = "messages" - 1 WHERE "phone" = OLD."phone";
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "messages_count_insert" AFTER INSERT ON "messages" FOR EACH ROW EXECUTE FUNCTION "messages_count"();
--> statement-breakpoint
CREATE TRIGGER "messages_count_delete" AFTER DELETE ON "messages" FOR EACH ROW EXECUTE FUNCTION "messages_count"();
