ALTER TABLE "channels" ADD COLUMN "stubbed_results" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "stubbed_tokens_saved" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "stubbed" boolean DEFAULT false NOT NULL;