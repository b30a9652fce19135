/**
 * End to end through Discord: the real discord.js over FakeDiscord's gateway and REST API. The suite
 * is `describePlatformEndToEnd`; each platform has its own file so vitest runs them in parallel.
 * discord.js sends at most 50 REST requests a second (typing, then the reply: 25 turns a second), so
 * this file takes about 85 s and spends half of it waiting.
 */
import { describePlatformEndToEnd, discordDriver } from '../platform-end-to-end.js';

describePlatformEndToEnd('Discord', discordDriver);
