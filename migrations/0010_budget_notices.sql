CREATE TABLE "budget_notices" (
	"notice_key" text NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"reached_at" timestamp with time zone NOT NULL,
	CONSTRAINT "budget_notices_notice_key_period_start_pk" PRIMARY KEY("notice_key","period_start")
);
