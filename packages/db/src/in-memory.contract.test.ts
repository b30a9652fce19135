import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { describeStoreContract } from '../test/contract/index.js';

describeStoreContract('in-memory', async () => {
  const channels = new InMemoryChannelStore();
  return {
    channels,
    memories: new InMemoryMemoryStore(),
    runs: new InMemoryRunStore(),
    takeBacks: channels.takeBacks,
    close: async () => {},
  };
});
