/**
 * For each alert of `deploy/prometheus/alerts.yml`, trouble in which it fires, for promtool's
 * `alert_rule_test`: series (one sample a minute, promtool's notation), the minute the alert starts
 * firing (its expression true for exactly its `for:` by then), and the labels and annotations the
 * page shows then. Written out, not read from alerts.yml, so a changed `for:`, label or template
 * fails the test. A description with no template is compared with alerts.yml's text instead.
 */
export interface AlertCase {
  readonly alert: string;
  readonly series: Readonly<Record<string, string>>;
  /** The minute it starts firing; a minute earlier it is still pending (quiet). */
  readonly firesAt: number;
  /** Every label of the alert but `alertname`: the rule's and those of the series it fired on. */
  readonly labels: Readonly<Record<string, string>>;
  readonly summary: string;
  /** The description as rendered, for one that is a template. */
  readonly description?: string;
}

export const ALERT_CASES: readonly AlertCase[] = [
  {
    alert: 'EbbEmergencyTruncations',
    // One a minute: over 3 in the hour from minute 4, then `for: 10m`.
    series: { ebb_emergency_truncations_total: '0+1x120' },
    firesAt: 14,
    labels: { severity: 'warning' },
    summary: 'Ebb truncated context in an emergency 14 times in the last hour',
  },
  {
    alert: 'EbbCompactionPassesFailing',
    // Half the tries fail from the second sample (minute 1), then `for: 15m`.
    series: {
      'ebb_compaction_passes_total{outcome="completed",tier="background"}': '0+2x60',
      'ebb_compaction_passes_total{outcome="failed",tier="background"}': '0+2x60',
    },
    firesAt: 16,
    labels: { severity: 'warning' },
    summary: '50% of compaction pass tries fail',
  },
  {
    alert: 'EbbCompactionStuck',
    // A stuck run settled every minute: over 5 in the hour from minute 6, then `for: 5m`.
    series: { 'ebb_compaction_reconciled_total{action="requeued"}': '0+1x120' },
    firesAt: 11,
    labels: { severity: 'warning' },
    summary: 'The reconciler settled 11 stuck compaction runs in the last hour',
  },
  {
    alert: 'EbbCircuitBreakerOpen',
    // A skip a minute from minute 11, then `for: 5m`: six skips by then.
    series: { 'ebb_compaction_breaker_skips_total{tier="background"}': '0x10 1+1x20' },
    firesAt: 16,
    labels: { severity: 'warning' },
    summary: "A channel's compaction circuit breaker is open",
    description:
      "Passes were skipped because a channel's last passes all failed (LLM fallbacks included), 6 in the " +
      'last 15 minutes (ebb_compaction_breaker_skips_total). Until the pause ends the channel is not ' +
      "compacted and may be truncated in an emergency. The worker's `compaction.skipped` lines with " +
      'reason `circuit_open` name the channel; `ebb status <channel>` shows its failed passes.',
  },
  {
    alert: 'EbbFallbackShareHigh',
    // Half the completed passes on the fallback from minute 1, then `for: 15m`.
    series: {
      ebb_compaction_fallbacks_total: '0+1x60',
      'ebb_compaction_passes_total{outcome="completed",tier="background"}': '0+2x60',
    },
    firesAt: 16,
    labels: { severity: 'warning' },
    summary: '50% of compaction passes used the extractive fallback',
  },
  {
    alert: 'EbbQueueJobsWaiting',
    // A job waiting five minutes from the start, then `for: 5m`.
    series: { 'ebb_queue_oldest_job_age_seconds{queue="compaction"}': '300x20' },
    firesAt: 5,
    labels: { queue: 'compaction', severity: 'warning' },
    summary: "Ebb's compaction queue has had a job waiting for 5m 0s",
  },
  {
    alert: 'EbbQueueStalled',
    // A job waiting fifteen minutes from the start, then `for: 5m`; this one pages.
    series: { 'ebb_queue_oldest_job_age_seconds{queue="compaction"}': '900x20' },
    firesAt: 5,
    labels: { queue: 'compaction', severity: 'critical' },
    summary: "Ebb's compaction queue is stalled: oldest job waiting 15m 0s",
  },
  {
    alert: 'EbbQueueStatsUnreadable',
    // Every scrape fails to read the queue from minute 1, then `for: 10m`.
    series: { ebb_queue_stats_errors_total: '0+1x30' },
    firesAt: 11,
    labels: { severity: 'warning' },
    summary: "Ebb cannot read its compaction queue's stats",
  },
  {
    alert: 'EbbSpendLimitReached',
    // A limit reached a minute from minute 1, then `for: 1m`.
    series: { 'ebb_budget_reached_total{scope="channel",period="day",over="notice"}': '0+1x60' },
    firesAt: 2,
    labels: { severity: 'warning', scope: 'channel', period: 'day' },
    summary: 'Ebb channels reached a channel spend limit (day) 2 times in the last hour',
  },
];
