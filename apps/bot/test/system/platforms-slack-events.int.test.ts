/**
 * End to end through Slack's Events API: FakeSlack posts signed events to the bot's HTTP receiver.
 * The suite is `describePlatformEndToEnd`; each platform has its own file so vitest runs them in
 * parallel.
 */
import { describePlatformEndToEnd, slackDriver } from '../platform-end-to-end.js';

describePlatformEndToEnd('Slack, Events API', slackDriver('http'));
