/**
 * The store contract: one suite per port (the five channel ports, the memory store, the run store and
 * its checkpoint eraser), run against every implementation (in memory, Postgres, PGlite), so the fake
 * the unit tests use behaves exactly like the real thing. Each suite is typed as the port it tests, plus the few methods of
 * others it sets state up or reads it back through: a case that reaches further does not compile.
 * Each test works in a channel, scope and job ids of its own, so implementations may share one
 * database across tests.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe } from 'vitest';
import { archiveReaderContract } from './archive-reader.js';
import { channelDirectoryContract } from './channel-directory.js';
import { checkpointEraserContract } from './checkpoint-eraser.js';
import { contextWriterContract } from './context-writer.js';
import { forgettingContract } from './forgetting.js';
import { memoryStoreContract } from './memory-store.js';
import { runStoreContract } from './run-store.js';
import type { ContractStores } from './support.js';
import { takeBackLogContract } from './take-back-log.js';
import { turnLogContract } from './turn-log.js';

export type { ContractStores } from './support.js';

export function describeStoreContract(name: string, makeStores: () => Promise<ContractStores>): void {
  describe(`${name}: store contract`, () => {
    let stores: ContractStores;
    let key: string;
    beforeEach(async () => {
      stores = await makeStores();
      key = `web:${randomUUID()}`;
    });
    afterEach(async () => {
      await stores.close();
    });
    turnLogContract(() => ({ store: stores.channels, key }));
    archiveReaderContract(() => ({ store: stores.channels, key }));
    contextWriterContract(() => ({ store: stores.channels, key }));
    forgettingContract(() => ({ store: stores.channels, key }));
    channelDirectoryContract(() => ({ store: stores.channels, key }));
    memoryStoreContract(() => ({ store: stores.memories, key }));
    runStoreContract(() => ({ store: stores.runs, key }));
    checkpointEraserContract(() => ({ store: stores.runs, key }));
    takeBackLogContract(() => ({ store: { channels: stores.channels, log: stores.takeBacks }, key }));
  });
}
