CREATE INDEX "generations_created_idx" ON "generations" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "status_reports_received_idx" ON "status_reports" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_settled_idx" ON "webhook_deliveries" USING btree ("updated_at") WHERE state <> 'pending';