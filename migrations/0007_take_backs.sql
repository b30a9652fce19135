CREATE TABLE "take_backs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "take_backs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"channel_key" text NOT NULL,
	"mark" integer NOT NULL,
	"kind" text NOT NULL,
	"ranges" jsonb NOT NULL,
	"from_seq" integer NOT NULL,
	"to_seq" integer NOT NULL,
	"platform_message_ids" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"claimed_until" timestamp with time zone,
	"memories" integer,
	"checkpoints" integer,
	"summaries" integer,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "take_backs_range_check" CHECK ("take_backs"."from_seq" <= "take_backs"."to_seq")
);
--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "take_back_mark" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "recalled_memories" jsonb;--> statement-breakpoint
CREATE UNIQUE INDEX "take_backs_channel_mark_idx" ON "take_backs" USING btree ("channel_key","mark");--> statement-breakpoint
CREATE INDEX "take_backs_pending_idx" ON "take_backs" USING btree ("created_at") WHERE "take_backs"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "messages_recalled_idx" ON "messages" USING gin ("recalled_memories") WHERE "messages"."recalled_memories" is not null;