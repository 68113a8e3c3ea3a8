ALTER TABLE "chats" ADD COLUMN "mode" text;--> statement-breakpoint
ALTER TABLE "chats" ADD COLUMN "mode_before" text;--> statement-breakpoint
ALTER TABLE "chats" ADD COLUMN "human_until" bigint;--> statement-breakpoint
CREATE INDEX "chats_human_until_idx" ON "chats" USING btree ("human_until") WHERE human_until IS NOT NULL;--> statement-breakpoint
CREATE INDEX "messages_draft_idx" ON "messages" USING btree ("timestamp") WHERE status = 'draft';