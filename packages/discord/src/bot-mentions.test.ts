import { describe, expect, it } from 'vitest';
import { hasBotMention, rewriteBotMentions } from './bot-mentions.js';

describe('bot mentions', () => {
  it('rewrites both mention forms of the bot only', () => {
    expect(rewriteBotMentions('<@42> hi <@!42>, not <@420> or <@7>', '42', 'Ebb $1')).toBe(
      '@Ebb $1 hi @Ebb $1, not <@420> or <@7>',
    );
  });

  it('detects the markup', () => {
    expect(hasBotMention('ping <@!42>', '42')).toBe(true);
    expect(hasBotMention('ping <@420>', '42')).toBe(false);
  });
});
