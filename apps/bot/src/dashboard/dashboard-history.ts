/**
 * A page of a channel's history as the dashboard shows it (pure): the archived messages of a seq
 * range, each placed where it sits in the working context (raw, or covered by a summary span or a
 * truncation marker), with microcompaction's stubs beside the results they stand for, and the
 * active spans that cover anything up to the page's end, so the page can draw the prefix above.
 */
import type { Span, StoredMessage } from '@ebb/core';
import { DASHBOARD_LIMITS, type DashboardHistory, type DashboardMessage, type HistoryPage } from '@ebb/web';

/** The seq range a page reads, for a channel whose newest message is `headSeq`. */
export function historyRange(page: HistoryPage, headSeq: number): { fromSeq: number; toSeq: number } {
  switch (page.kind) {
    case 'latest':
      return { fromSeq: Math.max(1, headSeq - page.limit + 1), toSeq: headSeq };
    case 'before': {
      const toSeq = Math.min(headSeq, page.seq - 1);
      return { fromSeq: Math.max(1, toSeq - page.limit + 1), toSeq };
    }
    case 'after':
      return { fromSeq: page.seq + 1, toSeq: Math.min(headSeq, page.seq + page.limit) };
  }
}

export function describeHistory(input: {
  readonly key: string;
  readonly headSeq: number;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly spans: readonly Span[];
  readonly messages: readonly StoredMessage[];
  readonly textChars?: number;
}): DashboardHistory {
  const { spans, toSeq } = input;
  const max = input.textChars ?? DASHBOARD_LIMITS.textChars;
  const prefixEnd = spans.at(-1)?.toSeq ?? 0;
  // Spans tile 1..prefixEnd in order: one pass over both.
  let s = 0;
  const messages = input.messages.map((m): DashboardMessage => {
    while (s < spans.length && (spans[s]?.toSeq ?? 0) < m.seq) s++;
    const span = m.seq <= prefixEnd ? spans[s] : undefined;
    return {
      seq: m.seq,
      role: m.role,
      author: m.author,
      text: m.text.length > max ? m.text.slice(0, max) : m.text,
      chars: m.text.length,
      ts: m.ts ?? null,
      place: span === undefined ? 'context' : span.kind === 'summary' ? 'summarized' : 'truncated',
      ...(span === undefined ? {} : { spanFrom: span.fromSeq }),
      ...(m.stub === undefined ? {} : { stub: m.stub }),
      ...(m.toolCalls === undefined || m.toolCalls.length === 0
        ? {}
        : { toolCalls: m.toolCalls.map((c) => c.name) }),
    };
  });
  return {
    key: input.key,
    headSeq: input.headSeq,
    prefixEnd,
    fromSeq: input.fromSeq,
    toSeq,
    messages,
    spans: spans
      .filter((span) => span.fromSeq <= toSeq)
      .map((span) =>
        span.kind === 'summary'
          ? {
              kind: 'summary',
              fromSeq: span.fromSeq,
              toSeq: span.toSeq,
              tokens: span.tokens,
              text: span.text,
              jobId: span.jobId,
            }
          : { kind: 'truncated', fromSeq: span.fromSeq, toSeq: span.toSeq, tokens: span.tokens },
      ),
  };
}
