ALTER TABLE "llm_usage" ADD COLUMN "replies" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "llm_usage" ADD COLUMN "cold_replies" integer DEFAULT 0 NOT NULL;