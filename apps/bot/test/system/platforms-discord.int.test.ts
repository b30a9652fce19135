/**
 * End to end through Discord: the real discord.js over FakeDiscord's gateway and REST API. The suite
 * is `describePlatformEndToEnd`; each platform has its own file so vitest runs them in parallel.
 * discord.js sends at most 50 REST requests a second (typing, then the reply: 25 turns a second), so
 * this file spends half its time waiting (about 25 s for 600 messages, 85 s for 2,000).
 */
import { describePlatformEndToEnd, discordDriver } from '../platform-end-to-end.js';

describePlatformEndToEnd('Discord', discordDriver);
