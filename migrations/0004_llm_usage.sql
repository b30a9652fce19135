CREATE TABLE "llm_usage" (
	"channel_key" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"purpose" text NOT NULL,
	"model" text NOT NULL,
	"calls" integer DEFAULT 0 NOT NULL,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"cached_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "llm_usage_channel_key_hour_purpose_model_pk" PRIMARY KEY("channel_key","hour","purpose","model")
);
--> statement-breakpoint
CREATE INDEX "llm_usage_hour_idx" ON "llm_usage" USING btree ("hour");