import { InMemoryArchiveSearch, InMemoryChannelStore } from '@ebb/core/testing';
import { describeArchiveSearchContract } from '../test/contract/archive-search.js';

describeArchiveSearchContract('in-memory', async () => {
  const channels = new InMemoryChannelStore();
  return { channels, archive: new InMemoryArchiveSearch(channels), close: async () => {} };
});
