/** Discord writes a mention of the bot as `<@id>` (or the legacy nickname form `<@!id>`). */

/** `text` with every mention of `botId` written as `@<botName>`. */
export function rewriteBotMentions(text: string, botId: string, botName: string): string {
  return text.replace(mentionPattern(botId), () => `@${botName}`);
}

/** The text mentions `botId` in Discord markup. */
export function hasBotMention(text: string, botId: string): boolean {
  return mentionPattern(botId).test(text);
}

function mentionPattern(botId: string): RegExp {
  if (!/^\d+$/.test(botId)) throw new RangeError(`not a Discord user id: ${botId}`);
  return new RegExp(`<@!?${botId}>`, 'g');
}
