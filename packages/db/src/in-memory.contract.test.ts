import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { describeStoreContract } from '../test/contract/index.js';

describeStoreContract('in-memory', async () => ({
  channels: new InMemoryChannelStore(),
  memories: new InMemoryMemoryStore(),
  runs: new InMemoryRunStore(),
  close: async () => {},
}));
