export * from './fake-slack.js';
export * from './payloads.js';
export * from './signing.js';
export type { TokenKind, WebApiArgs, WebApiBody } from './web-api.js';
export {
  type AssistantStatusChange,
  type EphemeralMessage,
  FAKE_SLACK,
  type FakeChannelType,
  type FakeSlackChannel,
  type FakeSlackIdentity,
  type FakeSlackUser,
  type PostedMessage,
  type SuggestedPrompts,
} from './workspace.js';
