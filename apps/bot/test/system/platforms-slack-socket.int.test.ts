/**
 * End to end through Slack in Socket Mode: the real Bolt over a WebSocket to FakeSlack. The suite is
 * `describePlatformEndToEnd`; each platform has its own file so vitest runs them in parallel.
 */
import { describePlatformEndToEnd, slackDriver } from '../platform-end-to-end.js';

describePlatformEndToEnd('Slack, Socket Mode', slackDriver('socket'));
