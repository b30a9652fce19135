/**
 * Rendering a working context to chat messages: system prompt, recalled memories, spans in order,
 * then the raw messages. Span text is rendered here and nowhere else, so the tokens counted for a
 * span are exactly the tokens the model is sent.
 */
import type { Memory } from './memory.js';
import type { ContextView, SummarySpan, TruncatedSpan } from './model.js';
import { chatMessageTokens, messageContent, type Tokenizer } from './tokens.js';

export type ChatMessage =
  | { readonly role: 'system'; readonly content: string }
  | { readonly role: 'user'; readonly content: string; readonly name?: string }
  | {
      readonly role: 'assistant';
      readonly content: string;
      readonly tool_calls?: readonly {
        readonly id: string;
        readonly type: 'function';
        readonly function: { readonly name: string; readonly arguments: string };
      }[];
    }
  | { readonly role: 'tool'; readonly content: string; readonly tool_call_id: string };

export const CONTINUATION_NOTE =
  'The conversation continues below with the messages that follow; treat the above as background and answer the latest message.';

export function renderSummary(fromSeq: number, toSeq: number, text: string): string {
  return `Summary of the earlier conversation (messages #${fromSeq}–#${toSeq}):\n${text}\n\n${CONTINUATION_NOTE}`;
}

/**
 * The marker for a truncated span. It names no seqs, so trimming a span (when a summary covers part
 * of it) leaves its token count unchanged.
 */
export const TRUNCATION_MARKER = `[Earlier messages were set aside to keep this conversation within the model's window; a summary of them is on its way.]\n\n${CONTINUATION_NOTE}`;

/** What rendering needs of a span (a summary not yet spliced has no generation or tokens). */
export type RenderableSpan =
  | Pick<SummarySpan, 'kind' | 'fromSeq' | 'toSeq' | 'text'>
  | Pick<TruncatedSpan, 'kind' | 'fromSeq' | 'toSeq'>;

export function renderSpan(span: RenderableSpan): string {
  switch (span.kind) {
    case 'summary':
      return renderSummary(span.fromSeq, span.toSeq, span.text);
    case 'truncated':
      return TRUNCATION_MARKER;
  }
}

/** Tokens a span costs in the prompt. */
export function spanTokens(tokenizer: Tokenizer, span: RenderableSpan): number {
  return chatMessageTokens(tokenizer, renderSpan(span));
}

export function renderMemories(memories: readonly Memory[]): string {
  const lines = memories.map((m) => `- (${m.type}${m.speaker ? `, ${m.speaker}` : ''}) ${m.text}`);
  return `What you remember from this channel:\n${lines.join('\n')}`;
}

export interface RenderInput {
  readonly systemPrompt: string;
  readonly memories: readonly Memory[];
  readonly context: ContextView;
}

export function renderContext(input: RenderInput): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'system', content: input.systemPrompt }];
  if (input.memories.length > 0) out.push({ role: 'system', content: renderMemories(input.memories) });
  for (const span of input.context.spans) out.push({ role: 'system', content: renderSpan(span) });
  for (const m of input.context.raw) {
    switch (m.role) {
      case 'user':
        out.push({ role: 'user', content: messageContent(m) });
        break;
      case 'assistant':
        out.push(
          m.toolCalls && m.toolCalls.length > 0
            ? {
                role: 'assistant',
                content: m.text,
                tool_calls: m.toolCalls.map((c) => ({
                  id: c.id,
                  type: 'function' as const,
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : { role: 'assistant', content: m.text },
        );
        break;
      case 'tool':
        out.push({ role: 'tool', content: m.text, tool_call_id: m.toolCallId ?? '' });
        break;
    }
  }
  return out;
}
