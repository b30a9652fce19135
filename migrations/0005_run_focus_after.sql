ALTER TABLE "compaction_runs" ADD COLUMN "focus" text;--> statement-breakpoint
ALTER TABLE "compaction_runs" ADD COLUMN "after_job_id" text;