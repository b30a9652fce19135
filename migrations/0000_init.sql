CREATE TABLE "channels" (
	"key" text PRIMARY KEY NOT NULL,
	"platform" text NOT NULL,
	"generation" integer DEFAULT 0 NOT NULL,
	"head_seq" integer DEFAULT 0 NOT NULL,
	"prefix_end" integer DEFAULT 0 NOT NULL,
	"span_tokens" integer DEFAULT 0 NOT NULL,
	"raw_tokens" integer DEFAULT 0 NOT NULL,
	"calibration_factor" double precision DEFAULT 1 NOT NULL,
	"calibration_samples" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "compaction_runs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "compaction_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"job_id" text NOT NULL,
	"channel_key" text NOT NULL,
	"tier" text NOT NULL,
	"status" text NOT NULL,
	"usage" double precision NOT NULL,
	"from_seq" integer NOT NULL,
	"to_seq" integer NOT NULL,
	"generation" integer NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"tokens_before" integer,
	"tokens_after" integer,
	"summary_tokens" integer,
	"memories_added" integer,
	"model" text,
	"fallback" boolean,
	"input_tokens" integer,
	"output_tokens" integer,
	"duration_ms" integer,
	"error" text,
	"output" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	CONSTRAINT "compaction_runs_job_id_key" UNIQUE("job_id")
);
--> statement-breakpoint
CREATE TABLE "context_spans" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "context_spans_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"channel_key" text NOT NULL,
	"from_seq" integer NOT NULL,
	"to_seq" integer NOT NULL,
	"kind" text NOT NULL,
	"text" text,
	"tokens" integer NOT NULL,
	"created_generation" integer NOT NULL,
	"job_id" text,
	"active" boolean DEFAULT true NOT NULL,
	"retired_generation" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "context_spans_kind_check" CHECK ("context_spans"."kind" in ('summary', 'truncated')),
	CONSTRAINT "context_spans_range_check" CHECK ("context_spans"."from_seq" <= "context_spans"."to_seq")
);
--> statement-breakpoint
CREATE TABLE "memories" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "memories_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"scope" text NOT NULL,
	"channel_key" text NOT NULL,
	"type" text NOT NULL,
	"text" text NOT NULL,
	"importance" real NOT NULL,
	"speaker" text,
	"from_seq" integer NOT NULL,
	"to_seq" integer NOT NULL,
	"fingerprint" text NOT NULL,
	"search" "tsvector" GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"channel_key" text NOT NULL,
	"seq" integer NOT NULL,
	"role" text NOT NULL,
	"author" text NOT NULL,
	"content" text NOT NULL,
	"context_content" text,
	"tokens" integer NOT NULL,
	"context_tokens" integer NOT NULL,
	"omitted_tokens" integer,
	"platform_message_id" text,
	"tool_calls" jsonb,
	"tool_call_id" text,
	"ts" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "messages_channel_key_seq_pk" PRIMARY KEY("channel_key","seq"),
	CONSTRAINT "messages_role_check" CHECK ("messages"."role" in ('user', 'assistant', 'tool'))
);
--> statement-breakpoint
CREATE INDEX "compaction_runs_channel_created_idx" ON "compaction_runs" USING btree ("channel_key","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "context_spans_active_idx" ON "context_spans" USING btree ("channel_key","from_seq") WHERE active;--> statement-breakpoint
CREATE UNIQUE INDEX "memories_scope_fingerprint_idx" ON "memories" USING btree ("scope","fingerprint");--> statement-breakpoint
CREATE INDEX "memories_search_idx" ON "memories" USING gin ("search");--> statement-breakpoint
CREATE INDEX "memories_channel_key_idx" ON "memories" USING btree ("channel_key");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_platform_message_id_idx" ON "messages" USING btree ("channel_key","platform_message_id");