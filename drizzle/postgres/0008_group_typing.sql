ALTER TABLE "chats" ADD COLUMN "our_typing_until" bigint;--> statement-breakpoint
CREATE INDEX "chats_our_typing_idx" ON "chats" USING btree ("our_typing_until") WHERE our_typing_until IS NOT NULL;