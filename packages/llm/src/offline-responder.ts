/**
 * What answers when no model is configured (no OPENAI_API_KEY and no `[llm] base_url`): a clearly
 * labelled, deterministic reply, so a fresh clone shows the whole turn and compaction cycle without
 * any account. It never pretends to be a model.
 */
import { type ChatMessage, type ChatModel, type ChatReply, MEMORIES_TAG, SUMMARY_TAG } from '@ebb/core';

export const OFFLINE_LABEL = 'offline responder';

export class OfflineResponder implements ChatModel {
  readonly label = OFFLINE_LABEL;

  async reply(messages: readonly ChatMessage[]): Promise<ChatReply> {
    // Reference blocks are user messages that open with their tag (a chat message opens with its author).
    const isBlock = (m: ChatMessage, tag: string) => m.role === 'user' && m.content.startsWith(`<${tag} `);
    const last = [...messages]
      .reverse()
      .find((m) => m.role === 'user' && !isBlock(m, SUMMARY_TAG) && !isBlock(m, MEMORIES_TAG));
    const said = last?.content.replace(/\s+/g, ' ').trim() ?? '';
    const quoted = said.length > 120 ? `${said.slice(0, 119)}…` : said;
    const summaries = messages.filter((m) => isBlock(m, SUMMARY_TAG)).length;
    const remembered = messages.find((m) => isBlock(m, MEMORIES_TAG));
    return {
      text: [
        `[offline mode: no model is configured, so this is not an AI answer] I got: "${quoted}".`,
        `I see ${messages.length} messages in my context${summaries > 0 ? `, ${summaries} of them summaries of earlier conversation` : ''}${remembered ? ', and some memories of this channel' : ''}.`,
        'Set OPENAI_API_KEY (or [llm] base_url) for real answers.',
      ].join(' '),
    };
  }
}
